// Collectives paired across ranks: the rank that arrives last runs the shortest kernel; the
// others' extra time is waiting, and no common clock is needed.
#include "analysis/attribution/ranks.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sightline::attribution {
namespace {

// Two ranks (pids 10, 11), each with one all-reduce per step; `late` says which rank arrives
// last in each step (its kernel runs 1 ms, the other waits `wait_ms` more). Rank 11's clock is
// offset by 1 s: separate reports need not share a clock.
model::Profile twoRanks(const std::vector<int>& late, double wait_ms) {
  model::Profile p;
  model::StringId allreduce =
      p.strings.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  model::StringId gemm = p.strings.intern("sm90_xmma_gemm_bf16bf16_bf16f32");
  for (size_t s = 0; s < late.size(); ++s)
    for (uint32_t r = 0; r < 2; ++r) {
      int64_t base = static_cast<int64_t>(s) * 100'000'000 + (r ? 1'000'000'000 : 0);
      model::GpuActivity work{base, base + 5'000'000};
      work.pid = 10 + r, work.name = gemm, work.device = r;
      int64_t ns = 1'000'000 + (late[s] == static_cast<int>(r) ? 0 : static_cast<int64_t>(wait_ms * 1e6));
      model::GpuActivity comm{base + 6'000'000, base + 6'000'000 + ns};
      comm.pid = 10 + r, comm.name = allreduce, comm.device = r;
      p.activities.push_back(work);
      p.activities.push_back(comm);
    }
  return p;
}

std::vector<int32_t> steps(const model::Profile& p) {
  std::vector<int32_t> out;
  for (const auto& a : p.activities) out.push_back(static_cast<int32_t>((a.start_ns % 1'000'000'000) / 100'000'000));
  return out;
}

TEST(PairCollectives, AStragglerMakesTheOthersWait) {
  auto p = twoRanks({1, 1, 1, 1}, 8);
  RankTable t = buildRanks(p);
  pairCollectives(p, steps(p), t);
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].comm_wait_ns, 4 * 8'000'000);
  EXPECT_EQ(t.ranks[0].comm_transfer_ns, 4 * 1'000'000);
  EXPECT_EQ(t.ranks[1].comm_wait_ns, 0);
  EXPECT_EQ(t.ranks[1].late_collectives, 4u);
  EXPECT_EQ(t.ranks[0].late_collectives, 0u);
  for (size_t i = 0; i < p.activities.size(); ++i) {
    if (t.exposed_ns[i] < 0) {
      EXPECT_EQ(t.wait_ns[i], -1) << "compute kernels are not collectives";
      continue;
    }
    bool rank1 = p.activities[i].pid == 11;
    EXPECT_EQ(t.caused_ns[i], rank1 ? 8'000'000 : -1);
  }
}

TEST(PairCollectives, EachRankLateInTurn) {
  auto p = twoRanks({0, 1, 0, 1}, 3);
  RankTable t = buildRanks(p);
  pairCollectives(p, steps(p), t);
  EXPECT_EQ(t.ranks[0].late_collectives, 2u);
  EXPECT_EQ(t.ranks[1].late_collectives, 2u);
  EXPECT_EQ(t.ranks[0].comm_wait_ns, 2 * 3'000'000);
  EXPECT_EQ(t.ranks[1].comm_wait_ns, 2 * 3'000'000);
}

TEST(PairCollectives, OneRankAloneIsNotPaired) {
  auto p = twoRanks({1, 1}, 8);
  std::erase_if(p.activities, [](const model::GpuActivity& a) { return a.pid == 11; });
  RankTable t = buildRanks(p);
  pairCollectives(p, steps(p), t);
  EXPECT_EQ(t.ranks[0].comm_wait_ns, 0);
  EXPECT_EQ(t.ranks[0].paired_collectives, 0u);
  for (int64_t w : t.wait_ns) EXPECT_EQ(w, -1);
}

// A rank missing one collective of a step (a lost record) pairs the others of that step only
// by their order within the step: the next steps stay paired right.
TEST(PairCollectives, ALostRecordShiftsNothingBeyondItsStep) {
  auto p = twoRanks({1, 1, 1}, 8);
  auto it = std::find_if(p.activities.begin(), p.activities.end(), [&](const model::GpuActivity& a) {
    return a.pid == 10 && a.start_ns == 6'000'000;  // rank 0's all-reduce of step 0
  });
  ASSERT_NE(it, p.activities.end());
  p.activities.erase(it);
  RankTable t = buildRanks(p);
  pairCollectives(p, steps(p), t);
  EXPECT_EQ(t.ranks[0].comm_wait_ns, 2 * 8'000'000);
  EXPECT_EQ(t.ranks[1].late_collectives, 2u);
}

}  // namespace
}  // namespace sightline::attribution
