// Attribution: every GPU activity charged to the line of the API call that launched it (each
// call resolved once, line_resolver.h), host-side launches and syncs on their calls' lines,
// then steps (steps.h) and GPU idle gaps.
#include "analysis/attribution/attribution.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/attribution/busy_intervals.h"
#include "analysis/attribution/capture_overhead.h"
#include "analysis/attribution/launch_links.h"
#include "analysis/attribution/line_resolver.h"
#include "analysis/attribution/ranks.h"
#include "analysis/attribution/step_parts.h"
#include "analysis/attribution/steps.h"

namespace sightline::attribution {
namespace {

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

// cudaGraphLaunch and its driver twin, decided by name once each rather than per call.
class GraphLaunchNames {
 public:
  explicit GraphLaunchNames(const model::Profile& p) : p_(p) {}
  bool operator()(model::StringId name) {
    auto [it, added] = known_.try_emplace(name, false);
    if (added) it->second = p_.strings[name].find("GraphLaunch") != std::string_view::npos;
    return it->second;
  }

 private:
  const model::Profile& p_;
  std::unordered_map<model::StringId, bool> known_;
};

// What a kernel's name says of it, worked out once per name (a profile has a few thousand
// names and millions of kernels).
class KernelKinds {
 public:
  static constexpr uint8_t kCommunication = 1, kFp32Matmul = 2, kTriton = 4, kKnown = 128;
  explicit KernelKinds(const model::StringTable& strings) : strings_(strings), kinds_(strings.size(), 0) {}
  uint8_t of(model::StringId name) {
    if (name >= kinds_.size()) kinds_.resize(name + 1, 0);
    uint8_t& k = kinds_[name];
    if (!(k & kKnown)) {
      std::string_view text = strings_[name];
      k = static_cast<uint8_t>(kKnown | (isCommunicationKernel(text) ? kCommunication : 0) |
                               (isFp32MatmulKernel(text) ? kFp32Matmul : 0) |
                               (text.starts_with("triton_") ? kTriton : 0));
    }
    return k;
  }

