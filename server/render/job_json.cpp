// Rank summaries and jobs as JSON.
#include "server/render/job_json.h"

#include <algorithm>
#include <array>
#include <limits>

namespace sightline::server {
namespace {

using attribution::StepKind;
using nlohmann::json;

constexpr size_t kMaxSteps = 1'000'000;
constexpr size_t kMaxItems = 50'000'000;  // collectives, lines, names of one summary

bool count(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
  return v.is_number_integer() && v.get<int64_t>() >= 0;
}
bool integer(const json& v) { return v.is_number_integer() && (!v.is_number_unsigned() || count(v)); }

const char* kindName(StepKind k) { return attribution::stepKindName(k); }

std::optional<StepKind> kindOf(const std::string& s) {
  for (StepKind k : {StepKind::Steady, StepKind::Warmup, StepKind::Outlier, StepKind::Lost})
    if (s == kindName(k)) return k;
  return std::nullopt;
}

// A flat array of integers of exactly `n` values (or at least, with `at_least`).
bool ints(const json& v, size_t n) {
  if (!v.is_array() || v.size() != n) return false;
  for (const auto& x : v)
    if (!integer(x)) return false;
  return true;
}

std::string text(const json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

// Bounds that keep every sum of a job within int64 (job_view adds a kind of time over a rank's
// steps, then over its ranks): each kind of time adds up to at most kMaxSummaryNs in one summary
// (27 hours, more than any capture holds), timestamps lie within ±kMaxTimestampNs (so that an end
// minus a start fits), and a job has at most kMaxJobRanks summaries: 65536 × 10^14 < 2^63.
constexpr int64_t kMaxSummaryNs = 100'000'000'000'000;
constexpr int64_t kMaxTimestampNs = 4'000'000'000'000'000'000;

bool timestamp(const json& v) {
  return integer(v) && v.get<int64_t>() >= -kMaxTimestampNs && v.get<int64_t>() <= kMaxTimestampNs;
}

// A sum of one kind of time over a summary, false once it passes kMaxSummaryNs.
bool addTo(int64_t& sum, int64_t ns) {
  if (ns < 0 || ns > kMaxSummaryNs) return false;
  sum += ns;  // both within kMaxSummaryNs: no overflow
  return sum <= kMaxSummaryNs;
}

const char* const kPastTheBound = "times past 10^14 ns (27 hours) in one summary: not a capture's";

// steps: [start, end, kind, gpu, busy, compute, copy, comm, capture, wait × kWaitCount]
bool readSteps(const json& o, join::RankSummary& s, std::string& error) {
  constexpr size_t kStepFields = 9 + attribution::kWaitCount;
  if (!o.contains("steps")) return true;
  if (!o["steps"].is_array() || o["steps"].size() > kMaxSteps) return error = "`steps` is not a list", false;
  std::array<int64_t, kStepFields> sums{};  // [0]: the walls; [3..]: each kind
  for (const auto& st : o["steps"]) {
    if (!st.is_array() || st.size() != kStepFields || !st[2].is_string())
      return error = "a step is not [start, end, kind, ...]", false;
    join::SummaryStep step;
    auto kind = kindOf(st[2].get<std::string>());
    if (!kind) return error = "a step's kind is unknown", false;
    step.kind = *kind;
    if (!timestamp(st[0]) || !timestamp(st[1])) return error = "a step's start or end is out of range", false;
    for (size_t i = 3; i < kStepFields; ++i)
      if (!count(st[i])) return error = "a step holds a value that is not a count", false;
    step.start_ns = st[0].get<int64_t>(), step.end_ns = st[1].get<int64_t>();
    if (step.end_ns < step.start_ns) return error = "a step ends before it starts", false;
    if (!addTo(sums[0], step.wallNs())) return error = kPastTheBound, false;
    for (size_t i = 3; i < kStepFields; ++i)
      if (!addTo(sums[i], st[i].get<int64_t>())) return error = kPastTheBound, false;
    step.gpu_ns = st[3].get<int64_t>(), step.busy_ns = st[4].get<int64_t>(), step.compute_ns = st[5].get<int64_t>();
    step.copy_ns = st[6].get<int64_t>(), step.comm_ns = st[7].get<int64_t>(), step.capture_ns = st[8].get<int64_t>();
    for (size_t w = 0; w < attribution::kWaitCount; ++w) step.wait_ns[w] = st[9 + w].get<int64_t>();
    s.steps.push_back(step);
  }
  return true;
}

bool readLines(const json& o, join::RankSummary& s, std::string& error) {
  if (!o.contains("lines")) return true;
  if (!o["lines"].is_array() || o["lines"].size() > kMaxItems) return error = "`lines` is not a list", false;
  std::array<int64_t, 4> sums{};  // ns, backward_ns, comm_ns, step_ns
  for (const auto& l : o["lines"]) {
    if (!l.is_object() || !l.contains("path") || !l["path"].is_string() || !l.contains("line") || !count(l["line"]) ||
        l["line"].get<int64_t>() < 1 || l["line"].get<int64_t>() > 100'000'000)
      return error = "a line without a path and line number", false;
    join::SummaryLine line;
    line.path = l["path"].get<std::string>(), line.line = l["line"].get<int32_t>();
    line.text = text(l, "text").substr(0, 400);
    size_t k = 0;
    for (auto [key, into] :
         {std::pair{"ns", &line.ns}, {"backward_ns", &line.backward_ns}, {"comm_ns", &line.comm_ns}}) {
      size_t sum = k++;
      if (!l.contains(key)) continue;
      if (!count(l[key])) return error = std::string("a line's `") + key + "` is not a count", false;
      *into = l[key].get<int64_t>();
      if (!addTo(sums[sum], *into)) return error = kPastTheBound, false;
    }
    for (auto [key, into] : {std::pair{"syncs", &line.syncs}, std::pair{"sync_ns", &line.sync_ns}}) {
      if (!l.contains(key)) continue;
      if (!count(l[key])) return error = std::string("a line's `") + key + "` is not a count", false;
      *into = l[key].get<int64_t>();
    }
    if (l.contains("kernels")) {
      const json& k = l["kernels"];
      if (!k.is_array() || k.size() > join::kMaxLineKernels)
        return error = "a line's `kernels` is not a short list", false;
      for (const auto& name : k) {
        if (!name.is_string()) return error = "a line's `kernels` holds something not text", false;
        line.kernels.push_back(name.get<std::string>().substr(0, join::kMaxKernelName));
      }
    }
    if (l.contains("step_ns")) {
      if (!ints(l["step_ns"], s.steps.size())) return error = "a line's `step_ns` is not one count per step", false;
      for (const auto& v : l["step_ns"]) {
        if (!count(v)) return error = "a line's `step_ns` is not one count per step", false;
        if (!addTo(sums[3], v.get<int64_t>())) return error = kPastTheBound, false;
        line.step_ns.push_back(v.get<int64_t>());
      }
    }
    s.lines.push_back(std::move(line));
  }
  return true;
}

// collectives: [step, nth, name, start, end, exposed, line, pass, module]
bool readCollectives(const json& o, join::RankSummary& s, std::string& error) {
  if (!o.contains("collectives")) return true;
  if (!o["collectives"].is_array() || o["collectives"].size() > kMaxItems)
    return error = "`collectives` is not a list", false;
  int64_t durations = 0, exposed = 0;
  for (const auto& c : o["collectives"]) {
    if (!ints(c, 9)) return error = "a collective is not 9 numbers", false;
    join::SummaryCollective col;
    int64_t step = c[0].get<int64_t>(), nth = c[1].get<int64_t>(), name = c[2].get<int64_t>();
    int64_t line = c[6].get<int64_t>(), module = c[8].get<int64_t>();
    if (step < -1 || step >= static_cast<int64_t>(s.steps.size()) || nth < 0 || nth > UINT32_MAX || name < 0 ||
        name >= static_cast<int64_t>(s.names.size()) || line < -1 || line >= static_cast<int64_t>(s.lines.size()) ||
        module < -1 || module >= static_cast<int64_t>(s.names.size()))
      return error = "a collective's step, name, line or module is out of range", false;
    if (!timestamp(c[3]) || !timestamp(c[4])) return error = "a collective's start or end is out of range", false;
    col.step = static_cast<int32_t>(step), col.nth = static_cast<uint32_t>(nth), col.name = static_cast<uint32_t>(name);
    col.start_ns = c[3].get<int64_t>(), col.end_ns = c[4].get<int64_t>(), col.exposed_ns = c[5].get<int64_t>();
    if (col.end_ns < col.start_ns || col.exposed_ns < 0 || col.exposed_ns > col.end_ns - col.start_ns)
      return error = "a collective's times are not a span", false;
    if (!addTo(durations, col.end_ns - col.start_ns) || !addTo(exposed, col.exposed_ns))
      return error = kPastTheBound, false;
    int64_t pass = c[7].get<int64_t>();  // 1 backward, 0 forward, -1 other, -2 unknown
    col.pass = pass > 0     ? join::CollectivePass::Backward
               : pass == 0  ? join::CollectivePass::Forward
               : pass == -1 ? join::CollectivePass::Other
                            : join::CollectivePass::Unknown;
    col.line = static_cast<int32_t>(line), col.module = static_cast<int32_t>(module);
    s.collectives.push_back(col);
  }
  return true;
}

std::optional<join::RankSummary> summaryFrom(const json& o, std::string& error) {
  join::RankSummary s;
  if (!o.is_object()) return error = "a rank summary is not an object", std::nullopt;
  auto num = [&](const char* key, auto& into, bool need_count) {
    if (!o.contains(key)) return true;
    const json& v = o[key];
    if (v.is_null()) return true;
    if (need_count ? !count(v) : !integer(v)) return error = std::string("`") + key + "` is not a count", false;
    using T = std::decay_t<decltype(into)>;
    int64_t x = v.get<int64_t>();
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        x > static_cast<int64_t>(std::numeric_limits<T>::max()) || (need_count && x > kMaxSummaryNs))
      return error = std::string("`") + key + "` is out of range", false;
    into = static_cast<T>(x);
    return true;
  };
  if (!num("rank", s.rank, false) || !num("world_size", s.world_size, false) || !num("pid", s.pid, true) ||
      !num("gpu_ns", s.gpu_ns, true) || !num("busy_ns", s.busy_ns, true) || !num("comm_ns", s.comm_ns, true) ||
      !num("comm_exposed_ns", s.comm_exposed_ns, true) || !num("launches", s.launches, true) ||
      !num("lost_launches", s.lost_launches, true))
    return std::nullopt;
  s.rank = std::max(s.rank, -1);
  s.rank_source = text(o, "rank_source"), s.host = text(o, "host"), s.gpu_uuid = text(o, "gpu_uuid");
  s.gpu_name = text(o, "gpu"), s.process = text(o, "process"), s.report = text(o, "report");
  s.format = text(o, "format"), s.steps_source = text(o, "steps_source");
  if (o.contains("devices")) {
    if (!o["devices"].is_array() || o["devices"].size() > 64) return error = "`devices` is not a list", std::nullopt;
    for (const auto& d : o["devices"]) {
      if (!count(d) || d.get<uint64_t>() > UINT32_MAX) return error = "a device is not a number", std::nullopt;
      s.devices.push_back(d.get<uint32_t>());
    }
  }
  for (const char* key : {"names", "warnings"}) {
    if (!o.contains(key)) continue;
    if (!o[key].is_array() || o[key].size() > kMaxItems)
      return error = std::string("`") + key + "` is not a list", std::nullopt;
    auto& into = std::string(key) == "names" ? s.names : s.warnings;
    for (const auto& n : o[key]) {
      if (!n.is_string()) return error = std::string("`") + key + "` holds something not text", std::nullopt;
      into.push_back(n.get<std::string>());
    }
  }
  s.profiler = text(o, "profiler"), s.tool_version = text(o, "tool_version");
  s.torch_version = text(o, "torch_version").substr(0, 64), s.cuda_version = text(o, "cuda_version").substr(0, 64);
  s.cuda_driver = text(o, "cuda_driver").substr(0, 64);
  if (o.contains("input_site") && o["input_site"].is_object()) {
    const json& site = o["input_site"];
    s.input_path = text(site, "path").substr(0, 4096);
    if (site.contains("line") && count(site["line"]) && site["line"].get<int64_t>() <= 100'000'000)
      s.input_line = site["line"].get<int32_t>();
  }
  if (o.contains("profiler_options")) {
    const json& options = o["profiler_options"];
    if (!options.is_array() || options.size() > 16) return error = "`profiler_options` is not a list", std::nullopt;
    for (const auto& w : options) {
      if (!w.is_string()) return error = "`profiler_options` holds something not text", std::nullopt;
      s.profiler_options.push_back(w.get<std::string>().substr(0, 64));
    }
  }
  if (o.contains("command")) {
    if (!o["command"].is_array() || o["command"].size() > 256) return error = "`command` is not a list", std::nullopt;
    for (const auto& w : o["command"]) {
      if (!w.is_string()) return error = "`command` holds something not text", std::nullopt;
      s.command.push_back(w.get<std::string>().substr(0, 4096));
    }
  }
  for (auto [key, into, least] : {std::tuple{"measured_ns", &s.measured_ns, int64_t{1}},
                                  std::tuple{"measured_input_ns", &s.measured_input_ns, int64_t{0}}}) {
    if (!o.contains(key)) continue;
    const json& m = o[key];
    if (!m.is_array() || m.size() > 100'000) return error = std::string("`") + key + "` is not a list", std::nullopt;
    int64_t sum = 0;
    for (const auto& v : m) {
      if (!count(v) || v.get<int64_t>() < least)
        return error = std::string("`") + key + "` holds something not a time", std::nullopt;
      if (!addTo(sum, v.get<int64_t>())) return error = kPastTheBound, std::nullopt;
      into->push_back(v.get<int64_t>());
    }
  }
  if (!s.measured_input_ns.empty() && s.measured_input_ns.size() != s.measured_ns.size())
    return error = "`measured_input_ns` is not one wait per measured step", std::nullopt;
  if (o.contains("measured_memory_peak")) {
    const json& m = o["measured_memory_peak"];
    bool ok = m.is_object() && m.contains("allocated_bytes") && m.contains("reserved_bytes") &&
              count(m["allocated_bytes"]) && count(m["reserved_bytes"]) &&
              m["allocated_bytes"].get<int64_t>() <= m["reserved_bytes"].get<int64_t>();
    if (!ok) return error = "`measured_memory_peak` is not allocated_bytes at most reserved_bytes", std::nullopt;
    s.measured_peak_allocated_bytes = m["allocated_bytes"].get<int64_t>();
    s.measured_peak_reserved_bytes = m["reserved_bytes"].get<int64_t>();
  }
  if (!readSteps(o, s, error) || !readLines(o, s, error) || !readCollectives(o, s, error)) return std::nullopt;
  return s;
}

}  // namespace

json rankSummaryJson(const join::RankSummary& s) {
  json steps = json::array();
  for (const auto& st : s.steps) {
    json row = {st.start_ns,   st.end_ns,  kindName(st.kind), st.gpu_ns,    st.busy_ns,
                st.compute_ns, st.copy_ns, st.comm_ns,        st.capture_ns};
    for (int64_t w : st.wait_ns) row.push_back(w);
    steps.push_back(std::move(row));
  }
  json lines = json::array();
  for (const auto& l : s.lines) {
    json line = {
        {"path", l.path}, {"line", l.line}, {"ns", l.ns}, {"backward_ns", l.backward_ns}, {"comm_ns", l.comm_ns}};
    if (!l.step_ns.empty()) line["step_ns"] = l.step_ns;
    if (!l.text.empty()) line["text"] = l.text;
    if (l.syncs > 0) line["syncs"] = l.syncs, line["sync_ns"] = l.sync_ns;
    if (!l.kernels.empty()) line["kernels"] = l.kernels;
    lines.push_back(std::move(line));
  }
  json collectives = json::array();
  for (const auto& c : s.collectives)
    collectives.push_back(
        {c.step, c.nth, c.name, c.start_ns, c.end_ns, c.exposed_ns, c.line, static_cast<int>(c.pass), c.module});
  json out = {{"rank", s.rank >= 0 ? json(s.rank) : json(nullptr)},
              {"world_size", s.world_size >= 0 ? json(s.world_size) : json(nullptr)},
              {"rank_source", s.rank_source},
              {"host", s.host},
              {"gpu_uuid", s.gpu_uuid},
              {"gpu", s.gpu_name},
              {"devices", s.devices},
              {"pid", s.pid},
              {"process", s.process},
              {"report", s.report},
              {"format", s.format},
              {"steps_source", s.steps_source},
              {"gpu_ns", s.gpu_ns},
              {"busy_ns", s.busy_ns},
              {"comm_ns", s.comm_ns},
              {"comm_exposed_ns", s.comm_exposed_ns},
              {"launches", s.launches},
              {"lost_launches", s.lost_launches},
              {"warnings", s.warnings},
              {"names", s.names},
              {"steps", steps},
              {"lines", lines},
              {"collectives", collectives}};
  if (!s.profiler.empty()) out["profiler"] = s.profiler;
  if (!s.tool_version.empty()) out["tool_version"] = s.tool_version;
  if (!s.profiler_options.empty()) out["profiler_options"] = s.profiler_options;
  for (auto [key, value] : {std::pair{"torch_version", &s.torch_version}, std::pair{"cuda_version", &s.cuda_version},
                            std::pair{"cuda_driver", &s.cuda_driver}})
    if (!value->empty()) out[key] = *value;
  if (!s.command.empty()) out["command"] = s.command;
  if (!s.measured_ns.empty()) out["measured_ns"] = s.measured_ns;
  if (!s.measured_input_ns.empty()) out["measured_input_ns"] = s.measured_input_ns;
  if (s.measured_peak_allocated_bytes >= 0)
    out["measured_memory_peak"] = {{"allocated_bytes", s.measured_peak_allocated_bytes},
                                   {"reserved_bytes", s.measured_peak_reserved_bytes}};
  if (!s.input_path.empty() && s.input_line > 0) out["input_site"] = {{"path", s.input_path}, {"line", s.input_line}};
  return out;
}

json rankSummariesJson(const std::vector<join::RankSummary>& ranks) {
  json out = {{"sightline_rank_summary", kSummaryVersion}, {"summaries", json::array()}};
  for (const auto& r : ranks) out["summaries"].push_back(rankSummaryJson(r));
  return out;
}

std::optional<std::vector<join::RankSummary>> rankSummariesFromJson(const json& doc, std::string& error) {
  const json* list = nullptr;
  if (doc.is_object() && doc.contains("sightline_rank_summary")) {
    if (doc["sightline_rank_summary"] != kSummaryVersion)
      return error =
                 "a rank summary of another version (this build reads version " + std::to_string(kSummaryVersion) + ")",
             std::nullopt;
    if (doc.contains("summaries")) list = &doc["summaries"];
  } else if (doc.is_object() && doc.contains("rank_summaries")) {
    list = &doc["rank_summaries"];
  }
  if (!list) return error = "not a `sightline report --format summary` (or `--format json`) output", std::nullopt;
  if (!list->is_array()) return error = "its ranks are not a list", std::nullopt;
  if (list->size() > kMaxJobRanks) return error = "more than " + std::to_string(kMaxJobRanks) + " ranks", std::nullopt;
  std::vector<join::RankSummary> out;
  for (const auto& r : *list) {
    auto s = summaryFrom(r, error);
    if (!s) return std::nullopt;
    out.push_back(std::move(*s));
  }
  return out;
}

bool addSummaries(std::vector<join::RankSummary>& job, std::vector<join::RankSummary> more, std::string& error) {
  if (job.size() + more.size() > kMaxJobRanks) {
    error = "more than " + std::to_string(kMaxJobRanks) + " ranks in the job";
    return false;
  }
  for (auto& s : more) job.push_back(std::move(s));
  return true;
}

json jobJson(const features::JobView& job, const std::vector<join::RankSummary>& ranks) {
  json jr = json::array();
  for (const auto& r : job.ranks) {
    const auto& s = ranks[r.summary];
    jr.push_back({{"label", r.label},
                  {"rank", s.rank >= 0 ? json(s.rank) : json(nullptr)},
                  {"host", s.host},
                  {"gpu_uuid", s.gpu_uuid},
                  {"devices", s.devices},
                  {"pid", s.pid},
                  {"report", s.report},
                  {"steady_steps", r.steady_steps},
                  {"median_step_ns", r.median_step_ns},
                  {"steady_gpu_ns", r.steady_gpu_ns},
                  {"steady_busy_ns", r.steady_busy_ns},
                  {"comm_ns", r.comm_ns},
                  {"comm_exposed_ns", r.comm_exposed_ns},
                  {"comm_wait_ns", r.comm_wait_ns},
                  {"comm_transfer_ns", r.comm_transfer_ns},
                  {"caused_wait_ns", r.caused_wait_ns},
                  {"paired_collectives", r.paired},
                  {"late_collectives", r.late}});
  }
  json lines = json::array();
  for (const auto& l : job.lines)
    lines.push_back({{"path", l.path},
                     {"line", l.line},
                     {"median_ns_per_step", l.median_ns},
                     {"p95_ns_per_step", l.p95_ns},
                     {"max_ns_per_step", l.max_ns},
                     {"max_rank", job.ranks[l.max_rank].label},
                     {"max_rank_index", l.max_rank},
                     {"comm_ns_per_step", l.comm_ns}});
  json modules = json::array();
  for (const auto& m : job.modules)
    modules.push_back({{"module", m.module},
                       {"kind", m.kind},
                       {"pass", join::collectivePassName(m.pass)},
                       {"count", m.count},
                       {"ns_per_step", m.ns},
                       {"exposed_ns_per_step", m.exposed_ns},
                       {"wait_ns_per_step", m.wait_ns}});
  json advice = json::array();
  for (const auto& a : job.advice)
    advice.push_back({{"change", a.change},
                      {"module", job.modules[a.module].module},
                      {"kind", job.modules[a.module].kind},
                      {"pass", join::collectivePassName(job.modules[a.module].pass)},
                      {"moving_exposed_ns_per_step", a.moving_exposed_ns}});
  json kinds = json::array();
  for (size_t r = 0; r < job.step_kind.size(); ++r) {
    json k = json::array();
    for (size_t i = 0; i < job.step_kind[r].size(); ++i)
      k.push_back(job.step_wall_ns[r][i] < 0 ? "none" : kindName(job.step_kind[r][i]));
    kinds.push_back(std::move(k));
  }
  json straggler = nullptr;
  if (job.straggler >= 0) {
    straggler = {
        {"rank", job.ranks[static_cast<size_t>(job.straggler)].label},
        {"late_share", job.straggler_late_share},
        {"caused_wait_ns_per_step", job.straggler_caused_ns_per_step},
        {"steps", job.straggler_steps},
        {"line", job.straggler_line_path.empty() ? json(nullptr)
                                                 : json({{"path", job.straggler_line_path},
                                                         {"line", job.straggler_line},
                                                         {"extra_ns_per_step", job.straggler_line_extra_ns}})}};
  }
  json late = json::array();
  for (const auto& l : job.late_ranks) {
    json only = json::array();
    for (const auto& o : l.only_lines) only.push_back({{"path", o.path}, {"line", o.line}, {"gpu_ns_per_step", o.ns}});
    late.push_back({{"rank", job.ranks[l.rank].label}, {"steps", l.steps}, {"only_lines", std::move(only)}});
  }
  return {{"ranks", jr},
          {"hosts", job.hosts},
          {"duplicate_ranks", job.duplicate_ranks},
          {"max_steps", job.max_steps},
          {"max_steady_steps", job.max_steady_steps},
          {"min_steady_steps", job.min_steady_steps},
          {"world_size", job.world_size > 0 ? json(job.world_size) : json(nullptr)},
          {"complete", job.complete},
          {"step_wall_ns", job.step_wall_ns},
          {"step_kinds", kinds},
          {"median_step_ns", job.median_step_ns},
          {"steady_steps", job.steady_steps},
          {"gpu_ns_per_step", job.gpu_ns_per_step},
          {"busy_ns_per_step", job.busy_ns_per_step},
          {"comm_exposed_ns_per_step", job.comm_exposed_ns_per_step},
          {"wait_ns_per_step", job.wait_ns_per_step},
          {"exposed_wait_ns_per_step", job.exposed_wait_ns_per_step},
          {"transfer_ns_per_step", job.transfer_ns_per_step},
          {"paired_collectives", job.paired_collectives},
          {"unpaired_collectives", job.unpaired_collectives},
          {"straggler", straggler},
          {"late_ranks", std::move(late)},
          {"lines", lines},
          {"modules", modules},
          {"advice", advice},
          {"bound", features::jobBoundName(job.bound)}};
}

json jobPageJson(const features::JobView& job) {
  size_t steps = static_cast<size_t>(std::max(0, job.max_steps));
  // At most kMaxJobCells cells (ranks × columns), between 20 and kMaxJobColumns columns.
  size_t columns = std::clamp<size_t>(kMaxJobCells / std::max<size_t>(1, job.ranks.size()), 20, kMaxJobColumns);
  size_t per = std::max<size_t>(1, (steps + columns - 1) / columns);
  json labels = json::array(), walls = json::array();
  for (size_t k = 0; k < job.ranks.size(); ++k) {
    labels.push_back(job.ranks[k].label);
    const auto& row = job.step_wall_ns[k];
    std::vector<int64_t> cols((row.size() + per - 1) / per, -1);
    for (size_t s = 0; s < row.size(); ++s) cols[s / per] = std::max(cols[s / per], row[s]);
    walls.push_back(std::move(cols));
  }
  json lines = json::array();
  for (size_t i = 0; i < job.lines.size() && i < 20; ++i) {
    const auto& l = job.lines[i];
    lines.push_back({{"path", l.path},
                     {"line", l.line},
                     {"medianNs", l.median_ns},
                     {"p95Ns", l.p95_ns},
                     {"maxNs", l.max_ns},
                     {"maxRank", l.max_rank}});
  }
  return {{"ranks", labels},
          {"straggler", job.straggler},
          {"stragglerSteps", job.straggler_steps},
          {"stepsPerColumn", per},
          {"wallNs", walls},
          {"medianStepNs", job.median_step_ns},
          {"lines", lines}};
}

}  // namespace sightline::server
