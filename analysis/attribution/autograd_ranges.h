// NVTX ranges per thread with their nesting, and autograd's forward/backward pairing (internal
// to analysis/attribution). PyTorch's autograd ranges (`aten::conv2d, seq = 12`) carry the
// sequence number of the node a forward op creates; its backward op (`ConvolutionBackward0,
// seq = 12`) runs later on the autograd thread. Answers the op and backward methods.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

// An operator range's name: `aten::linear`, `MmBackward0` (an engine wrapper,
// `autograd::engine::evaluate_function: MmBackward0`, as the backward op it runs).
std::string operatorName(const model::Profile& profile, const model::NvtxRange& range);

class AutogradRanges {
 public:
  explicit AutogradRanges(const model::Profile& profile);

  // The innermost range on (pid, tid) containing time t, or -1.
  int innermostRange(uint32_t pid, uint32_t tid, int64_t t) const;
  // The outermost operator range running at t on (pid, tid), or -1.
  int outermostOpAt(uint32_t pid, uint32_t tid, int64_t t) const {
    return outermostAutograd(innermostRange(pid, tid, t));
  }
  // The outermost operator range around `range` (itself included), or -1.
  int outermostAutograd(int range) const;
  bool isBackwardOp(const model::NvtxRange& r) const;
  // The forward op range of the backward op around range `inner` (its `XBackward0, seq = N`,
  // or the seq child of an `evaluate_function:` wrapper), or -1 when `inner` is not backward work.
  int forwardOpOfBackward(int inner) const;
  // Whether a call inside `range` runs inside an autograd backward op (its GPU time is backward).
  bool inBackwardOp(int range) const;
  // The forward op name around an API call, or 0.
  model::StringId forwardOpOf(const model::ApiCall& call) const;
  const model::NvtxRange& range(int index) const { return profile_.ranges[static_cast<size_t>(index)]; }

 private:
  // The forward op that created autograd node `seq`: the last forward range of (pid, seq) to
  // start before the backward op (several ops show one seq; only node-creating ops advance it).
  int forwardRangeFor(const model::NvtxRange& backward) const;
  // The first `XBackward0, seq = N` range inside an evaluate_function range, or -1.
  int backwardChildOf(int range) const;

  const model::Profile& profile_;
  std::vector<int32_t> parent_;  // enclosing range on the same thread, or -1
  // Ranges of operators (`aten::mm`, `c10d::allreduce_`, `MmBackward0`), not the scopes that
  // record_function opens around many of them (`DistributedDataParallel.forward`, `## fwd ##`).
  std::vector<bool> op_range_;
  // Each thread's ranges by start, as one run of `starts_` (a copy of their start times, side
  // by side for the search): readers leave each thread's ranges together, by start
  // (Profile::sortRanges; merged ranks too), and the runs are the profile's own; other
  // profiles go through `order_` (positions in `starts_` -> ranges; empty: the same).
  void indexThreads();
  // A thread's run [first, end) of `starts_`, and where its last search ended (search_near.h).
  struct ThreadRun {
    uint32_t first = 0, end = 0;
    mutable uint32_t last = 0;
  };
  std::unordered_map<uint64_t, ThreadRun> by_thread_;  // thread key -> its run
  std::vector<int64_t> starts_;
  std::vector<uint32_t> order_;
  struct SeqEntry {
    uint64_t key = 0;  // pid << 32 | seq
    int64_t start_ns = 0;
    uint32_t range = 0;
    auto operator<=>(const SeqEntry&) const = default;
  };
  std::vector<SeqEntry> forward_by_seq_;  // forward ranges with a seq, by (pid, seq, start)
  mutable size_t seq_hint_ = 0;           // where forwardRangeFor's last search ended
};

}  // namespace sightline::attribution