 private:
  const model::StringTable& strings_;
  std::vector<uint8_t> kinds_;
};

// Kernels replayed by CUDA graph launches of compiled functions: each on the line whose
// launch the graph recorded (LineResolver::replayedKernelLines). Per activity, when placed;
// empty without compiled sites.
std::vector<std::optional<LineRef>> replayedKernelLines(const model::Profile& p, const LaunchLinks& links,
                                                        LineResolver& resolver) {
  std::vector<std::optional<LineRef>> replayed;
  if (!resolver.hasCompiledSites()) return replayed;
  replayed.resize(p.activities.size());
  GraphLaunchNames isGraphLaunch(p);
  std::map<size_t, std::vector<size_t>> by_launch;  // graph launch -> its kernels, in order
  for (size_t a = 0; a < p.activities.size(); ++a) {
    int64_t api = links.call_of[a];
    if (api >= 0 && p.activities[a].kind == model::ActivityKind::Kernel &&
        isGraphLaunch(p.api_calls[static_cast<size_t>(api)].name))
      by_launch[static_cast<size_t>(api)].push_back(a);
  }
  for (const auto& [api, acts] : by_launch) {
    std::vector<model::StringId> names;
    for (size_t a : acts) names.push_back(p.activities[a].name);
    auto lines = resolver.replayedKernelLines(api, names);
    for (size_t i = 0; i < lines.size(); ++i) replayed[acts[i]] = lines[i];
  }
  return replayed;
}

// A steady activity `a` on the line it is attributed to (`ref`), launched by `call`.
void chargeLine(LineCost& cost, size_t a, const model::GpuActivity& act, const LineRef& ref, const RankTable& ranks,
                const model::ApiCall& call) {
  int64_t ns = act.duration();
  size_t rank_count = ranks.ranks.size();
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
    if (ranks.wait_ns[a] > 0) {
      cost.comm_wait_ns += ranks.wait_ns[a];
      cost.rank_wait_ns.resize(rank_count);
      cost.rank_wait_ns[ranks.activity_rank[a]] += ranks.wait_ns[a];
    }
  }
  auto& stat = cost.by_name[act.name];
  ++stat.count;
  stat.ns += ns;
  chargeWork(cost, act, call, ns);
}

// `replayed`: replayedKernelLines' lines, taken before the activities' own.
void chargeActivities(const model::Profile& p, const LaunchLinks& links, LineResolver& resolver, const RankTable& ranks,
                      const StepWindow& window, const std::vector<std::optional<LineRef>>& replayed, Attribution& out) {
  out.activity_lines.resize(p.activities.size());
  out.activity_steps.assign(p.activities.size(), -1);
  std::map<std::tuple<uint32_t, model::StringId, int32_t>, ContextCost> contexts;
  // (context, the line itself) -> one-off GPU time launched there
  std::map<std::tuple<uint32_t, model::StringId, int32_t>, int64_t> oneoff_contexts;
  std::map<Step*, std::map<std::pair<model::StringId, int32_t>, int64_t>> oneoff_lines;
  LineTally compiled_lines;
  StepSummary& sum = out.step_summary;
  KernelKinds kinds(p.strings);
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& act = p.activities[a];
    int64_t ns = act.duration();
    int64_t api = links.call_of[a];
    out.total_gpu_ns += ns;
    LineRef ref = api >= 0 ? resolver.lineOfCall(static_cast<size_t>(api)) : LineRef{};
    if (a < replayed.size() && replayed[a]) ref = *replayed[a];
    out.activity_lines[a] = ref;
    int64_t host_t = api >= 0 ? p.api_calls[static_cast<size_t>(api)].start_ns : act.start_ns;
    int32_t step_index = window.stepIndexAt(act.pid, host_t);
    out.activity_steps[a] = step_index;
    if (Step* step = step_index >= 0 ? window.stepAt(act.pid, host_t) : nullptr) {
      step->gpu_ns += ns;
      if (act.kind == model::ActivityKind::Kernel) ++step->kernels;
      if (step->gpu_start_ns < 0 || act.start_ns < step->gpu_start_ns) step->gpu_start_ns = act.start_ns;
      step->gpu_end_ns = std::max(step->gpu_end_ns, act.end_ns);
      if (step->kind != StepKind::Steady && ref.file != 0) oneoff_lines[step][{ref.file, ref.line}] += ns;
    }
    if (!window.steady(act.pid, host_t)) {
      sum.oneoff_gpu_ns += ns;
      if (ref.file != 0) {
        out.files[ref.file][ref.line].oneoff_ns += ns;
        oneoff_contexts[{ref.context, ref.file, ref.line}] += ns;
      }
      continue;
    }
    out.steady_gpu_ns += ns;
    RankInfo& rank = out.ranks[ranks.activity_rank[a]];
    rank.steady_gpu_ns += ns;
    if (ranks.exposed_ns[a] >= 0) rank.steady_comm_ns += ns, rank.steady_comm_exposed_ns += ranks.exposed_ns[a];
    if (int64_t wait = ranks.wait_ns[a]; wait >= 0) {
      rank.steady_comm_wait_ns += wait, rank.steady_comm_transfer_ns += ns - wait;
      sum.comm_wait_ns += wait, sum.comm_transfer_ns += ns - wait;
      sum.comm_exposed_wait_ns += exposedWaitNs(ns, wait, std::max<int64_t>(0, ranks.exposed_ns[a]));
      ++rank.steady_paired_collectives;
      if (ranks.caused_ns[a] >= 0) {
        // This rank arrived last (its kernel waited least): the others' waits are its doing.
        rank.steady_caused_wait_ns += ranks.caused_ns[a];
        ++rank.steady_late_collectives;
      }
    }
    // Compute kernels: NCCL's run as long as the slowest rank makes them wait.
    uint8_t kind = act.kind == model::ActivityKind::Kernel ? kinds.of(act.name) : 0;
    if (act.kind == model::ActivityKind::Kernel && !(kind & KernelKinds::kCommunication)) {
      ++sum.kernels;
      sum.kernel_ns += ns;
      if (api >= 0) sum.queue_ns += model::spanNs(p.api_calls[static_cast<size_t>(api)].start_ns, act.start_ns);
      if (kind & KernelKinds::kFp32Matmul) sum.fp32_matmul_ns += ns;
      if (kind & KernelKinds::kTriton) {
        ++sum.triton_kernels;
        sum.triton_ns += ns;
        if (ref.file != 0) {
          auto& w = compiled_lines[{ref.file, ref.line}];
          w.line = ref, w.ns += ns, ++w.count;
        }
      }
    }
    if (ref.file != 0) {
      auto& cc = contexts[{ref.context, ref.file, ref.line}];
      cc.context = ref.context;
      cc.self = ref;
      cc.gpu_ns += ns;
      (ref.backward ? cc.backward_ns : cc.forward_ns) += ns;
    }
    if (ref.file == 0) {
      out.unattributed_gpu_ns += ns;
      continue;
    }
    out.attributed_gpu_ns += ns;
    out.by_method[static_cast<size_t>(ref.method)] += ns;
    LineCost& cost = out.files[ref.file][ref.line];
    chargeLine(cost, a, act, ref, ranks, p.api_calls[static_cast<size_t>(api)]);
    if (!ref.backward) {
      if (model::StringId op = resolver.forwardOpOf(static_cast<size_t>(api))) ++cost.autograd_ops[op];
    }
  }
  for (auto& [key, cc] : contexts) out.context_costs.push_back(cc);
  // One-off time beneath each line: the lines of its context (sorted), and the line itself.
  for (const auto& [key, ns] : oneoff_contexts) {
    const auto& [context, file, line] = key;
    const auto& lines = resolver.contexts().lines(context);
    for (const auto& f : lines) out.files[f.file][f.line].oneoff_inclusive_ns += ns;
    if (!std::binary_search(lines.begin(), lines.end(), FrameLine{file, line}))
      out.files[file][line].oneoff_inclusive_ns += ns;
  }
  sum.compiled_lines = costliestFirst(compiled_lines);
  // What each one-off step ran most.
  for (const auto& [step, lines] : oneoff_lines) {
    auto top =
        std::max_element(lines.begin(), lines.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
    step->top_line = {top->first.first, top->first.second};
  }
}

// Host-side costs: launches and synchronizations, on the line of the call. A launch with a
// correlation id and no GPU record is lost (counted per thread and on its line).
void chargeHostCalls(const model::Profile& p, LineResolver& resolver, const StepWindow& window,
                     const LaunchLinks& links, Attribution& out) {
  std::map<std::pair<uint32_t, uint32_t>, LostRecords> by_thread;
  LineTally sync_lines, lost_lines;
  StepSummary& sum = out.step_summary;
  GraphLaunchNames isGraphLaunch(p);
  std::unordered_map<uint32_t, size_t> rank_of;  // pid -> index into out.ranks, when there are several
  if (out.ranks.size() > 1)
    for (size_t r = 0; r < out.ranks.size(); ++r) rank_of.emplace(out.ranks[r].pid, r);
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const auto& call = p.api_calls[i];
    if (!call.launches && call.sync == model::SyncKind::None) continue;
    bool lost = links.lost(call, i);
    if (call.launches) {
      auto& t = by_thread[{call.pid, call.tid}];
      t.pid = call.pid, t.tid = call.tid;
      ++t.launches;
      t.lost += lost ? 1 : 0;
    }
    LineRef ref = resolver.lineOfCall(i);
    bool steady = window.steady(call.pid, call.start_ns);
    int64_t call_ns = model::spanNs(call.start_ns, call.end_ns);
    if (steady && call.launches) ++sum.launches, sum.launch_api_ns += call_ns;
    if (steady && lost) {
      ++sum.lost_launches;
      auto& w = lost_lines[{ref.file, ref.line}];
      w.line = ref, ++w.count, ++w.ns;
    }
    if (steady && isGraphLaunch(call.name)) ++sum.graph_launches;
    // Syncs on a line of the user's code block the loop; those of other threads (compile
    // workers, NCCL's watchdog) have none and do not.
    if (steady && call.sync != model::SyncKind::None && ref.file != 0) {
      sum.sync_ns += call_ns;
      auto& w = sync_lines[{ref.file, ref.line}];
      w.line = ref, w.ns += call_ns, ++w.count;
    }
    if (ref.file == 0) continue;
    LineCost& cost = out.files[ref.file][ref.line];
    if (lost) ++cost.lost_launches;
    if (!steady) continue;
    if (call.launches) ++cost.launches;
    if (call.sync != model::SyncKind::None) {
      cost.sync_ns += call_ns;
      ++cost.syncs;
      ++cost.sync_apis[call.name];
      if (auto r = rank_of.find(call.pid); r != rank_of.end()) {
        cost.rank_syncs.resize(out.ranks.size()), cost.rank_sync_ns.resize(out.ranks.size());
        ++cost.rank_syncs[r->second], cost.rank_sync_ns[r->second] += call_ns;
      }
    }
  }
  sum.sync_lines = costliestFirst(sync_lines);
  sum.lost_lines = costliestFirst(lost_lines);
  if (sum.graph_launches > 0) {
    // What the graphs leave to the host: the steady launches outside them, by line.
    LineTally outside;
    for (size_t i = 0; i < p.api_calls.size(); ++i) {
      const auto& call = p.api_calls[i];
      if (!call.launches || isGraphLaunch(call.name) || !window.steady(call.pid, call.start_ns)) continue;
      LineRef ref = resolver.lineOfCall(i);
      auto& w = outside[{ref.file, ref.line}];
      w.line = ref, ++w.ns, ++w.count;
    }
    sum.launch_lines = costliestFirst(outside);
  }
  // Each thread's counts go to its process's ranks, found by pid (never every rank per thread:
  // an export of 100k processes made that quadratic).
  std::unordered_map<uint32_t, std::vector<size_t>> ranks_of;
  for (size_t r = 0; r < out.ranks.size(); ++r) ranks_of[out.ranks[r].pid].push_back(r);
  for (const auto& [key, t] : by_thread) {
    out.launches += t.launches;
    out.lost_launches += t.lost;
    if (t.lost > 0) out.lost.push_back(t);
    if (auto it = ranks_of.find(t.pid); it != ranks_of.end())
      for (size_t r : it->second) out.ranks[r].launches += t.launches, out.ranks[r].lost_launches += t.lost;
  }
}

