// One rank's summary for the job view.
#include "analysis/join/rank_summary.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace sightline::join {
namespace {

struct FsdpPlace {
  std::string module;     // "" none
  bool backward = false;  // inside one of FSDP's backward hooks
};

// The innermost range of (pid, tid) holding `t` that names an FSDP module, and whether one of
// FSDP's backward ranges holds it. Ranges are sorted by (pid, tid, start); FSDP's ranges around
// a launch start a few thousand ranges back at most.
FsdpPlace fsdpPlaceAt(const model::Profile& p, uint32_t pid, uint32_t tid, int64_t t) {
  auto first = std::lower_bound(p.ranges.begin(), p.ranges.end(), std::make_tuple(pid, tid, INT64_MIN),
                                [](const model::NvtxRange& r, const std::tuple<uint32_t, uint32_t, int64_t>& k) {
                                  return std::make_tuple(r.pid, r.tid, r.start_ns) < k;
                                });
  auto it = std::upper_bound(first, p.ranges.end(), std::make_tuple(pid, tid, t),
                             [](const std::tuple<uint32_t, uint32_t, int64_t>& k, const model::NvtxRange& r) {
                               return k < std::make_tuple(r.pid, r.tid, r.start_ns);
                             });
  FsdpPlace out;
  int64_t innermost = INT64_MIN;  // the start of the module's range found (the latest start wins)
  for (int looked = 0; it != first && looked < 4096; ++looked) {
    --it;
    if (it->end_ns <= t) continue;
    std::string_view text = p.strings[it->text];
    if (text.rfind("FSDP::", 0) != 0) continue;
    std::string module = fsdpModuleOf(text);
    if (!module.empty() && it->start_ns > innermost) out.module = module, innermost = it->start_ns;
    if (text.find("backward") != std::string_view::npos) out.backward = true;
  }
  return out;
}

}  // namespace

std::string fsdpModuleOf(std::string_view text) {
  if (text.rfind("FSDP::", 0) != 0) return "";
  text = text.substr(0, text.find(", op_id"));
  size_t open = text.find(" (");
  if (open == std::string_view::npos) {
    // The root module's ranges name none: "FSDP::all_gather", "FSDP::post_backward_reduce".
    bool comm = text.rfind("FSDP::all_gather", 0) == 0 || text.rfind("FSDP::post_backward_reduce", 0) == 0;
    bool plain = text.find(' ') == std::string_view::npos && text.find(',') == std::string_view::npos;
    return comm && plain && (text == "FSDP::all_gather" || text == "FSDP::post_backward_reduce") ? "(root)" : "";
  }
  size_t close = text.find(')', open);
  if (close == std::string_view::npos || close == open + 2) return "";
  return std::string(text.substr(open + 2, close - open - 2));
}

