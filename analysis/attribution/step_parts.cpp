// Each step's busy time by what kept the GPU busy: merged intervals per process and kind,
// measured over each step's window by binary search (steps are few, activities many).
#include "analysis/attribution/step_parts.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "analysis/attribution/steps.h"

namespace sightline::attribution {
namespace {

// Disjoint intervals in time order, with the covered time before each (prefix sums).
class Coverage {
 public:
  // Intervals come in start order (Profile::activities is sorted by start): merged as they come.
  void add(int64_t start, int64_t end) {
    if (!merged_.empty() && start <= merged_.back().second)
      merged_.back().second = std::max(merged_.back().second, end);
    else
      merged_.emplace_back(start, end);
  }
  void finish() {
    before_.resize(merged_.size() + 1);
    for (size_t i = 0; i < merged_.size(); ++i)
      before_[i + 1] = before_[i] + model::spanNs(merged_[i].first, merged_[i].second);
  }
  // Covered time up to t.
  int64_t upTo(int64_t t) const {
    auto it = std::upper_bound(merged_.begin(), merged_.end(), t,
                               [](int64_t time, const std::pair<int64_t, int64_t>& iv) { return time < iv.first; });
    if (it == merged_.begin()) return 0;
    size_t i = static_cast<size_t>(it - merged_.begin()) - 1;
    return before_[i] + model::spanNs(merged_[i].first, std::min(t, merged_[i].second));
  }
  int64_t within(int64_t a, int64_t b) const { return b > a ? upTo(b) - upTo(a) : 0; }
  // Whether [a, b) overlaps the coverage (within(a, b) > 0), for spans asked in start order:
  // `cursor` (0 at first) walks the intervals once.
  bool overlaps(int64_t a, int64_t b, size_t& cursor) const {
    while (cursor < merged_.size() && merged_[cursor].second <= a) ++cursor;
    return b > a && cursor < merged_.size() && merged_[cursor].first < b;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> merged_;
  std::vector<int64_t> before_;
};

struct ProcessCoverage {
  Coverage compute, compute_or_copy;
  // Collectives by start: (start, end, duration, wait), for the steps' waits.
  std::vector<std::array<int64_t, 4>> collectives;
  Coverage collective_cover;
  // Compute kernels by start: (start, activity index), and each kernel name's fastest instance.
  std::vector<std::pair<int64_t, size_t>> kernels;
  std::unordered_map<model::StringId, int64_t> fastest;
};

// Of each step's compute, what kernels that ran beside a collective took over their name's
// fastest instance: (start, excess) by start.
std::vector<std::pair<int64_t, int64_t>> slowedBesideCollectives(const model::Profile& p,
                                                                 const ProcessCoverage& cover) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t cursor = 0;
  for (const auto& [start, a] : cover.kernels) {
    const auto& act = p.activities[a];
    if (!cover.collective_cover.overlaps(act.start_ns, act.end_ns, cursor)) continue;
    int64_t excess = act.duration() - cover.fastest.at(act.name);
    if (excess > 0) out.emplace_back(start, excess);
  }
  return out;
}

}  // namespace

void splitStepBusy(const model::Profile& p, const RankTable& ranks, Attribution& out) {
  std::map<uint32_t, ProcessCoverage> by_pid;
  for (const auto& [pid, steps] : out.process_steps)
    if (!steps.list.empty()) by_pid[pid];
  if (by_pid.empty()) return;
  auto it = by_pid.end();
  uint32_t last_pid = ~0u;  // activities come in long runs of one process: looked up on a change
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& act = p.activities[a];
    if (act.pid != last_pid) last_pid = act.pid, it = by_pid.find(act.pid);
    if (it == by_pid.end()) continue;
    bool comm = a < ranks.exposed_ns.size() && ranks.exposed_ns[a] >= 0;
    if (comm) {
      int64_t wait = a < ranks.wait_ns.size() ? std::max<int64_t>(0, ranks.wait_ns[a]) : 0;
      it->second.collectives.push_back({act.start_ns, act.end_ns, act.duration(), std::min(wait, act.duration())});
      it->second.collective_cover.add(act.start_ns, act.end_ns);
      continue;
    }
    if (act.kind == model::ActivityKind::Kernel || act.kind == model::ActivityKind::Graph) {
      it->second.compute.add(act.start_ns, act.end_ns);
      if (act.kind == model::ActivityKind::Kernel) {
        it->second.kernels.emplace_back(act.start_ns, a);
        auto [f, added] = it->second.fastest.try_emplace(act.name, act.duration());
        if (!added) f->second = std::min(f->second, act.duration());
      }
    }
    it->second.compute_or_copy.add(act.start_ns, act.end_ns);
  }
  for (auto& [pid, cover] : by_pid) {
    cover.compute.finish();
    cover.compute_or_copy.finish();
    cover.collective_cover.finish();
    auto slowed = slowedBesideCollectives(p, cover);
    std::vector<int64_t> slowed_before(slowed.size() + 1, 0);  // prefix sums by start
    for (size_t i = 0; i < slowed.size(); ++i) slowed_before[i + 1] = slowed_before[i] + slowed[i].second;
    auto slowedFrom = [&](int64_t t) {
      return slowed_before[static_cast<size_t>(
          std::lower_bound(slowed.begin(), slowed.end(), std::pair<int64_t, int64_t>{t, INT64_MIN}) - slowed.begin())];
    };
    for (auto& step : out.process_steps.at(pid).list) {  // at(): it runs beside the estimate
      int64_t s = step.window_start_ns, e = step.window_end_ns;
      if (e <= s) continue;
      int64_t compute = cover.compute.within(s, e);
      int64_t with_copies = cover.compute_or_copy.within(s, e);
      step.compute_ns = compute;
      step.compute_slowed_ns = std::min(compute, slowedFrom(e) - slowedFrom(s));
      step.copy_ns = with_copies - compute;
      step.comm_ns = std::max<int64_t>(0, step.busy_ns - with_copies);
      // Of the step's collectives (by start in the window), the share spent waiting.
      int64_t total = 0, waited = 0;
      auto first = std::lower_bound(cover.collectives.begin(), cover.collectives.end(), std::array<int64_t, 4>{s});
      for (auto c = first; c != cover.collectives.end() && (*c)[0] < e; ++c) total += (*c)[2], waited += (*c)[3];
      if (total > 0)
        step.comm_wait_ns = static_cast<int64_t>(static_cast<double>(step.comm_ns) * static_cast<double>(waited) /
                                                 static_cast<double>(total));
    }
  }
}

