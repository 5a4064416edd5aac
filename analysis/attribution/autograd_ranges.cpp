// Range nesting and autograd pairing.
#include "analysis/attribution/autograd_ranges.h"

#include <algorithm>
#include <tuple>

#include "analysis/attribution/thread_nesting.h"
#include "analysis/attribution/user_files.h"

namespace sightline::attribution {

namespace {
constexpr std::string_view kEvaluateFunction = "autograd::engine::evaluate_function: ";
}  // namespace

AutogradRanges::AutogradRanges(const model::Profile& profile) : profile_(profile) {
  const auto& ranges = profile_.ranges;
  parent_ = enclosingOnThread(ranges);
  op_range_.resize(ranges.size());
  std::unordered_map<model::StringId, bool> op_names;
  for (uint32_t i = 0; i < ranges.size(); ++i) {
    const auto& r = ranges[i];
    if (r.op != 0) {
      auto [it, added] = op_names.emplace(r.op, false);
      if (added) it->second = contains(profile_.strings[r.op], "::") || isBackwardOp(r);
      op_range_[i] = it->second;
    }
    by_thread_[model::threadKey(r.pid, r.tid)].push_back(i);
    if (r.seq >= 0 && !isBackwardOp(r)) forward_by_seq_.push_back(i);
  }
  std::sort(forward_by_seq_.begin(), forward_by_seq_.end(), [&](uint32_t a, uint32_t b) {
    const auto &x = ranges[a], &y = ranges[b];
    return std::tie(x.pid, x.seq, x.start_ns) < std::tie(y.pid, y.seq, y.start_ns);
  });
}

bool AutogradRanges::isBackwardOp(const model::NvtxRange& r) const {
  return r.op != 0 && contains(profile_.strings[r.op], "Backward");
}

int AutogradRanges::forwardRangeFor(const model::NvtxRange& backward) const {
  auto pos =
      std::upper_bound(forward_by_seq_.begin(), forward_by_seq_.end(), backward, [&](const auto& b, uint32_t idx) {
        const auto& r = profile_.ranges[idx];
        return std::tie(b.pid, b.seq, b.start_ns) < std::tie(r.pid, r.seq, r.start_ns);
      });
  if (pos == forward_by_seq_.begin()) return -1;
  const auto& found = profile_.ranges[*(pos - 1)];
  if (found.pid != backward.pid || found.seq != backward.seq) return -1;
  return static_cast<int>(*(pos - 1));
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
  const auto& list = it->second;
  auto pos = std::upper_bound(list.begin(), list.end(), t,
                              [&](int64_t time, uint32_t idx) { return time < profile_.ranges[idx].start_ns; });
  if (pos == list.begin()) return -1;
  int j = static_cast<int>(*(pos - 1));
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