// How much of [a, b) on process `pid` torch.compile spent compiling, and the window that
// covers most of it.
struct CompileOverlap {
  int64_t ns = 0;
  const CompileWindow* top = nullptr;
  LineRef line() const { return top ? LineRef{top->file, top->line, Method::Stack, false} : LineRef{}; }
};
CompileOverlap compileOverlap(const std::vector<CompileWindow>& windows, uint32_t pid, int64_t a, int64_t b) {
  CompileOverlap out;
  int64_t covered_until = a, best = 0;
  for (const auto& w : windows) {
    if (w.start_ns >= b) break;
    if (w.end_ns <= covered_until || (w.pid != 0 && w.pid != pid)) continue;
    int64_t from = std::max(covered_until, w.start_ns), to = std::min(b, w.end_ns);
    if (to <= from) continue;
    out.ns += to - from;
    covered_until = to;
    if (to - from > best) best = to - from, out.top = &w;
  }
  return out;
}

// Gaps of at least `gap_ns` between GPU work on a device, charged to the host line that keeps
// the GPU waiting (LineResolver::hostLineAt); a gap mostly inside a compilation, to the line
// that called the function being compiled.
void chargeIdleGaps(const model::Profile& p, const Options& options, const std::vector<int64_t>& call_of,
                    LineResolver& resolver, const StepWindow& window, Attribution& out) {
  int64_t gap_ns = options.idle_gap_ns;
  if (gap_ns <= 0 || p.activities.empty()) return;
  // A GPU is (process, device): processes of a report may each number their GPU 0.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> by_device;  // activities are sorted by start
  std::vector<uint32_t>* gpu_list = nullptr;                                 // activities come in long runs of one GPU
  std::pair<uint32_t, uint32_t> last_gpu{~0u, ~0u};
  for (uint32_t a = 0; a < p.activities.size(); ++a) {
    if (std::pair(p.activities[a].pid, p.activities[a].device) != last_gpu)
      last_gpu = {p.activities[a].pid, p.activities[a].device}, gpu_list = &by_device[last_gpu];
    gpu_list->push_back(a);
  }
  for (const auto& [gpu, list] : by_device) {
    uint32_t device = gpu.second;
    int64_t busy_until = p.activities[list.front()].end_ns;
    for (size_t i = 1; i < list.size(); ++i) {
      const auto& next = p.activities[list[i]];
      if (model::spanNs(busy_until, next.start_ns) >= gap_ns) {
        IdleGap gap{busy_until, next.start_ns, device, {}};
        if (int64_t api = call_of[list[i]]; api >= 0) gap.line = resolver.hostLineAt(static_cast<uint32_t>(api), gap);
        int64_t idle = model::spanNs(gap.start_ns, gap.end_ns);
        auto compiling = compileOverlap(options.compile_windows, gpu.first, gap.start_ns, gap.end_ns);
        if (compiling.ns * 2 >= idle && compiling.top) gap.line = compiling.line();
        bool steady = window.steady(gpu.first, gap.start_ns + idle / 2);
        if (!steady) out.step_summary.oneoff_idle_ns += idle;
        if (!steady) out.step_summary.oneoff_compile_ns += compiling.ns;
        if (gap.line.file != 0) {
          LineCost& cost = out.files[gap.line.file][gap.line.line];
          if (steady) {
            cost.idle_ns += idle;
            ++cost.idle_gaps;
            if (compiling.ns * 2 >= idle) cost.compile_idle_ns += compiling.ns;
          } else {
            cost.oneoff_idle_ns += idle;
          }
        }
        out.idle_gaps.push_back(gap);
      }
      busy_until = std::max(busy_until, next.end_ns);
    }
  }
}

