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

const char* collectivePassName(CollectivePass pass) {
  switch (pass) {
    case CollectivePass::Forward:
      return "forward";
    case CollectivePass::Backward:
      return "backward";
    case CollectivePass::Other:
      return "other";
    case CollectivePass::Unknown:
      break;
  }
  return "unknown";
}

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
  // A report merged with others names the rank as that report alone would: its file, its own
  // pid, its GPUs, warnings and options.
  uint32_t own_pid = r.pid;
  const model::ProfilePart* part = p.info.partOf(r.pid, &own_pid);
  const auto& gpus = part ? part->gpus : p.info.gpus;
  const auto& capabilities = part ? part->capabilities : p.info.capabilities;
  s.rank = r.rank, s.rank_source = r.rank_source, s.host = r.host, s.gpu_uuid = r.gpu_uuid;
  s.devices = r.devices, s.pid = own_pid, s.process = r.process;
  s.report = part ? part->name : report, s.format = part ? part->format : p.info.format;
  s.steps_source = attr.steps_source;
  if (r.devices.size() == 1 && r.devices.front() < gpus.size())
    s.gpu_name = gpus[r.devices.front()];
  else if (!gpus.empty())
    s.gpu_name = gpus.front();
  if (auto it = world_of.find(r.pid); it != world_of.end()) s.world_size = it->second;
  s.gpu_ns = r.gpu_ns, s.busy_ns = r.busy_ns, s.comm_ns = r.comm_ns, s.comm_exposed_ns = r.comm_exposed_ns;
  s.launches = r.launches, s.lost_launches = r.lost_launches;
  s.warnings = part ? part->warnings : p.info.warnings;
  s.tool_version = part ? part->tool_version : p.info.tool_version;
  for (const char* option : kRecordingOptions)
    if (std::find(capabilities.begin(), capabilities.end(), option) != capabilities.end())
      s.profiler_options.push_back(option);
  if (s.profiler_options.empty()) s.profiler_options.push_back("kernels");  // known: nothing beyond them
  if (const auto& m = join.measured(); m && m->source == model::StepMeasurement::Source::Measured) {
    s.profiler = m->profiler, s.command = m->command;
    s.input_path = m->input_path, s.input_line = m->input_line;
    // The rank alone in its report takes the one process measured.
    auto ranks_here = part ? std::count_if(attr.ranks.begin(), attr.ranks.end(),
                                           [&](const attribution::RankInfo& o) { return p.info.partOf(o.pid) == part; })
                           : static_cast<std::ptrdiff_t>(attr.ranks.size());
    for (const auto& proc : m->processes)
      if (proc.pid == own_pid || (ranks_here == 1 && m->processes.size() == 1)) {
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
  // Of a report of several ranks, each rank's steady time per line by kernel name (attribution
  // keeps those per line of the whole report).
  bool several = out.size() > 1;
  std::vector<std::map<LineKey, std::unordered_map<model::StringId, int64_t>>> names(several ? out.size() : 0);
  // Runs of activities share a process and a line: the last lookups are kept (a million rows).
  uint32_t last_pid = UINT32_MAX;
  size_t rank = SIZE_MAX;
  LineKey last_key{};
  SummaryLine* last_line = nullptr;
  std::unordered_map<model::StringId, int64_t>* last_names = nullptr;
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
      last_names = several ? &names[rank][last_key] : nullptr;
    }
    auto& l = *last_line;
    if (l.step_ns.empty()) l.step_ns.assign(s.steps.size(), 0);
    if (step >= 0) l.step_ns[static_cast<size_t>(step)] += a.duration();
    bool steady =
        step >= 0 ? s.steps[static_cast<size_t>(step)].kind == attribution::StepKind::Steady : s.steps.empty();
    if (!steady) continue;
    l.ns += a.duration();
    if (ref.backward) l.backward_ns += a.duration();
    if (last_names) (*last_names)[a.name] += a.duration();
  }
  // Synchronizing calls, by line: of one rank, or of each of several (LineCost::rank_syncs).
  for (const auto& [file, by_line] : attr.files)
    for (const auto& [line, cost] : by_line)
      for (size_t r = 0; r < out.size() && cost.syncs > 0; ++r) {
        uint32_t syncs = several ? (r < cost.rank_syncs.size() ? cost.rank_syncs[r] : 0) : cost.syncs;
        if (syncs == 0) continue;
        auto& l = lines[r][{file, line}];
        if (l.step_ns.empty()) l.step_ns.assign(out[r].steps.size(), 0);
        l.syncs = syncs, l.sync_ns = several ? cost.rank_sync_ns[r] : cost.sync_ns;
      }
  // Each line's costliest kernels by name: most time first, then by name.
  auto keepCostliest = [&](SummaryLine& l, std::vector<std::pair<int64_t, std::string_view>>& named) {
    std::sort(named.begin(), named.end());
    for (size_t i = 0; i < named.size() && i < kMaxLineKernels; ++i)
      l.kernels.push_back(std::string(named[i].second.substr(0, kMaxKernelName)));
  };
  std::vector<std::pair<int64_t, std::string_view>> named;
  for (size_t r = 0; r < lines.size(); ++r)
    for (auto& [key, l] : lines[r]) {
      named.clear();
      if (several) {
        for (const auto& [name, ns] : names[r][key]) named.emplace_back(-ns, p.strings[name]);
      } else if (auto file = attr.files.find(key.first); file != attr.files.end()) {
        if (auto cost = file->second.find(key.second); cost != file->second.end())
          for (const auto& [name, stat] : cost->second.by_name) named.emplace_back(-stat.ns, p.strings[name]);
      }
      keepCostliest(l, named);
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
    bool backward = ref.backward, fsdp = false;
    if (c.api >= 0) {
      const auto& call = p.api_calls[static_cast<size_t>(c.api)];
      FsdpPlace place = fsdpPlaceAt(p, call.pid, call.tid, call.start_ns);
      if (!place.module.empty()) sc.module = static_cast<int32_t>(intern(r->second, place.module));
      backward = backward || place.backward, fsdp = !place.module.empty();
    }
    sc.pass = backward        ? CollectivePass::Backward
              : fsdp          ? CollectivePass::Forward
              : ref.file != 0 ? CollectivePass::Other
                              : CollectivePass::Unknown;
    RankSummary& rs = out[r->second];
    bool steady =
        sc.step >= 0 ? rs.steps[static_cast<size_t>(sc.step)].kind == attribution::StepKind::Steady : rs.steps.empty();
    if (sc.line >= 0 && steady) rs.lines[static_cast<size_t>(sc.line)].comm_ns += a.duration();
    rs.collectives.push_back(sc);
  }
  return out;
}

}  // namespace sightline::join
