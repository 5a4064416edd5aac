// Host calls and their GPU work (launch_links.h).
#include "analysis/attribution/launch_links.h"

#include <algorithm>
#include <unordered_map>

namespace sightline::attribution {

LaunchLinks::LaunchLinks(const model::Profile& p, const CallsByCorrelation& calls)
    : call_of(p.activities.size(), -1), has_activity(p.api_calls.size(), false), strings_(p.strings) {
  size_t hint = 0;
  for (size_t a = 0; a < p.activities.size(); ++a) {
    call_of[a] = calls.callOf(p.activities[a].pid, p.activities[a].correlation, hint);
    if (call_of[a] >= 0) has_activity[static_cast<size_t>(call_of[a])] = true;
  }
  lostCopies(p);
}

void LaunchLinks::lostCopies(const model::Profile& p) {
  std::unordered_map<uint64_t, std::vector<size_t>> copies;  // thread -> calls
  for (size_t i = 0; i < p.api_calls.size(); ++i)
    if (missing(p.api_calls[i], i) && !launchesKernels(p.api_calls[i].name))
      copies[threadOf(p.api_calls[i])].push_back(i);
  if (copies.empty()) return;
  std::unordered_map<uint64_t, std::vector<std::pair<int64_t, bool>>> kernels;  // thread -> (start, lost)
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const auto& call = p.api_calls[i];
    if (!call.launches || call.correlation <= 0 || !launchesKernels(call.name)) continue;
    if (auto it = copies.find(threadOf(call)); it != copies.end())
      kernels[it->first].emplace_back(call.start_ns, !has_activity[i]);
  }
  for (auto& [thread, list] : kernels) {
    std::sort(list.begin(), list.end());
    for (size_t i : copies[thread]) {
      auto next = std::lower_bound(list.begin(), list.end(), std::make_pair(p.api_calls[i].start_ns, false));
      if (next != list.end() && next->second) lost_copies_.insert(i);
    }
  }
}

void markLostSteps(const model::Profile& p, const LaunchLinks& links, Attribution& out) {
  // A thread that lost the records of (nearly) all its launches lost them in every step (the
  // autograd thread's backward pass, once): its steps are kept, with what the other threads ran,
  // and the loss is told as the thread's; only steps whose own records went missing (the capture
  // ending before the GPU delivered them) are left out.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> threads;  // thread -> (launches, lost)
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const auto& call = p.api_calls[i];
    if (!call.launches || call.correlation <= 0) continue;
    auto& t = threads[LaunchLinks::threadOf(call)];
    ++t.first;
    t.second += links.lost(call, i) ? 1 : 0;
  }
  auto threadLost = [&](const model::ApiCall& call) {
    const auto& t = threads[LaunchLinks::threadOf(call)];
    return wholeThreadLost(t.first, t.second);
  };
  std::map<const Step*, std::pair<uint32_t, uint32_t>> counts;  // step -> (launches, lost)
  StepWindow window(out);
  for (size_t i = 0; i < p.api_calls.size(); ++i) {
    const auto& call = p.api_calls[i];
    if (!call.launches || call.correlation <= 0 || threadLost(call)) continue;
    if (Step* step = window.stepAt(call.pid, call.start_ns)) {
      auto& c = counts[step];
      ++c.first;
      c.second += links.lost(call, i) ? 1 : 0;
    }
  }
  for (auto& [pid, steps] : out.process_steps)
    for (auto& step : steps.list) {
      auto it = counts.find(&step);
      if (it != counts.end() && 2 * it->second.second >= it->second.first && it->second.second > 0)
        step.kind = StepKind::Lost;
    }
}

}  // namespace sightline::attribution