// Why the GPU of a process waits in one idle gap [ga, gb) that `next` (an activity, or -1) ends:
// the host was blocked in a sync while the GPU drained (sync), fetched data (input) or ran other
// code for a gap of at least `gap_ns` (host), else it could not launch fast enough (launch).
std::pair<Wait, LineRef> classifyGap(const model::Profile& p, int64_t ga, int64_t gb, int64_t next, int64_t gap_ns,
                                     const std::vector<std::pair<int64_t, uint32_t>>& syncs,
                                     const std::vector<int64_t>& call_of, LineResolver& resolver) {
  constexpr int64_t kSlackNs = 50'000;
  auto pos = std::lower_bound(syncs.begin(), syncs.end(), std::make_pair(ga - kSlackNs, uint32_t{0}));
  for (; pos != syncs.end() && pos->first <= gb; ++pos)
    if (p.api_calls[pos->second].start_ns < ga) return {Wait::Sync, resolver.lineOfCall(pos->second)};
  int64_t api = next >= 0 ? call_of[static_cast<size_t>(next)] : -1;
  if (api < 0) return {model::spanNs(ga, gb) >= gap_ns ? Wait::Host : Wait::Launch, LineRef{}};
  if (model::spanNs(ga, gb) >= gap_ns) {
    IdleGap gap{ga, gb, p.activities[static_cast<size_t>(next)].device, {}};
    LineRef line = resolver.hostLineAt(static_cast<uint32_t>(api), gap);
    return {line.input ? Wait::Input : Wait::Host, line};
  }
  return {Wait::Launch, resolver.lineOfCall(static_cast<size_t>(api))};
}

