#include "server/lsp/debounce.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

using std::chrono::milliseconds;

TEST(Debounce, StartsAtTheFloorAndFollowsTheMedianCost) {
  Debounce d;
  EXPECT_EQ(d.delay(), milliseconds(20));
  for (int ms : {80, 90, 400, 100, 85}) d.record(milliseconds(ms));
  EXPECT_EQ(d.delay(), milliseconds(90));  // one slow computation does not set it
}

TEST(Debounce, ACheapFileStaysAtTheFloorAndASlowOneAtTheCap) {
  Debounce cheap;
  for (int i = 0; i < 10; ++i) cheap.record(milliseconds(2));
  EXPECT_EQ(cheap.delay(), milliseconds(20));
  Debounce slow;
  for (int i = 0; i < 10; ++i) slow.record(milliseconds(3000));
  EXPECT_EQ(slow.delay(), milliseconds(500));
}

TEST(Debounce, ForgetsOldCosts) {
  Debounce d;
  for (int i = 0; i < 6; ++i) d.record(milliseconds(300));
  EXPECT_EQ(d.delay(), milliseconds(300));
  for (int i = 0; i < 6; ++i) d.record(milliseconds(30));
  EXPECT_EQ(d.delay(), milliseconds(30));  // the file got cheaper: the delay follows
}

TEST(Debounce, AFixedDelayIgnoresCosts) {
  auto d = Debounce::fixed(milliseconds(0));
  d.record(milliseconds(900));
  EXPECT_EQ(d.delay(), milliseconds(0));
}

}  // namespace
}  // namespace sightline::server
