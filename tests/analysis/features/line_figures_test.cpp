// A line's figures, one rule each for every surface: inclusive time told where the work beneath
// adds enough, roll-ups on def lines, the one-off marker, the slowest rank by its own work.
#include "analysis/features/line_figures.h"

#include <gtest/gtest.h>

#include "tests/support/test_paths.h"

namespace sightline::features {
namespace {

struct Fixture {
  source::SourceFile file{testing::readFile(testing::testDataPath("h200/nsys/train_small.py"))};
  source::SourceIndex index = source::buildSourceIndex(file);
  FileCosts costs;
  Fixture() {
    costs.total_gpu_ns = 100'000'000;
    costs.steps = 10;
    costs.oneoff_gpu_ns = 40'000'000;
    auto& hot = costs.lines[33];  // return F.relu(self.bn(self.conv(x)))
    hot.gpu_ns = 60'000'000, hot.forward_ns = 20'000'000, hot.backward_ns = 40'000'000;
    auto& call = costs.lines[51];  // out = model(x): nothing of its own, the model beneath it
    call.oneoff_ns = 0, call.oneoff_inclusive_ns = 30'000'000;
    costs.spans.push_back({{33, 44, 51}, 60'000'000, 20'000'000, 40'000'000, {"/w/train_small.py", 33, 0, 0}, true});
    costs.spans.push_back({{51}, 40'000, 40'000, 0, {"/w/train_small.py", 51, 0, 0}, true});
  }
};

TEST(LineFigures, OwnInclusiveRollupAndOneOff) {
  Fixture f;
  auto figures = fileLineFigures(f.costs, f.file, f.index, {10, true});
  const auto& hot = figures.at(33);
  EXPECT_DOUBLE_EQ(hot.self_ns, 6e6);
  EXPECT_DOUBLE_EQ(hot.share, 0.6);
  EXPECT_FALSE(hot.show_inclusive) << "all of it is its own";
  const auto& call = figures.at(51);
  EXPECT_DOUBLE_EQ(call.inclusive_ns, 6.004e6);
  EXPECT_TRUE(call.show_inclusive);
  EXPECT_NEAR(call.inclusive_share, 0.6004, 1e-12);
  EXPECT_TRUE(call.oneoff_marked) << "30 ms of the 40 ms one-off";
  EXPECT_TRUE(call.oneoff_beneath);
  // `def forward` of the block (line 32): its body's work, as the hint's Σ and the margin's.
  const auto& def = figures.at(32);
  EXPECT_DOUBLE_EQ(def.rollup_ns, 6e6);
  EXPECT_EQ(def.rollup_scope, "function");
  EXPECT_FALSE(figures.count(1));
}

TEST(LineFigures, ThresholdsAreOneRule) {
  // 5 µs per step and a twentieth of the inclusive time.
  EXPECT_TRUE(showsInclusive(0, 5e3));
  EXPECT_FALSE(showsInclusive(0, 4.9e3));
  EXPECT_FALSE(showsInclusive(1e6, 1.04e6));
  EXPECT_TRUE(showsInclusive(1e6, 1.06e6));
  EXPECT_TRUE(marksOneoff(1'000'000, 0));
  EXPECT_FALSE(marksOneoff(999'999, 0));
  EXPECT_FALSE(marksOneoff(2'000'000, 100'000'000)) << "a twentieth of the one-off time";
  EXPECT_TRUE(marksOneoff(5'000'000, 100'000'000));
}

// The slowest rank by its own work, each rank per step of its own; waits for others are not work.
TEST(LineFigures, TheSlowestRankByItsOwnWork) {
  std::vector<attribution::RankInfo> ranks(3);
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r].label = "rank " + std::to_string(r), ranks[r].steady_steps = 10;
  ranks[2].steady_steps = 20;  // twice the steps: its per-step figure halves
  attribution::LineCost c;
  c.gpu_ns = 1;
  c.rank_ns = {10'000'000, 30'000'000, 40'000'000};
  c.rank_wait_ns = {0, 20'000'000, 0};  // rank 1 waited 2 ms/step for another rank
  auto s = slowestRank(c, ranks, {10, true});
  ASSERT_TRUE(s.ranked);
  EXPECT_EQ(s.rank, 2u) << "2 ms/step of its own; rank 1 has 1 ms/step of work and 2 of waiting";
  EXPECT_NEAR(s.ratio, 2.0, 1e-9);
  EXPECT_TRUE(s.shown);
  EXPECT_FALSE(s.is_max) << "rank 1's listed figure (3 ms/step, waits included) is the largest";
  EXPECT_DOUBLE_EQ(s.max_ns, 3e6);
  EXPECT_DOUBLE_EQ(s.median_ns, 2e6);
  ranks.pop_back();
  EXPECT_FALSE(slowestRank(c, ranks, {10, true}).ranked) << "a figure for every rank, or none";
}

}  // namespace
}  // namespace sightline::features