// The steady step of a process closest to its steps' median wall (the last one left out where
// the loop may cut it short), or -1.
int32_t representativeStep(const std::vector<Step>& list) {
  std::vector<int64_t> walls;
  auto usable = [&](size_t k) { return list[k].kind == StepKind::Steady && (k + 1 < list.size() || list.size() <= 3); };
  for (size_t k = 0; k < list.size(); ++k)
    if (usable(k)) walls.push_back(model::spanNs(list[k].window_start_ns, list[k].window_end_ns));
  if (walls.empty()) return -1;
  int64_t median = medianNs(walls);
  int32_t best = -1;
  int64_t best_distance = 0;
  for (size_t k = 0; k < list.size(); ++k) {
    if (!usable(k)) continue;
    int64_t d = std::abs(model::spanNs(list[k].window_start_ns, list[k].window_end_ns) - median);
    if (best < 0 || d < best_distance) best = static_cast<int32_t>(k), best_distance = d;
  }
  return best;
}

using WaitTally = std::map<std::tuple<Wait, model::StringId, int32_t>, WaitLine>;

// pid -> its activities, by start, for the processes with steps.
std::map<uint32_t, std::vector<uint32_t>> activitiesOfSteppedProcesses(const model::Profile& p,
                                                                       const Attribution& out) {
  std::map<uint32_t, std::vector<uint32_t>> acts;
  std::vector<uint32_t>* list = nullptr;  // activities come in long runs of one process
  uint32_t last_pid = ~0u;
  for (uint32_t a = 0; a < p.activities.size(); ++a) {
    if (uint32_t pid = p.activities[a].pid; pid != last_pid) {
      last_pid = pid;
      auto it = out.process_steps.find(pid);
      list = it != out.process_steps.end() && !it->second.list.empty() ? &acts[pid] : nullptr;
    }
    if (list) list->push_back(a);
  }
  return acts;
}

// pid -> its synchronizing calls as (end, call), by end.
std::map<uint32_t, std::vector<std::pair<int64_t, uint32_t>>> syncsByProcess(const model::Profile& p) {
  std::map<uint32_t, std::vector<std::pair<int64_t, uint32_t>>> syncs;
  for (uint32_t i = 0; i < p.api_calls.size(); ++i)
    if (p.api_calls[i].sync != model::SyncKind::None) syncs[p.api_calls[i].pid].emplace_back(p.api_calls[i].end_ns, i);
  for (auto& [pid, list] : syncs) std::sort(list.begin(), list.end());
  return syncs;
}