namespace {

using LineKey = std::pair<model::StringId, int32_t>;

// One rank's identity, totals, measured steps and profiled steps.
RankSummary rankOf(const ProfileJoin& join, const attribution::RankInfo& r, const std::string& report,
                   const std::unordered_map<uint32_t, int32_t>& world_of) {
  const model::Profile& p = join.profile();
  const attribution::Attribution& attr = join.attribution();
  RankSummary s;
  s.rank = r.rank, s.rank_source = r.rank_source, s.host = r.host, s.gpu_uuid = r.gpu_uuid;
  s.devices = r.devices, s.pid = r.pid, s.process = r.process, s.report = report, s.format = p.info.format;
  s.steps_source = attr.steps_source;
  if (r.devices.size() == 1 && r.devices.front() < p.info.gpus.size())
    s.gpu_name = p.info.gpus[r.devices.front()];
  else if (!p.info.gpus.empty())
    s.gpu_name = p.info.gpus.front();
  if (auto it = world_of.find(r.pid); it != world_of.end()) s.world_size = it->second;
  s.gpu_ns = r.gpu_ns, s.busy_ns = r.busy_ns, s.comm_ns = r.comm_ns, s.comm_exposed_ns = r.comm_exposed_ns;
  s.launches = r.launches, s.lost_launches = r.lost_launches;
  s.warnings = p.info.warnings;
  s.tool_version = p.info.tool_version;
  for (const char* option : kRecordingOptions)
    if (std::find(p.info.capabilities.begin(), p.info.capabilities.end(), option) != p.info.capabilities.end())
      s.profiler_options.push_back(option);
  if (s.profiler_options.empty()) s.profiler_options.push_back("kernels");  // known: nothing beyond them
  if (const auto& m = join.measured(); m && m->source == model::StepMeasurement::Source::Measured) {
    s.profiler = m->profiler, s.command = m->command;
    s.input_path = m->input_path, s.input_line = m->input_line;
    for (const auto& proc : m->processes)
      if (proc.pid == r.pid || (attr.ranks.size() == 1 && m->processes.size() == 1)) {
        s.measured_ns = proc.timed_ns, s.measured_input_ns = proc.timed_input_ns;
        s.measured_peak_allocated_bytes = proc.peak_allocated_bytes;
        s.measured_peak_reserved_bytes = proc.peak_reserved_bytes;
        s.torch_version = proc.torch_version, s.cuda_version = proc.cuda_version, s.cuda_driver = proc.cuda_driver;
      }
  }
  if (auto it = attr.process_steps.find(r.pid); it != attr.process_steps.end())
    for (const auto& st : it->second.list) {
      SummaryStep step;
      step.start_ns = st.window_start_ns, step.end_ns = st.window_end_ns, step.kind = st.kind;
      step.gpu_ns = st.gpu_ns, step.busy_ns = st.busy_ns, step.compute_ns = st.compute_ns, step.copy_ns = st.copy_ns;
      step.comm_ns = st.comm_ns, step.wait_ns = st.wait_ns, step.capture_ns = st.capture_ns;
      s.steps.push_back(step);
    }
  return s;
}

// Each rank's lines: GPU time per (path, line) and per step (over steady steps for the totals),
// their synchronizing calls and their costliest kernels.
std::vector<std::map<LineKey, SummaryLine>> tallyLines(const ProfileJoin& join, const std::vector<RankSummary>& out,
                                                       const std::unordered_map<uint32_t, size_t>& rank_of) {
  const model::Profile& p = join.profile();
  const attribution::Attribution& attr = join.attribution();
  std::vector<std::map<LineKey, SummaryLine>> lines(out.size());
  // Runs of activities share a process and a line: the last lookups are kept (a million rows).
  uint32_t last_pid = UINT32_MAX;
  size_t rank = SIZE_MAX;
  LineKey last_key{};
  SummaryLine* last_line = nullptr;
  for (size_t i = 0; i < p.activities.size(); ++i) {
    const auto& a = p.activities[i];
    if (a.pid != last_pid) {
      auto r = rank_of.find(a.pid);
      last_pid = a.pid, rank = r == rank_of.end() ? SIZE_MAX : r->second, last_line = nullptr;
    }
    if (rank == SIZE_MAX) continue;
    const RankSummary& s = out[rank];
    // Its step, as attribution counted it (by the host time of its launch).
    int32_t step = i < attr.activity_steps.size() ? attr.activity_steps[i] : -1;
    if (step >= static_cast<int32_t>(s.steps.size())) step = -1;
    const auto& ref = i < attr.activity_lines.size() ? attr.activity_lines[i] : attribution::LineRef{};
    if (ref.file == 0) continue;
    if (!last_line || last_key != LineKey{ref.file, ref.line}) {
      last_key = {ref.file, ref.line};
      last_line = &lines[rank][last_key];
    }
    auto& l = *last_line;
    if (l.step_ns.empty()) l.step_ns.assign(s.steps.size(), 0);
    if (step >= 0) l.step_ns[static_cast<size_t>(step)] += a.duration();
    bool steady =
        step >= 0 ? s.steps[static_cast<size_t>(step)].kind == attribution::StepKind::Steady : s.steps.empty();
    if (!steady) continue;
    l.ns += a.duration();
    if (ref.backward) l.backward_ns += a.duration();
  }
  // Synchronizing calls, by line: attribution keeps them per line of the whole report, so only
  // a report of one rank can give them to its rank.
  if (out.size() == 1)
    for (const auto& [file, by_line] : attr.files)
      for (const auto& [line, cost] : by_line) {
        if (cost.syncs == 0) continue;
        auto& l = lines[0][{file, line}];
        if (l.step_ns.empty()) l.step_ns.assign(out[0].steps.size(), 0);
        l.syncs = cost.syncs, l.sync_ns = cost.sync_ns;
      }
  // Each line's costliest kernels by name, from attribution's per-line tallies.
  for (auto& by_line : lines)
    for (auto& [key, l] : by_line) {
      auto file = attr.files.find(key.first);
      if (file == attr.files.end()) continue;
      auto cost = file->second.find(key.second);
      if (cost == file->second.end()) continue;
      std::vector<std::pair<int64_t, model::StringId>> named;
      for (const auto& [name, stat] : cost->second.by_name) named.emplace_back(-stat.ns, name);
      std::sort(named.begin(), named.end());
      for (size_t i = 0; i < named.size() && i < kMaxLineKernels; ++i)
        l.kernels.push_back(std::string(p.strings[named[i].second].substr(0, kMaxKernelName)));
    }
  return lines;
}

}  // namespace

