// The model's arithmetic on values a corrupt export can hold.
#include "analysis/model/profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::model {
namespace {

TEST(Profile, SpansNeverOverflowOrGoNegative) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(spanNs(3, 5), 2);
  EXPECT_EQ(spanNs(5, 3), 0) << "an end before the start is no time";
  EXPECT_EQ(spanNs(kMin, kMax), 0) << "overflow (UBSan once flagged end_ns - start_ns here)";
  EXPECT_EQ(spanNs(kMax, kMin), 0);
  EXPECT_EQ(spanNs(-10, kMax - 20), kMax - 10);
  GpuActivity a;
  a.start_ns = kMin;
  a.end_ns = kMax;
  EXPECT_EQ(a.duration(), 0);
}

// Two reports of one run, each with its own strings and a pid the other also has.
Profile part(const std::string& kernel, uint32_t pid, int64_t t0) {
  Profile p;
  GpuActivity a;
  a.start_ns = t0, a.end_ns = t0 + 10, a.pid = pid, a.correlation = 7, a.name = p.strings.intern(kernel);
  p.activities.push_back(a);
  ApiCall c;
  c.start_ns = t0 - 5, c.end_ns = t0 - 1, c.pid = pid, c.tid = pid, c.correlation = 7, c.launches = true;
  c.name = p.strings.intern("cudaLaunchKernel");
  p.api_calls.push_back(c);
  PythonCall outer, inner;
  outer.start_ns = t0 - 10, outer.end_ns = t0 + 10, outer.pid = pid, outer.tid = pid,
  outer.file = p.strings.intern("train.py");
  inner = outer;
  inner.start_ns = t0 - 6, inner.end_ns = t0, inner.parent = 0;
  p.calls = {outer, inner};
  p.info.gpus = {"NVIDIA H200", "NVIDIA H200"};
  p.info.processes.push_back({pid, "python3", -1, -1});
  return p;
}

TEST(Profile, MergesReportsOfRanksKeepingEachJoinable) {
  std::vector<Profile> parts;
  parts.push_back(part("gemm", 100, 1000));
  parts.push_back(part("nccl_allreduce", 100, 50));  // same pid, earlier clock
  Profile m = mergeProfiles(std::move(parts), {"r0.sqlite", "r1.sqlite"});
  ASSERT_EQ(m.activities.size(), 2u);
  ASSERT_EQ(m.api_calls.size(), 2u);
  EXPECT_EQ(m.info.gpus.size(), 2u) << "the same machine's GPUs once";
  ASSERT_EQ(m.info.processes.size(), 2u);
  EXPECT_NE(m.info.processes[0].pid, m.info.processes[1].pid) << "a shared pid is renumbered";
  // Each activity still meets its launch: same (pid, correlation), names re-interned.
  for (const auto& a : m.activities) {
    auto call = std::find_if(m.api_calls.begin(), m.api_calls.end(),
                             [&](const ApiCall& c) { return c.pid == a.pid && c.correlation == a.correlation; });
    ASSERT_NE(call, m.api_calls.end());
    EXPECT_EQ(m.strings[call->name], "cudaLaunchKernel");
  }
  std::vector<std::string> names;
  for (const auto& a : m.activities) names.push_back(m.strings[a.name]);
  EXPECT_EQ(names, (std::vector<std::string>{"nccl_allreduce", "gemm"})) << "sorted by time";
  // Python calls sorted by (pid, tid, start), parents pointing at their own part's caller.
  ASSERT_EQ(m.calls.size(), 4u);
  for (size_t i = 0; i < m.calls.size(); ++i) {
    const auto& c = m.calls[i];
    if (c.parent < 0) continue;
    const auto& parent = m.calls[static_cast<size_t>(c.parent)];
    EXPECT_EQ(parent.pid, c.pid);
    EXPECT_LE(parent.start_ns, c.start_ns);
    EXPECT_EQ(m.strings[parent.file], "train.py");
  }
}

// A real report merged with itself: every activity ties with its copy. The merge keeps the
// order one stable sort of the parts' rows, one after the other, would give: by time, each
// part's rows in their own order, the first part's before the second's on a tie.
TEST(Profile, AMergeOrdersRowsAsOneStableSortOfThePartsWould) {
  auto loaded = ingest::loadProfile(testing::dataProfile("multi/fsdp/fsdp_rank0.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  const Profile& one = *loaded.profile;
  ASSERT_GT(one.activities.size(), 100u);
  std::vector<Profile> parts{one, one};
  Profile m = mergeProfiles(std::move(parts), {"a.sqlite", "b.sqlite"});
  ASSERT_EQ(m.activities.size(), 2 * one.activities.size());
  ASSERT_EQ(m.ranges.size(), 2 * one.ranges.size());
  ASSERT_EQ(m.marks.size(), 2 * one.marks.size());
  uint32_t first_pid = one.activities.front().pid;
  std::vector<const GpuActivity*> from_first, from_second;
  for (size_t i = 0; i < m.activities.size(); ++i) {
    const auto& a = m.activities[i];
    if (i > 0) {
      ASSERT_LE(m.activities[i - 1].start_ns, a.start_ns) << i;
    }
    (a.pid == first_pid ? from_first : from_second).push_back(&a);
    if (i + 1 < m.activities.size() && m.activities[i + 1].start_ns == a.start_ns && a.pid != first_pid) {
      EXPECT_NE(m.activities[i + 1].pid, first_pid) << "on a tie, the first part's rows come first (" << i << ")";
    }
  }
  ASSERT_EQ(from_first.size(), one.activities.size());
  ASSERT_EQ(from_second.size(), one.activities.size());
  for (size_t i = 0; i < one.activities.size(); ++i) {
    EXPECT_EQ(from_first[i]->correlation, one.activities[i].correlation) << i;
    EXPECT_EQ(from_second[i]->correlation, one.activities[i].correlation) << i;
  }
  // The second part's pids were renumbered past the first's: its ranges and marks follow.
  for (size_t i = 1; i < m.ranges.size(); ++i) {
    ASSERT_LE(std::tie(m.ranges[i - 1].pid, m.ranges[i - 1].tid, m.ranges[i - 1].start_ns),
              std::tie(m.ranges[i].pid, m.ranges[i].tid, m.ranges[i].start_ns))
        << i;
  }
  for (size_t i = 1; i < m.marks.size(); ++i) {
    ASSERT_LE(std::tie(m.marks[i - 1].pid, m.marks[i - 1].tid, m.marks[i - 1].time_ns),
              std::tie(m.marks[i].pid, m.marks[i].tid, m.marks[i].time_ns))
        << i;
  }
}

}  // namespace
}  // namespace sightline::model
