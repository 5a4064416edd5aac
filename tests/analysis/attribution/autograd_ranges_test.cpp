// Range lookups by thread and time, and forward ops by sequence number, on profiles whose
// ranges are grouped by thread as readers leave them and on ones that are not.
#include "analysis/attribution/autograd_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sightline::attribution {
namespace {

model::NvtxRange range(uint32_t tid, int64_t start, int64_t end, model::StringId op = 0, int32_t seq = -1) {
  model::NvtxRange r;
  r.pid = 7, r.tid = tid, r.start_ns = start, r.end_ns = end, r.op = op, r.seq = seq;
  return r;
}

// Thread 1: an outer range [0, 100) holding forward ops [10, 20) and [30, 40) (seq 3, 4);
// thread 2: their backward ops [45, 55) and [60, 70).
std::vector<model::NvtxRange> ranges(model::Profile& p) {
  model::StringId mm = p.strings.intern("aten::mm"), back = p.strings.intern("MmBackward0");
  return {range(1, 0, 100), range(1, 10, 20, mm, 3), range(1, 30, 40, mm, 4), range(2, 45, 55, back, 3),
          range(2, 60, 70, back, 4)};
}

// `nested`: nesting is known (it is found in the profile's order, so only for grouped ones).
void expectLookups(const model::Profile& p, bool nested = true) {
  AutogradRanges a(p);
  auto startOf = [&](int r) { return r < 0 ? int64_t{-1} : p.ranges[static_cast<size_t>(r)].start_ns; };
  EXPECT_EQ(startOf(a.innermostRange(7, 1, 15)), 10);
  if (nested) {
    EXPECT_EQ(startOf(a.innermostRange(7, 1, 25)), 0);  // between the inner ones: the outer
  }
  EXPECT_EQ(startOf(a.innermostRange(7, 1, 35)), 30);
  EXPECT_EQ(a.innermostRange(7, 1, 150), -1);
  EXPECT_EQ(startOf(a.innermostRange(7, 2, 50)), 45);
  EXPECT_EQ(a.innermostRange(7, 3, 10), -1);  // no such thread
  EXPECT_EQ(a.innermostRange(7, 2, 1), -1);   // before its first range
}

TEST(AutogradRanges, LooksUpRangesInGroupedAndUngroupedProfiles) {
  model::Profile grouped;
  grouped.ranges = ranges(grouped);
  expectLookups(grouped);
  // A backward op finds the forward op of its seq that started last before it.
  AutogradRanges a(grouped);
  EXPECT_EQ(a.forwardOpOfBackward(3), 1);
  EXPECT_EQ(a.forwardOpOfBackward(4), 2);
  // Threads interleaved and out of order: the same answers.
  model::Profile mixed;
  auto r = ranges(mixed);
  mixed.ranges = {r[3], r[2], r[0], r[4], r[1]};
  expectLookups(mixed, false);
  // Ranks merged with the higher pid first stay grouped by thread.
  model::Profile merged;
  merged.ranges = ranges(merged);
  for (auto& x : merged.ranges) x.pid = 9;
  auto more = ranges(merged);
  merged.ranges.insert(merged.ranges.end(), more.begin(), more.end());
  expectLookups(merged);
}

}  // namespace
}  // namespace sightline::attribution