std::vector<RankSummary> summarizeRanks(const ProfileJoin& join, const std::string& report) {
  const model::Profile& p = join.profile();
  const attribution::Attribution& attr = join.attribution();
  std::vector<RankSummary> out;
  if (attr.ranks.size() > kMaxSummarizedRanks) return out;
  std::unordered_map<uint32_t, size_t> rank_of;  // pid -> index into out
  std::unordered_map<uint32_t, int32_t> world_of;
  for (const auto& proc : p.info.processes) world_of[proc.pid] = proc.world_size;
  for (const auto& r : attr.ranks) {
    rank_of[r.pid] = out.size();
    out.push_back(rankOf(join, r, report, world_of));
  }
  auto lines = tallyLines(join, out, rank_of);
  std::vector<std::map<std::pair<model::StringId, int32_t>, int32_t>> line_index(out.size());
  for (size_t r = 0; r < out.size(); ++r) {
    std::vector<std::pair<std::pair<model::StringId, int32_t>, SummaryLine>> v(lines[r].begin(), lines[r].end());
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    for (auto& [key, l] : v) {
      l.path = std::string(p.strings[key.first]);
      l.line = key.second;
      if (out[r].lines.size() >= kMaxStepLines) l.step_ns.clear();
      line_index[r][key] = static_cast<int32_t>(out[r].lines.size());
      out[r].lines.push_back(std::move(l));
    }
  }
  // Collectives, in start order per rank, numbered by name within their step.
  std::vector<attribution::CollectiveLaunch> comms = attr.collectives;
  std::stable_sort(comms.begin(), comms.end(), [&](const auto& a, const auto& b) {
    const auto &x = p.activities[a.activity], &y = p.activities[b.activity];
    return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
  });
  std::vector<std::unordered_map<std::string, uint32_t>> name_index(out.size());
  std::vector<std::map<std::pair<int32_t, uint32_t>, uint32_t>> seen(out.size());
  auto intern = [&](size_t r, const std::string& name) {
    auto [it, added] = name_index[r].emplace(name, static_cast<uint32_t>(out[r].names.size()));
    if (added) out[r].names.push_back(name);
    return it->second;
  };
  for (const auto& c : comms) {
    const auto& a = p.activities[c.activity];
    auto r = rank_of.find(a.pid);
    if (r == rank_of.end()) continue;
    SummaryCollective sc;
    sc.step = c.step;
    sc.name = intern(r->second, std::string(p.strings[a.name]));
    sc.nth = seen[r->second][{sc.step, sc.name}]++;
    sc.start_ns = a.start_ns, sc.end_ns = a.end_ns, sc.exposed_ns = c.exposed_ns;
    const auto& ref =
        c.activity < attr.activity_lines.size() ? attr.activity_lines[c.activity] : attribution::LineRef{};
    if (ref.file != 0)
      if (auto it = line_index[r->second].find({ref.file, ref.line}); it != line_index[r->second].end())
        sc.line = it->second;
    sc.backward = ref.backward;
    if (c.api >= 0) {
      const auto& call = p.api_calls[static_cast<size_t>(c.api)];
      FsdpPlace place = fsdpPlaceAt(p, call.pid, call.tid, call.start_ns);
      if (!place.module.empty()) sc.module = static_cast<int32_t>(intern(r->second, place.module));
      sc.backward = sc.backward || place.backward;
    }
    RankSummary& rs = out[r->second];
    bool steady =
        sc.step >= 0 ? rs.steps[static_cast<size_t>(sc.step)].kind == attribution::StepKind::Steady : rs.steps.empty();
    if (sc.line >= 0 && steady) rs.lines[static_cast<size_t>(sc.line)].comm_ns += a.duration();
    rs.collectives.push_back(sc);
  }
  return out;
}

}  // namespace sightline::join