// A process's median step is the headline's median over its steps alone (GPU side, steady, the
// last one cut short left out): the rank table and the bars once gave the median of its
// host-side steps, warm-up included, beside a headline of another value. Its busy share is on
// the terms of its figures per step (means over the same steps): its GPU busy time over their
// wall, summed; a median of per-step shares beside those means once read "13.9 GPU ms/step in a
// 49.4 ms step, busy 11.8%".
void finishProcess(Attribution::ProcessSteps& steps, RankInfo* rank, const std::vector<int64_t>& own_walls) {
  if (!own_walls.empty()) {
    steps.median_ns = medianNs(own_walls);
    if (rank) rank->median_step_ns = steps.median_ns;
  }
  if (rank && rank->steady_wall_ns > 0)
    rank->busy_share =
        std::min(1.0, static_cast<double>(rank->steady_busy_ns) / static_cast<double>(rank->steady_wall_ns));
}

// Over every process's steady steps: the medians and range of the walls the medians stand on,
// and each cause's lines, costliest first.
void finishSummary(StepSummary& sum, const std::vector<int64_t>& walls, const std::vector<int64_t>& busies,
                   const std::vector<double>& shares, const WaitTally& lines) {
  sum.busy_share = median(shares);
  sum.median_steps = static_cast<int>(walls.size());
  for (const auto& [key, w] : lines)
    if (w.line.file != 0) sum.wait_lines[static_cast<size_t>(std::get<0>(key))].push_back(w);
  for (auto& list : sum.wait_lines)
    std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.ns > y.ns; });
  if (!walls.empty()) {
    sum.wall_ns = medianNs(walls);
    sum.wall_min_ns = *std::min_element(walls.begin(), walls.end());
    sum.wall_max_ns = *std::max_element(walls.begin(), walls.end());
    sum.busy_ns = medianNs(busies);
  }
}