// The summary's busy time and share, the verdict's "GPU busy", are the GPU's own work: each
// steady step's busy time less its communication spent waiting for the last rank (NCCL kernels
// spinning while a late rank catches up; the "ranks waiting" cause names that time). Counted
// as busy, they called a step of 60% compute and 30% waiting GPU-bound (4-GPU DDP) and left
// the waiting no idle time to be in. The same steps as summarizeSteps's medians.
void busyOfOwnWork(Attribution& out) {
  std::vector<int64_t> busies;
  std::vector<double> shares;
  bool waited = false;
  size_t processes = 0;
  for (const auto& [pid, steps] : out.process_steps) {
    processes += !steps.list.empty();
    for (size_t k = 0; k < steps.list.size(); ++k) {
      const Step& step = steps.list[k];
      if (step.kind != StepKind::Steady) continue;
      if (k + 1 == steps.list.size() && steps.list.size() > 3) continue;  // cut short where the loop ends
      waited |= step.comm_wait_ns > 0;
      int64_t own = std::max<int64_t>(0, step.busy_ns - step.comm_wait_ns);
      int64_t wall = step.window_end_ns - step.window_start_ns;
      busies.push_back(own);
      if (wall > 0) shares.push_back(std::min(1.0, static_cast<double>(own) / static_cast<double>(wall)));
    }
  }
  if (!waited) return;
  StepSummary& sum = out.step_summary;
  // Over several ranks the mean, as every per-step figure beside it: a median of one rank that
  // waits (3% busy) and one that computes (98%) is one rank's figure, not the GPUs'.
  if (processes > 1) {
    auto mean = [](const auto& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); };
    if (!busies.empty()) sum.busy_ns = static_cast<int64_t>(mean(busies));
    if (!shares.empty()) sum.busy_share = mean(shares);
    return;
  }
  if (!busies.empty()) sum.busy_ns = medianNs(busies);
  if (!shares.empty()) sum.busy_share = median(shares);
}

void chargeCaptureToSteps(const model::Profile& p, const CaptureCosts& costs, double scale, Attribution& out) {
  if (p.capture.empty()) return;
  for (auto& [pid, steps] : out.process_steps)
    for (auto& step : steps.list) {
      double ns = 0;
      for (size_t k = 0; k < model::kCaptureEventKinds; ++k)
        ns += p.capture.count(pid, static_cast<model::CaptureEvent>(k), step.start_ns, step.end_ns) * costs[k];
      step.capture_ns = static_cast<int64_t>(ns * scale);
    }
}

}  // namespace sightline::attribution
