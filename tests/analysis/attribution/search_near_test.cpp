// upperBoundNear and lowerBoundNear answer as std::upper_bound and std::lower_bound do, from any
// hint: before, at, after the answer, at the end, over duplicates and empty ranges.
#include "analysis/attribution/search_near.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace sightline::attribution {
namespace {

TEST(SearchNear, AnswersAsUpperAndLowerBoundFromEveryHint) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<int> v(random() % 40);
    for (auto& x : v) x = static_cast<int>(random() % 20);  // duplicates
    std::sort(v.begin(), v.end());
    for (int value = -2; value <= 22; ++value)
      for (size_t hint = 0; hint <= v.size(); ++hint) {
        auto want = std::upper_bound(v.begin(), v.end(), value);
        auto got = upperBoundNear(v.begin(), v.end(), v.begin() + static_cast<std::ptrdiff_t>(hint), value);
        ASSERT_EQ(got - v.begin(), want - v.begin()) << "size " << v.size() << " value " << value << " hint " << hint;
        auto low = lowerBoundNear(v.begin(), v.end(), v.begin() + static_cast<std::ptrdiff_t>(hint), value);
        ASSERT_EQ(low - v.begin(), std::lower_bound(v.begin(), v.end(), value) - v.begin())
            << "lower bound: size " << v.size() << " value " << value << " hint " << hint;
      }
  }
}

TEST(SearchNear, AnEmptyRangeAndAHintOutsideIt) {
  std::vector<int> none;
  EXPECT_EQ(upperBoundNear(none.begin(), none.end(), none.begin(), 3), none.end());
  std::vector<int> v{1, 2, 3, 4, 5, 6, 7, 8};
  // A hint outside [first, last] (a sub-range's search, the last answer from another thread's)
  auto sub_first = v.begin() + 2, sub_last = v.begin() + 5;
  EXPECT_EQ(upperBoundNear(sub_first, sub_last, v.begin() + 7, 4), v.begin() + 4);
  EXPECT_EQ(upperBoundNear(sub_first, sub_last, v.begin(), 4), v.begin() + 4);
  EXPECT_EQ(upperBoundNear(sub_first, sub_last, v.begin(), 9), sub_last);
  EXPECT_EQ(upperBoundNear(sub_first, sub_last, v.end(), 0), sub_first);
}

}  // namespace
}  // namespace sightline::attribution