// Per step: GPU busy time and idle time by cause; over the steady steps: wall and busy medians,
// and GPU idle time by cause with its lines; the representative step's idle pieces.
void summarizeSteps(const model::Profile& p, const Options& options, const std::vector<int64_t>& call_of,
                    LineResolver& resolver, std::vector<GapCause>& gap_cause, Attribution& out) {
  int64_t gap_ns = options.idle_gap_ns;
  StepSummary& sum = out.step_summary;
  auto acts = activitiesOfSteppedProcesses(p, out);
  auto syncs = syncsByProcess(p);
  std::vector<int64_t> walls, busies;
  std::vector<double> shares;
  WaitTally lines;
  for (auto& [pid, steps] : out.process_steps) {
    if (steps.list.empty()) continue;
    RankInfo* rank = nullptr;
    for (auto& r : out.ranks)
      if (r.pid == pid) rank = &r;
    std::vector<BusyInterval> busy;
    busy.reserve(acts[pid].size());  // at most one each: grown by doubling, fresh pages again and again
    std::vector<int64_t> own_walls;  // this process's steady walls, as the headline's median takes them
    for (uint32_t a : acts[pid]) addBusy(busy, p.activities[a].start_ns, p.activities[a].end_ns, a);
    const auto& pid_syncs = syncs[pid];
    const uint32_t process = pid;  // a structured binding cannot be captured (C++17 rules in clang 14)
    // Splits one idle piece of a step into its causes: `take(wait, line, ns)` for each part.
    auto classify = [&](int64_t from, int64_t to, const BusyInterval* before, const BusyInterval* after, int64_t e,
                        bool record, auto&& take) {
      int64_t ga = before ? before->end : from;
      int64_t gb = after ? after->start : e;
      int64_t piece = to - from;
      // The compiler's share of the piece first; the rest by what the host did.
      auto compiling = compileOverlap(options.compile_windows, process, from, to);
      if (compiling.ns > 0) {
        take(Wait::Compile, compiling.line(), compiling.ns);
        piece -= compiling.ns;
      }
      if (piece > 0) {
        auto [wait, line] =
            classifyGap(p, ga, gb, after ? int64_t{after->first} : -1, gap_ns, pid_syncs, call_of, resolver);
        take(wait, line, piece);
        if (record && after) gap_cause[after->first].wait = static_cast<int8_t>(wait);
      }
      // The compiler's part of the gap stays its part in the replay.
      if (record && after && compiling.ns > 0)
        gap_cause[after->first].compile =
            static_cast<uint8_t>(std::min<int64_t>(255, 255 * compiling.ns / std::max<int64_t>(1, to - from)));
    };
    for (size_t k = 0; k < steps.list.size(); ++k) {
      auto& step = steps.list[k];
      bool steady = step.kind == StepKind::Steady;
      if (step.kind == StepKind::Warmup) ++sum.warmup;
      if (step.kind == StepKind::Outlier) ++sum.outliers;
      if (step.kind == StepKind::Lost) ++sum.lost;
      // The GPU's side of the step where it launched work, else the host's.
      int64_t s = step.start_ns, e = step.end_ns;
      bool last = k + 1 == steps.list.size();
      if (step.gpu_start_ns >= 0) {
        s = step.gpu_start_ns;
        e = !last && steps.list[k + 1].gpu_start_ns > s ? steps.list[k + 1].gpu_start_ns : std::max(s, step.gpu_end_ns);
      }
      step.window_start_ns = s, step.window_end_ns = std::max(s, e);
      int64_t busy_ns =
          walkBusy(busy, s, e, [&](int64_t from, int64_t to, const BusyInterval* before, const BusyInterval* after) {
            classify(from, to, before, after, e, steady, [&](Wait wait, const LineRef& line, int64_t ns) {
              step.wait_ns[static_cast<size_t>(wait)] += ns;
              if (!steady) return;
              sum.wait_ns[static_cast<size_t>(wait)] += ns;
              auto& w = lines[{wait, line.file, line.line}];
              w.line = line, w.ns += ns, ++w.count;
            });
          });
      step.busy_ns = busy_ns;
      step.compile_ns = compileOverlap(options.compile_windows, pid, std::min(s, step.start_ns), e).ns;
      if (!steady) continue;
      ++sum.steady;
      if (rank) ++rank->steady_steps;
      sum.gpu_ns += step.gpu_ns;
      if (last && steps.list.size() > 3) continue;  // cut short where the loop ends: no median figure
      walls.push_back(model::spanNs(s, e));
      own_walls.push_back(model::spanNs(s, e));
      busies.push_back(busy_ns);
      if (int64_t wall = model::spanNs(s, e); wall > 0) {
        double share = std::min(1.0, static_cast<double>(busy_ns) / static_cast<double>(wall));
        shares.push_back(share);
      }
      if (rank) rank->steady_wall_ns += model::spanNs(s, e), rank->steady_busy_ns += busy_ns;
    }
    finishProcess(steps, rank, own_walls);
    // The representative step walked again, its idle pieces kept (for a timeline).
    steps.representative = representativeStep(steps.list);
    if (steps.representative >= 0) {
      const Step& step = steps.list[static_cast<size_t>(steps.representative)];
      auto& gaps = steps.representative_gaps;  // a structured binding cannot be captured (clang 14)
      int64_t e = step.window_end_ns;
      walkBusy(busy, step.window_start_ns, e,
               [&](int64_t from, int64_t to, const BusyInterval* before, const BusyInterval* after) {
                 int64_t at = from;
                 classify(from, to, before, after, e, false, [&](Wait wait, const LineRef& line, int64_t ns) {
                   gaps.push_back({at, at + ns, wait, line});
                   at += ns;
                 });
               });
    }
  }
  finishSummary(sum, walls, busies, shares, lines);
}

}  // namespace

namespace {

// What attribution looks things up in. The line resolver and the rest share nothing but the
// profile: they are built at once where the caller lends a thread.
struct Indexes {
  std::optional<LineResolver> resolver;
  std::optional<CallsByCorrelation> calls;
  std::optional<LaunchLinks> links;
  RankTable ranks;
};

// `a` and `b` at once where the caller lends a thread (Options::runner), else one after the
// other. They must share nothing that either changes.
void atOnce(const Options& options, const std::function<void()>& a, const std::function<void()>& b) {
  if (options.runner)
    options.runner->runAll(2, [&](size_t i) { i == 0 ? a() : b(); });
  else
    a(), b();
}

void buildIndexes(const model::Profile& profile, const Options& options, Indexes& out) {
  atOnce(
      options, [&] { out.resolver.emplace(profile, options); },
      [&] {
        out.calls.emplace(profile);
        out.links.emplace(profile, *out.calls);
        out.ranks = buildRanks(profile);
      });
}

}  // namespace

