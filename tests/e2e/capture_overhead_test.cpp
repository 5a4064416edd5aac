// The capture's own cost, on captures of our own scripts (tests/data/overhead: an eager GPT
// trainer, the same compiled, a ResNet with DataLoader workers; H100, nsys 2025.3.1, PyTorch
// 2.11), each run without a profiler on the same machine, its step log beside it: the step
// estimated without the profiler lands within 30% of the run's own, and the verdict is that
// estimate's; a step log calibrates it; a light capture gives the timing.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

struct OwnRun {
  const char* capture;  // under tests/data/overhead/runs
  const char* script;   // under tests/data/overhead
  const char* log;      // the same script's run without a profiler
  bool full;            // backtraces, autograd ranges and shapes: the capture doubles the step
};

std::string runs(const std::string& name) { return "tests/data/overhead/runs/" + name; }

json reportJson(const std::string& args) {
  auto run = runSightline("report --format json " + args, sourcePath(""));
  EXPECT_EQ(run.code, 0) << run.out;
  return json::parse(run.out, nullptr, false);
}

std::string profileOf(const OwnRun& r) {
  std::string capture = r.capture;
  return capture.ends_with(".xz") ? repoProfile(runs(capture)) : sourcePath(runs(capture));
}

class CaptureOverhead : public ::testing::TestWithParam<OwnRun> {};

TEST_P(CaptureOverhead, EstimatesTheStepWithoutTheProfiler) {
  const OwnRun& r = GetParam();
  std::string args = "--profile '" + profileOf(r) + "' tests/data/overhead/" + r.script;
  // The measured step: the script's own log of the unprofiled run, read by --step-log.
  json logged = reportJson(args + " --step-log " + runs(r.log));
  double measured = logged["verdict"]["logged_step_ns"].get<double>();
  ASSERT_GT(measured, 5e6) << logged["verdict"].dump();
  EXPECT_TRUE(logged["verdict"]["calibrated"].get<bool>());
  EXPECT_NEAR(logged["verdict"]["unprofiled_wall_ns"].get<double>(), measured, 0.05 * measured)
      << "a step log calibrates the estimate to the run it measured";

  json doc = reportJson(args);
  const json& v = doc["verdict"];
  ASSERT_TRUE(v["capture_estimated"].get<bool>()) << v.dump();
  double captured = v["wall_ns"].get<double>(), estimate = v["unprofiled_wall_ns"].get<double>();
  EXPECT_LT(std::abs(estimate - measured), 0.30 * measured)
      << r.capture << ": captured " << captured / 1e6 << " ms, estimated " << estimate / 1e6 << " ms, measured "
      << measured / 1e6 << " ms without the profiler";
  EXPECT_NEAR(v["capture_overhead_ns"].get<double>(), captured - estimate, 0.35 * captured)
      << "the overhead and the estimate are one account";
  EXPECT_FALSE(v["capture_overhead_by_event"].empty());
  if (r.full) {
    // These captures more than double the step: the verdict is the estimate's, with the
    // captured one kept beside it.
    EXPECT_GT(captured, 1.8 * measured) << r.capture;
    EXPECT_TRUE(v["estimate_applied"].get<bool>());
    EXPECT_TRUE(v.contains("captured_bound"));
    EXPECT_GT(v["capture_overhead_ns"].get<double>(), 0.4 * captured);
    // The text says so, on the Profiler line, and gives the light command.
    auto text = runSightline("report " + args, sourcePath(""));
    EXPECT_NE(text.out.find("Profiler  the capture added"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("as captured"), std::string::npos);
    EXPECT_NE(text.out.find("--timing LIGHT"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    OwnScripts, CaptureOverhead,
    ::testing::Values(OwnRun{"gpt_full.sqlite.xz", "gpt.py", "gpt_none.log", true},
                      OwnRun{"compiled_full.sqlite.xz", "gpt.py", "compiled_none.log", true},
                      OwnRun{"compiled_light.sqlite.xz", "gpt.py", "compiled_none.log", false},
                      OwnRun{"loader_full.sqlite.xz", "resnet.py", "loader_none.log", true},
                      OwnRun{"loader_light.sqlite.xz", "resnet.py", "loader_none.log", false},
                      OwnRun{"loader_torch.pt.trace.json.gz", "resnet.py", "loader_none.log", false}),
    [](const ::testing::TestParamInfo<OwnRun>& info) {
      std::string name = info.param.capture;
      name = name.substr(0, name.find('.'));
      return name;
    });

// A light and a full capture of the same script: the step story comes from the light one, the
// lines from the full one.
TEST(CaptureOverhead, TimingFromTheLightCapture) {
  std::string full = repoProfile(runs("compiled_full.sqlite.xz"));
  std::string light = repoProfile(runs("compiled_light.sqlite.xz"));
  json alone = reportJson("--profile '" + full + "' tests/data/overhead/gpt.py");
  json both = reportJson("--profile '" + full + "' --timing '" + light + "' tests/data/overhead/gpt.py");
  json light_only = reportJson("--profile '" + light + "' tests/data/overhead/gpt.py");
  EXPECT_DOUBLE_EQ(both["verdict"]["wall_ns"].get<double>(), light_only["verdict"]["wall_ns"].get<double>());
  EXPECT_LT(both["verdict"]["wall_ns"].get<double>(), 0.5 * alone["verdict"]["wall_ns"].get<double>());
  // The lines are the full capture's (the light one has no backtraces to put them on).
  ASSERT_FALSE(both["files"].empty());
  EXPECT_EQ(both["files"][0]["lines"].dump(), alone["files"][0]["lines"].dump());
  auto text = runSightline("report --profile '" + full + "' --timing '" + light + "' tests/data/overhead/gpt.py",
                           sourcePath(""));
  EXPECT_NE(text.out.find("figures from the light capture compiled_light.sqlite"), std::string::npos) << text.out;
}

// A light capture already: no advice to capture light again, and the estimate barely moves.
TEST(CaptureOverhead, LightCaptureGetsNoLightAdvice) {
  std::string light = repoProfile(runs("loader_light.sqlite.xz"));
  auto text = runSightline("report --profile '" + light + "' tests/data/overhead/resnet.py", sourcePath(""));
  EXPECT_EQ(text.out.find("Timing    for the step's own time"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace sightline::testing
