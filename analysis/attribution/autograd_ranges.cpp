// Range nesting and autograd pairing.
#include "analysis/attribution/autograd_ranges.h"

#include <algorithm>
#include <tuple>

#include "analysis/attribution/search_near.h"
#include "analysis/attribution/thread_nesting.h"
#include "analysis/attribution/user_files.h"
#include "analysis/model/sorted_runs.h"

namespace sightline::attribution {

namespace {
constexpr std::string_view kEvaluateFunction = "autograd::engine::evaluate_function: ";

uint64_t seqKey(const model::NvtxRange& r) {
  return (static_cast<uint64_t>(r.pid) << 32) | static_cast<uint32_t>(r.seq);
}
}  // namespace

AutogradRanges::AutogradRanges(const model::Profile& profile) : profile_(profile) {
  const auto& ranges = profile_.ranges;
  parent_ = enclosingOnThread(ranges);
  op_range_.resize(ranges.size());
  std::unordered_map<model::StringId, bool> op_names;
  forward_by_seq_.reserve(static_cast<size_t>(
      std::count_if(ranges.begin(), ranges.end(), [](const model::NvtxRange& r) { return r.seq >= 0; })));
  for (uint32_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    if (r.op != 0) {
      auto [it, added] = op_names.emplace(r.op, false);
      if (added) it->second = contains(profile_.strings[r.op], "::") || isBackwardOp(r);
      op_range_[i] = it->second;
    }
    if (r.seq >= 0 && !isBackwardOp(r)) forward_by_seq_.push_back({seqKey(r), r.start_ns, i});
  }
  // In range order a process's seqs mostly rise: few runs to merge.
  model::stableSortRuns(forward_by_seq_.begin(), forward_by_seq_.end(), std::less<>());
  indexThreads();
}

void AutogradRanges::indexThreads() {
  const auto& ranges = profile_.ranges;
  auto thread = [&](uint32_t i) { return model::threadKey(ranges[i].pid, ranges[i].tid); };
  auto at = [&](uint32_t k) { return order_.empty() ? k : order_[k]; };
  // One run per thread, by start; false when a thread comes back or goes back in time.
  auto index = [&] {
    starts_.clear();
    by_thread_.clear();
    starts_.reserve(ranges.size());
    ThreadRun* run = nullptr;  // the thread's run being read
    for (uint32_t k = 0; k < ranges.size(); ++k) {
      uint32_t i = at(k);
      bool continues = k > 0 && thread(at(k - 1)) == thread(i);
      if (continues && ranges[i].start_ns < starts_.back()) return false;
      if (!continues) {
        auto [it, added] = by_thread_.emplace(thread(i), ThreadRun{k, k, k});
        if (!added) return false;
        run = &it->second;
      }
      run->end = k + 1;
      starts_.push_back(ranges[i].start_ns);
    }
    return true;
  };
  if (index()) return;
  // A profile not grouped as readers leave it: searched through a sorted order.
  order_.resize(ranges.size());
  for (uint32_t i = 0; i < ranges.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
    return std::pair(thread(a), ranges[a].start_ns) < std::pair(thread(b), ranges[b].start_ns);
  });
  index();
}

bool AutogradRanges::isBackwardOp(const model::NvtxRange& r) const {
  return r.op != 0 && contains(profile_.strings[r.op], "Backward");
}

int AutogradRanges::forwardRangeFor(const model::NvtxRange& backward) const {
  if (backward.seq < 0) return -1;
  SeqEntry probe{seqKey(backward), backward.start_ns, ~0u};
  // From where the last search ended: the backward pass meets its ops in (reverse) seq order.
  auto pos = upperBoundNear(forward_by_seq_.begin(), forward_by_seq_.end(),
                            forward_by_seq_.begin() + static_cast<std::ptrdiff_t>(seq_hint_), probe);
  seq_hint_ = static_cast<size_t>(pos - forward_by_seq_.begin());
  if (pos == forward_by_seq_.begin() || (pos - 1)->key != probe.key) return -1;
  return static_cast<int>((pos - 1)->range);
}

int AutogradRanges::backwardChildOf(int range) const {
  const auto& e = profile_.ranges[static_cast<size_t>(range)];
  for (size_t j = static_cast<size_t>(range) + 1; j < profile_.ranges.size(); ++j) {
    const auto& r = profile_.ranges[j];
    if (r.pid != e.pid || r.tid != e.tid || r.start_ns > e.end_ns) break;
    if (r.seq >= 0 && isBackwardOp(r)) return static_cast<int>(j);
  }
  return -1;
}

int AutogradRanges::innermostRange(uint32_t pid, uint32_t tid, int64_t t) const {
  auto it = by_thread_.find(model::threadKey(pid, tid));
  if (it == by_thread_.end()) return -1;
  const ThreadRun& run = it->second;
  // The last start at or before t, searched from the last answer (a thread's calls come in
  // time order).
  const auto begin = starts_.begin() + run.first, end = starts_.begin() + run.end;
  auto pos = upperBoundNear(begin, end, starts_.begin() + run.last, t);
  if (pos == begin) return -1;
  auto k = static_cast<size_t>(pos - starts_.begin()) - 1;
  run.last = static_cast<uint32_t>(k);
  int j = static_cast<int>(order_.empty() ? k : order_[k]);
  while (j >= 0 && profile_.ranges[static_cast<size_t>(j)].end_ns < t) j = parent_[static_cast<size_t>(j)];
  return j;
}

int AutogradRanges::outermostAutograd(int range) const {
  int found = -1;
  for (int j = range; j >= 0; j = parent_[static_cast<size_t>(j)])
    if (op_range_[static_cast<size_t>(j)]) found = j;
  return found;
}

std::string operatorName(const model::Profile& profile, const model::NvtxRange& range) {
  std::string_view name = profile.strings[range.op != 0 ? range.op : range.text];
  if (name.starts_with(kEvaluateFunction)) name.remove_prefix(kEvaluateFunction.size());
  return std::string(name);
}

model::StringId AutogradRanges::forwardOpOf(const model::ApiCall& c) const {
  int outer = outermostAutograd(innermostRange(c.pid, c.tid, c.start_ns));
  if (outer < 0) return 0;
  const auto& r = profile_.ranges[static_cast<size_t>(outer)];
  return isBackwardOp(r) ? 0 : r.op;
}

int AutogradRanges::forwardOpOfBackward(int inner) const {
  for (int j = inner; j >= 0; j = parent_[static_cast<size_t>(j)]) {
    int seq_range = j;
    if (profile_.ranges[static_cast<size_t>(j)].seq < 0) {
      if (!profile_.strings[profile_.ranges[static_cast<size_t>(j)].text].starts_with(kEvaluateFunction)) continue;
      seq_range = backwardChildOf(j);
      if (seq_range < 0) continue;
    }
    const auto& r = profile_.ranges[static_cast<size_t>(seq_range)];
    if (!isBackwardOp(r)) return -1;
    return forwardRangeFor(r);
  }
  return -1;
}

bool AutogradRanges::inBackwardOp(int range) const {
  for (int j = range; j >= 0; j = parent_[static_cast<size_t>(j)]) {
    const auto& r = profile_.ranges[static_cast<size_t>(j)];
    if (isBackwardOp(r) || profile_.strings[r.text].starts_with(kEvaluateFunction)) return true;
  }
  return false;
}

}  // namespace sightline::attribution