Attribution attribute(const model::Profile& profile, const Options& options) {
  Attribution out;
  Indexes indexes;
  buildIndexes(profile, options, indexes);
  LineResolver& resolver = *indexes.resolver;
  const CallsByCorrelation& calls = *indexes.calls;
  LaunchLinks& links = *indexes.links;
  RankTable& ranks = indexes.ranks;
  out.ranks = ranks.ranks;
  for (const auto& r : out.ranks) out.comm_ns += r.comm_ns, out.comm_exposed_ns += r.comm_exposed_ns;
  std::set<uint32_t> pids;  // calls come in long runs of one process: insert on a change only
  for (const auto& r : out.ranks) pids.insert(r.pid);
  uint32_t last = ~0u;
  for (const auto& c : profile.api_calls)
    if (c.pid != last) pids.insert(last = c.pid);
  out.processes = static_cast<uint32_t>(pids.size());
  // The steps, found while the resolver puts every launch on its line (a third of the work on
  // a large profile). The steps are told from the backtraces alone, which the resolver reads
  // and never changes. The lines are resolved in chargeActivities' order (replayed kernels
  // first, then each activity's call), so contexts are numbered as on one thread.
  std::vector<std::optional<LineRef>> replayed;
  atOnce(
      options,
      [&] {
        replayed = replayedKernelLines(profile, links, resolver);
        for (int64_t api : links.call_of)
          if (api >= 0) resolver.lineOfCall(static_cast<size_t>(api));
      },
      [&] {
        detectSteps(profile, options, resolver.backtraces(), links.call_of, out);
        markLostSteps(profile, links, out);
        countSteadySteps(out);
      });
  StepWindow window(out);
  {
    std::vector<int32_t> step_of(profile.activities.size(), -1);
    for (size_t a = 0; a < profile.activities.size(); ++a) {
      if (ranks.exposed_ns[a] < 0) continue;
      const auto& act = profile.activities[a];
      int64_t api = links.call_of[a];
      int64_t host_t = api >= 0 ? profile.api_calls[static_cast<size_t>(api)].start_ns : act.start_ns;
      if (const Step* step = window.stepAt(act.pid, host_t))
        step_of[a] = static_cast<int32_t>(step - out.process_steps[act.pid].list.data());
      out.collectives.push_back({static_cast<uint32_t>(a), static_cast<int32_t>(api), step_of[a], ranks.exposed_ns[a]});
    }
    pairCollectives(profile, step_of, ranks);
    for (size_t r = 0; r < ranks.ranks.size(); ++r) {
      auto& to = out.ranks[r];
      const auto& from = ranks.ranks[r];
      to.comm_wait_ns = from.comm_wait_ns, to.comm_transfer_ns = from.comm_transfer_ns;
      to.paired_collectives = from.paired_collectives, to.late_collectives = from.late_collectives;
    }
  }
  chargeActivities(profile, links, resolver, ranks, window, replayed, out);
  chargeHostCalls(profile, resolver, window, links, out);
  for (auto& r : out.ranks)
    if (auto it = out.process_steps.find(r.pid); it != out.process_steps.end())
      r.steps = it->second.count, r.median_step_ns = it->second.median_ns;
  chargeIdleGaps(profile, options, links.call_of, resolver, window, out);
  std::vector<GapCause> gap_cause(profile.activities.size());
  summarizeSteps(profile, options, links.call_of, resolver, gap_cause, out);
  // The steps' parts and the estimate without the profiler at once: they read the steps as
  // summarized and write apart (the parts each step's busy split and the summary's busy time;
  // the estimate its own figures and each step's capture cost).
  ReplayInput replay{profile, links.call_of, gap_cause, &ranks.wait_ns, waitExplained(out)};
  atOnce(
      options,
      [&] {
        splitStepBusy(profile, ranks, out);
        busyOfOwnWork(out);
      },
      [&] {
        if (options.estimate_unprofiled) estimateWithoutProfiler(replay, options, out);
      });
  out.memory_use_lines.reserve(profile.memory_uses.size());
  out.memory_use_ops.reserve(profile.memory_uses.size());
  for (const auto& u : profile.memory_uses) {
    int64_t api = calls.callOf(u.pid, u.correlation);
    out.memory_use_lines.push_back(api >= 0 ? resolver.lineOfCall(static_cast<size_t>(api))
                                            : resolver.lineAtTime(u.pid, u.tid, u.time_ns));
    out.memory_use_ops.push_back(u.segment ? -1 : resolver.operatorAtTime(u.pid, u.tid, u.time_ns));
  }
  out.contexts = resolver.contexts().release();
  if (options.fused_lines) {
    for (const auto& [at, others] : *options.fused_lines) {
      auto file = out.files.find(at.first);
      if (file == out.files.end()) continue;
      if (auto line = file->second.find(at.second); line != file->second.end()) line->second.fused_with = others;
    }
  }
  return out;
}

}  // namespace sightline::attribution
