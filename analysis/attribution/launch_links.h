// Host calls and their GPU work: the step a host time falls in, the call that launched each
// activity, and which launches lost their GPU records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/search_near.h"
#include "analysis/model/profile.h"
#include "analysis/model/sorted_runs.h"

namespace sightline::attribution {

// Which step a host time falls in, per process. With steps known, only steady steps count
// per step; a process without steps of its own counts whole (nothing says what to leave out).
class StepWindow {
 public:
  explicit StepWindow(Attribution& out) {
    for (auto& [pid, steps] : out.process_steps) {
      if (steps.list.empty()) continue;
      auto& list = by_pid_[pid];
      for (auto& s : steps.list) list.push_back(&s);
    }
  }
  // The step of `pid` running at host time t, or null.
  Step* stepAt(uint32_t pid, int64_t t) const {
    auto [s, index] = find(pid, t);
    return s;
  }
  // Its index in the process's steps (Attribution::ProcessSteps::list), or -1.
  int32_t stepIndexAt(uint32_t pid, int64_t t) const { return find(pid, t).second; }
  std::pair<Step*, int32_t> find(uint32_t pid, int64_t t) const {
    auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return {nullptr, -1};
    const auto& list = it->second;
    auto pos =
        std::upper_bound(list.begin(), list.end(), t, [](int64_t time, const Step* s) { return time < s->start_ns; });
    if (pos == list.begin()) return {nullptr, -1};
    Step* s = *(pos - 1);
    if (t < s->end_ns || (pos == list.end() && t == s->end_ns))
      return {s, static_cast<int32_t>(pos - 1 - list.begin())};
    return {nullptr, -1};
  }
  bool steady(uint32_t pid, int64_t t) const {
    if (!by_pid_.count(pid)) return true;
    const Step* s = stepAt(pid, t);
    return s && s->kind == StepKind::Steady;
  }

 private:
  std::map<uint32_t, std::vector<Step*>> by_pid_;
};

// (process, correlation) -> API call index, sorted: millions of entries, so not a map.
class CallsByCorrelation {
 public:
  explicit CallsByCorrelation(const model::Profile& p) {
    entries_.reserve(p.api_calls.size());
    for (uint32_t i = 0; i < p.api_calls.size(); ++i)
      if (p.api_calls[i].correlation > 0)
        entries_.emplace_back(model::correlationKey(p.api_calls[i].pid, p.api_calls[i].correlation), i);
    // A process's calls, in time order, mostly come with rising correlation ids.
    model::stableSortRuns(entries_.begin(), entries_.end(), std::less<>());
  }
  // The call that launched `activity`, or -1.
  int64_t callOf(const model::GpuActivity& activity) const { return callOf(activity.pid, activity.correlation); }
  int64_t callOf(uint32_t pid, int64_t correlation) const {
    if (correlation <= 0) return -1;
    auto key = model::correlationKey(pid, correlation);
    return found(std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(key, uint32_t{0})), key);
  }
  // The same, searched from `hint` (where the last search ended): activities come in
  // correlation order mostly, so the answer is mostly a step away (search_near.h).
  int64_t callOf(uint32_t pid, int64_t correlation, size_t& hint) const {
    if (correlation <= 0) return -1;
    auto key = model::correlationKey(pid, correlation);
    auto it = lowerBoundNear(entries_.begin(), entries_.end(),
                             entries_.begin() + static_cast<std::ptrdiff_t>(std::min(hint, entries_.size())),
                             std::make_pair(key, uint32_t{0}));
    hint = static_cast<size_t>(it - entries_.begin());
    return found(it, key);
  }

 private:
  using Entries = std::vector<std::pair<uint64_t, uint32_t>>;
  int64_t found(Entries::const_iterator it, uint64_t key) const {
    return it != entries_.end() && it->first == key ? static_cast<int64_t>(it->second) : -1;
  }
  Entries entries_;
};

// Per activity, the API call that launched it (-1: none recorded); per call, whether any
// activity names it (a launch without one lost its GPU records).
struct LaunchLinks {
  std::vector<int64_t> call_of;
  std::vector<bool> has_activity;
  LaunchLinks(const model::Profile& p, const CallsByCorrelation& calls);
  // A launch whose GPU work never arrived: a kernel launch without its kernel, or a copy or fill
  // without its record whose thread's next kernel launch lost its kernel too. Not otherwise: a
  // zero-byte cudaMemsetAsync (cuDNN's RNNs make hundreds) puts nothing on the GPU, and a whole
  // run that exited normally was called 1% lost for them.
  bool lost(const model::ApiCall& call, size_t i) const {
    if (!missing(call, i)) return false;
    return launchesKernels(call.name) || lost_copies_.count(i) > 0;
  }
  // The call's thread, one key across processes.
  static uint64_t threadOf(const model::ApiCall& call) { return uint64_t{call.pid} << 32 | call.tid; }

 private:
  bool missing(const model::ApiCall& call, size_t i) const {
    return call.launches && call.correlation > 0 && !has_activity[i];
  }
  bool launchesKernels(model::StringId name) const {
    auto [it, added] = kernel_launch_.try_emplace(name, false);
    if (added) it->second = strings_[name].find("Launch") != std::string_view::npos;
    return it->second;
  }
  // The copies and fills without a record that lie in a stretch of lost kernels.
  void lostCopies(const model::Profile& p);
  const model::StringTable& strings_;
  mutable std::unordered_map<model::StringId, bool> kernel_launch_;
  std::unordered_set<size_t> lost_copies_;  // indices into api_calls
};

// Steps whose launches mostly have no GPU record (nsys ended the app, or CUPTI dropped its
// buffers): Lost, so no per-step figure describes work that is missing.
void markLostSteps(const model::Profile& p, const LaunchLinks& links, Attribution& out);

}  // namespace sightline::attribution
