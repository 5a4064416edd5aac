// Hostile inputs, round four (issue 54), for `sightline capture`: parts crafted by what runs
// under the capture (values past int64, more steps than the window, large, many). The stand-ins
// of capture_test.cpp.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/capture_fixture.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HostileCapture : public Capture {
 protected:
  // `python3 crafted_parts.py ARGS`, then the training script: crafted parts beside a real window.
  std::string craftedThenTrain(const std::string& args) const {
    return "sh -c \"python3 '" + capturePath("crafted_parts.py") + "' " + args + " && " + kTrain + "\"";
  }
};

TEST_F(HostileCapture, CraftedPartsAreRangeCheckedAndBounded) {
  // A rank whose times are 2^62 ns: their median and the hook's share once overflowed ("median
  // -0.00 ms", "(0.000%)"). Refused whole; the real rank's window is kept.
  auto run = capture("--profiler none -- " + craftedThenTrain("overflow"));
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("rank.7.json: not a rank's steps"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("median -"), std::string::npos) << run.out;
  ASSERT_EQ(steps()["ranks"].size(), 1u) << run.out;
  EXPECT_EQ(steps()["ranks"][0]["rank"], 0);
  // More steps than the window holds, and a part of megabytes: refused.
  run = capture("--profiler none -- " + craftedThenTrain("steps"));
  EXPECT_NE(run.out.find("rank.8.json: not a rank's steps: 25 timed steps, more than the window's 20"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(steps()["ranks"].size(), 1u);
  run = capture("--profiler none -- " + craftedThenTrain("large"));
  EXPECT_NE(run.out.find("rank.9.json: larger than the"), std::string::npos) << run.out;
  EXPECT_EQ(steps()["ranks"].size(), 1u);
  // Many bad parts: 20 warnings, and a count of the rest.
  run = capture("--profiler none -- " + craftedThenTrain("many 30"));
  EXPECT_EQ(run.code, 0) << run.out;
  size_t warnings = 0;
  for (size_t at = run.out.find(": not a JSON object"); at != std::string::npos;
       at = run.out.find(": not a JSON object", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 20u) << run.out;
  EXPECT_NE(run.out.find("... and 10 more warnings of the parts"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace sightline::testing
