// The model's arithmetic on values a corrupt export can hold.
#include "analysis/model/profile.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

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

}  // namespace
}  // namespace sightline::model
