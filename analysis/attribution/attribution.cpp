// Attribution: every GPU activity charged to the line of the API call that launched it (each
// call resolved once, line_resolver.h), host-side launches and syncs on their calls' lines,
// then steps (steps.h) and GPU idle gaps.
#include "analysis/attribution/attribution.h"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/attribution/line_resolver.h"
#include "analysis/attribution/ranks.h"
#include "analysis/attribution/steps.h"

namespace sightline::attribution {
namespace {

// (process, correlation) -> API call index, sorted: millions of entries, so not a map.
class CallsByCorrelation {
 public:
  explicit CallsByCorrelation(const model::Profile& p) {
    entries_.reserve(p.api_calls.size());
    for (uint32_t i = 0; i < p.api_calls.size(); ++i)
      if (p.api_calls[i].correlation > 0)
        entries_.emplace_back(model::correlationKey(p.api_calls[i].pid, p.api_calls[i].correlation), i);
    std::sort(entries_.begin(), entries_.end());
  }
  // The call that launched `activity`, or -1.
  int64_t callOf(const model::GpuActivity& activity) const {
    if (activity.correlation == 0) return -1;
    auto key = model::correlationKey(activity.pid, activity.correlation);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(key, uint32_t{0}));
    return it != entries_.end() && it->first == key ? static_cast<int64_t>(it->second) : -1;
  }

 private:
  std::vector<std::pair<uint64_t, uint32_t>> entries_;
};

// What one activity adds to its line beyond time: counts, copies, memsets.
void chargeWork(LineCost& cost, const model::GpuActivity& act, const model::ApiCall& call, int64_t ns) {
  switch (act.kind) {
    case model::ActivityKind::Kernel:
    case model::ActivityKind::Graph:
      ++cost.kernels;
      break;
    case model::ActivityKind::Memcpy:
      cost.memcpy_bytes += act.bytes;
      cost.memcpy_ns += ns;
      cost.memcpy_bytes_by_kind[static_cast<size_t>(act.copy)] += act.bytes;
      if (act.src == model::MemoryKind::Pageable || act.dst == model::MemoryKind::Pageable)
        cost.pageable_bytes += act.bytes;
      // The driver returns early from small synchronous HtoD copies: those do not block.
      if (call.sync == model::SyncKind::BlockingMemcpy &&
          (act.copy != model::CopyKind::HostToDevice || act.bytes >= uint64_t{64} * 1024)) {
        cost.sync_memcpy_bytes += act.bytes;
        cost.sync_memcpy_ns += ns;
        ++cost.sync_memcpys;
      }
      break;
    case model::ActivityKind::Memset:
      ++cost.memsets;
      cost.memset_ns += ns;
      break;
  }
}

void chargeActivities(const model::Profile& p, const CallsByCorrelation& calls, LineResolver& resolver,
                      const RankTable& ranks, std::vector<bool>& has_activity, Attribution& out) {
  out.activity_lines.resize(p.activities.size());
  size_t rank_count = ranks.ranks.size();
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& act = p.activities[a];
    int64_t ns = act.duration();
    out.total_gpu_ns += ns;
    int64_t api = calls.callOf(act);
    if (api >= 0) has_activity[static_cast<size_t>(api)] = true;
    LineRef ref = api >= 0 ? resolver.lineOfCall(static_cast<size_t>(api)) : LineRef{};
    out.activity_lines[a] = ref;
    if (ref.file == 0) {
      out.unattributed_gpu_ns += ns;
      continue;
    }
    out.attributed_gpu_ns += ns;
    out.by_method[static_cast<size_t>(ref.method)] += ns;
    LineCost& cost = out.files[ref.file][ref.line];
    cost.gpu_ns += ns;
    (ref.backward ? cost.backward_ns : cost.forward_ns) += ns;
    cost.by_method[static_cast<size_t>(ref.method)] += ns;
    if (rank_count > 1) {
      cost.rank_ns.resize(rank_count);
      cost.rank_ns[ranks.activity_rank[a]] += ns;
    }
    if (ranks.exposed_ns[a] >= 0) {
      cost.comm_ns += ns;
      cost.comm_exposed_ns += ranks.exposed_ns[a];
    }
    auto& stat = cost.by_name[act.name];
    ++stat.count;
    stat.ns += ns;
    chargeWork(cost, act, p.api_calls[static_cast<size_t>(api)], ns);
    if (!ref.backward) {
      if (model::StringId op = resolver.forwardOpOf(static_cast<size_t>(api))) ++cost.autograd_ops[op];
    }
  }
}

// Host-side costs: launches and synchronizations, on the line of the call. A launch with a
// correlation id and no GPU record is lost (counted per thread and on its line).
void chargeHostCalls(const model::Profile& p, LineResolver& resolver, const std::vector<bool>& has_activity,
                     Attribution& out) {
  std::map<std::pair<uint32_t, uint32_t>, LostRecords> by_thread;
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const auto& call = p.api_calls[i];
    if (!call.launches && call.sync == model::SyncKind::None) continue;
    bool lost = call.launches && call.correlation > 0 && !has_activity[i];
    if (call.launches) {
      auto& t = by_thread[{call.pid, call.tid}];
      t.pid = call.pid, t.tid = call.tid;
      ++t.launches;
      t.lost += lost ? 1 : 0;
    }
    LineRef ref = resolver.lineOfCall(i);
    if (ref.file == 0) continue;
    LineCost& cost = out.files[ref.file][ref.line];
    if (call.launches) ++cost.launches;
    if (lost) ++cost.lost_launches;
    if (call.sync != model::SyncKind::None) {
      cost.sync_ns += model::spanNs(call.start_ns, call.end_ns);
      ++cost.syncs;
      ++cost.sync_apis[call.name];
    }
  }
  for (const auto& [key, t] : by_thread) {
    out.launches += t.launches;
    out.lost_launches += t.lost;
    if (t.lost > 0) out.lost.push_back(t);
    for (auto& r : out.ranks)
      if (r.pid == t.pid) r.launches += t.launches, r.lost_launches += t.lost;
  }
}

