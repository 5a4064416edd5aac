// One formatter per unit: the table every surface's formatter is held to (tests/data/units.json;
// the page's and the panel's are held to it by editors/vscode/test/units.mjs).
#include "analysis/features/units.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_paths.h"

namespace sightline::features {
namespace {

using nlohmann::json;

json table() { return json::parse(testing::readFile(testing::testDataPath("units.json"))); }

TEST(Units, EveryFormatterWritesTheTable) {
  json t = table();
  ASSERT_GE(t["milliseconds"].size(), 5u);
  for (const auto& row : t["milliseconds"])
    EXPECT_EQ(formatMilliseconds(row[0].get<double>()), row[1].get<std::string>()) << row.dump();
  for (const auto& row : t["bytes"])
    EXPECT_EQ(formatBytes(row[0].get<int64_t>()), row[1].get<std::string>()) << row.dump();
  for (const auto& row : t["share"])
    EXPECT_EQ(formatShare(row[0].get<double>()), row[1].get<std::string>()) << row.dump();
}

// An exact tie rounds away from zero, as the page's toFixed does (printf alone gave "49.12 GiB" in
// the terminal where the page said "49.13 GiB"); anything short of a tie rounds to nearest.
TEST(Units, ExactTiesRoundAwayFromZeroAsThePageDoes) {
  EXPECT_EQ(formatFixed(49.125, 2), "49.13");
  EXPECT_EQ(formatFixed(-49.125, 2), "-49.13");
  EXPECT_EQ(formatFixed(0.125, 2), "0.13");
  EXPECT_EQ(formatFixed(2.5, 0), "3");
  EXPECT_EQ(formatFixed(1.005, 2), "1.00");  // 1.00499999999999989... in binary: no tie
  EXPECT_EQ(formatFixed(0.285, 2), "0.28");  // 0.28499999999999998...
  EXPECT_EQ(formatFixed(12.34, 1), "12.3");
}

// Short durations keep a readable unit: a 3.77 ms queue was once "3767.6 µs".
TEST(Units, MicrosecondsTurnIntoMillisecondsPastOne) {
  EXPECT_EQ(formatMicroseconds(19'700), "19.7 µs");
  EXPECT_EQ(formatMicroseconds(999'900), "999.9 µs");
  EXPECT_EQ(formatMicroseconds(3'767'600), "3.77 ms");
}

}  // namespace
}  // namespace sightline::features
