// stableSortRuns gives std::stable_sort's order: ties in input order, whatever the runs.
#include "analysis/model/sorted_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace sightline::model {
namespace {

// (key, input position): a key with many ties, the position tells whether ties kept their order.
using Row = std::pair<int, int>;
bool keyBefore(const Row& a, const Row& b) { return a.first < b.first; }

std::vector<Row> numbered(const std::vector<int>& keys) {
  std::vector<Row> rows;
  for (size_t i = 0; i < keys.size(); ++i) rows.emplace_back(keys[i], static_cast<int>(i));
  return rows;
}

void expectStableSortOrder(const std::vector<int>& keys, size_t max_runs) {
  auto want = numbered(keys), got = want;
  std::stable_sort(want.begin(), want.end(), keyBefore);
  stableSortRuns(got.begin(), got.end(), keyBefore, max_runs);
  EXPECT_EQ(got, want) << keys.size() << " rows, at most " << max_runs << " runs merged";
}

TEST(SortedRuns, GivesStableSortsOrderForAnyNumberOfRuns) {
  std::mt19937 rng(7);
  for (size_t runs : {1, 2, 3, 5, 17, 64, 65, 300}) {
    // `runs` ascending runs of keys drawn from a few values: every merge meets ties.
    std::vector<int> keys;
    for (size_t r = 0; r < runs; ++r) {
      std::vector<int> run(1 + rng() % 40);
      for (int& k : run) k = static_cast<int>(rng() % 12);
      std::sort(run.begin(), run.end());
      keys.insert(keys.end(), run.begin(), run.end());
    }
    for (size_t max_runs : {size_t{1}, size_t{2}, size_t{64}, size_t{1000}}) expectStableSortOrder(keys, max_runs);
  }
}

TEST(SortedRuns, SortedEmptyAndDescendingInput) {
  expectStableSortOrder({}, 64);
  expectStableSortOrder({4}, 64);
  expectStableSortOrder({1, 1, 1, 2, 2, 3}, 64);
  expectStableSortOrder({5, 4, 3, 2, 1, 1, 0}, 64);  // every row its own run: stable_sort's turn
  expectStableSortOrder({5, 4, 3, 2, 1, 1, 0}, 3);
}

TEST(SortedRuns, MergesRunsOfTiesLeftFirst) {
  // Two runs whose keys all tie across them: the left run's rows come first.
  auto rows = numbered({1, 2, 3, 1, 2, 3});
  stableSortRuns(rows.begin(), rows.end(), keyBefore);
  std::vector<Row> want{{1, 0}, {1, 3}, {2, 1}, {2, 4}, {3, 2}, {3, 5}};
  EXPECT_EQ(rows, want);
}

}  // namespace
}  // namespace sightline::model