// Gaps of at least `gap_ns` between GPU work on a device, charged to the host line that keeps
// the GPU waiting (LineResolver::hostLineAt).
void chargeIdleGaps(const model::Profile& p, int64_t gap_ns, const CallsByCorrelation& calls, LineResolver& resolver,
                    Attribution& out) {
  if (gap_ns <= 0 || p.activities.empty()) return;
  // A GPU is (process, device): processes of a report may each number their GPU 0.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> by_device;  // activities are sorted by start
  for (uint32_t a = 0; a < p.activities.size(); ++a)
    by_device[{p.activities[a].pid, p.activities[a].device}].push_back(a);
  for (const auto& [gpu, list] : by_device) {
    uint32_t device = gpu.second;
    int64_t busy_until = p.activities[list.front()].end_ns;
    for (size_t i = 1; i < list.size(); ++i) {
      const auto& next = p.activities[list[i]];
      if (model::spanNs(busy_until, next.start_ns) >= gap_ns) {
        IdleGap gap{busy_until, next.start_ns, device, {}};
        if (int64_t api = calls.callOf(next); api >= 0) gap.line = resolver.hostLineAt(static_cast<uint32_t>(api), gap);
        if (gap.line.file != 0) {
          LineCost& cost = out.files[gap.line.file][gap.line.line];
          cost.idle_ns += model::spanNs(gap.start_ns, gap.end_ns);
          ++cost.idle_gaps;
        }
        out.idle_gaps.push_back(gap);
      }
      busy_until = std::max(busy_until, next.end_ns);
    }
  }
}

}  // namespace

const char* methodName(Method m) {
  switch (m) {
    case Method::Stack:
      return "stack";
    case Method::Op:
      return "op";
    case Method::Backward:
      return "backward";
    case Method::Inferred:
      return "inferred";
    case Method::Sample:
      return "sample";
    case Method::Nvtx:
      return "nvtx";
    case Method::Aligned:
      return "aligned";
    case Method::Function:
      return "function";
    case Method::Caller:
      return "caller";
  }
  return "?";
}

void addCost(LineCost& into, const LineCost& from) {
  into.gpu_ns += from.gpu_ns;
  into.forward_ns += from.forward_ns;
  into.backward_ns += from.backward_ns;
  for (size_t m = 0; m < kMethodCount; ++m) into.by_method[m] += from.by_method[m];
  into.kernels += from.kernels;
  into.launches += from.launches;
  for (const auto& [name, stat] : from.by_name) {
    into.by_name[name].count += stat.count;
    into.by_name[name].ns += stat.ns;
  }
  into.memcpy_bytes += from.memcpy_bytes;
  into.pageable_bytes += from.pageable_bytes;
  into.memcpy_ns += from.memcpy_ns;
  for (size_t k = 0; k < into.memcpy_bytes_by_kind.size(); ++k)
    into.memcpy_bytes_by_kind[k] += from.memcpy_bytes_by_kind[k];
  into.memset_ns += from.memset_ns;
  into.memsets += from.memsets;
  into.sync_memcpy_bytes += from.sync_memcpy_bytes;
  into.sync_memcpy_ns += from.sync_memcpy_ns;
  into.sync_memcpys += from.sync_memcpys;
  into.idle_ns += from.idle_ns;
  into.idle_gaps += from.idle_gaps;
  into.sync_ns += from.sync_ns;
  into.syncs += from.syncs;
  for (const auto& [name, n] : from.sync_apis) into.sync_apis[name] += n;
  for (const auto& [name, n] : from.autograd_ops) into.autograd_ops[name] += n;
  if (into.rank_ns.size() < from.rank_ns.size()) into.rank_ns.resize(from.rank_ns.size());
  for (size_t r = 0; r < from.rank_ns.size(); ++r) into.rank_ns[r] += from.rank_ns[r];
  into.comm_ns += from.comm_ns;
  into.comm_exposed_ns += from.comm_exposed_ns;
  into.lost_launches += from.lost_launches;
}

Attribution attribute(const model::Profile& profile, const Options& options) {
  Attribution out;
  CallsByCorrelation calls(profile);
  LineResolver resolver(profile, options);
  RankTable ranks = buildRanks(profile);
  out.ranks = ranks.ranks;
  for (const auto& r : out.ranks) out.comm_ns += r.comm_ns, out.comm_exposed_ns += r.comm_exposed_ns;
  std::set<uint32_t> pids;  // calls come in long runs of one process: insert on a change only
  for (const auto& r : out.ranks) pids.insert(r.pid);
  uint32_t last = ~0u;
  for (const auto& c : profile.api_calls)
    if (c.pid != last) pids.insert(last = c.pid);
  out.processes = static_cast<uint32_t>(pids.size());
  std::vector<bool> has_activity(profile.api_calls.size(), false);
  chargeActivities(profile, calls, resolver, ranks, has_activity, out);
  chargeHostCalls(profile, resolver, has_activity, out);
  detectSteps(profile, options, resolver.backtraces(), out);
  for (auto& r : out.ranks)
    if (auto it = out.process_steps.find(r.pid); it != out.process_steps.end())
      r.steps = it->second.count, r.median_step_ns = it->second.median_ns;
  chargeIdleGaps(profile, options.idle_gap_ns, calls, resolver, out);
  return out;
}

}  // namespace sightline::attribution
