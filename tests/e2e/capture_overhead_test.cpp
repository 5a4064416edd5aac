// The step without the profiler, on captures of our own scripts (tests/data/overhead: an eager
// GPT trainer, the same compiled, a ResNet with DataLoader workers; H100, nsys 2025.3.1,
// PyTorch 2.11), each run without a profiler on the same machine, its step log beside it: the
// step log gives the headline as measured; without it the range holds the run's own step, a
// point (where one is given) is within 30% of it, and the profiler's added time never exceeds
// the captured step.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

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

TEST_P(CaptureOverhead, TheStepWithoutTheProfilerIsMeasuredOrARangeThatHoldsIt) {
  const OwnRun& r = GetParam();
  std::string args = "--profile '" + profileOf(r) + "' tests/data/overhead/" + r.script;
  // The measured step: the script's own log of the unprofiled run, read by --step-log, is the
  // headline as it is (no model in it).
  json logged = reportJson(args + " --step-log " + runs(r.log));
  const json& lu = logged["verdict"]["unprofiled"];
  EXPECT_EQ(lu["source"], "step-log") << lu.dump();
  ASSERT_TRUE(lu["wall_ns"].is_number()) << lu.dump();
  double measured = lu["wall_ns"].get<double>();
  ASSERT_GT(measured, 5e6) << lu.dump();
  EXPECT_EQ(logged["verdict"]["unprofiled_wall_ns"], lu["wall_ns"]);
  EXPECT_LE(lu["range_ns"][0].get<double>(), measured);
  EXPECT_GE(lu["range_ns"][1].get<double>(), measured);
  EXPECT_FALSE(lu["bound"].is_null()) << "measured: the bound is told";
  EXPECT_NE(lu["reason"].get<std::string>().find(r.log), std::string::npos) << lu.dump();

  json doc = reportJson(args);
  const json& v = doc["verdict"];
  const json& u = v["unprofiled"];
  double captured = v["wall_ns"].get<double>();
  double lo = u["range_ns"][0].get<double>(), hi = u["range_ns"][1].get<double>();
  EXPECT_LE(lo, measured) << r.capture << ": the GPU's own work is no more than the step";
  EXPECT_GE(hi, measured) << r.capture << ": the captured step is no less than the step without the profiler";
  EXPECT_LE(u["added_max_ns"].get<double>(), captured) << "the profiler added no more than the step";
  if (u["wall_ns"].is_number())
    EXPECT_LT(std::abs(u["wall_ns"].get<double>() - measured), 0.30 * measured)
        << r.capture << ": a point is given only where it is within 30%: " << u.dump();
  else
    EXPECT_NE(u["reason"].get<std::string>(), "") << u.dump();
  if (r.full) {
    // These captures more than double the step: no point, no bound, and the text says how to
    // measure it.
    EXPECT_GT(captured, 1.8 * measured) << r.capture;
    EXPECT_TRUE(u["wall_ns"].is_null()) << u.dump();
    EXPECT_TRUE(u["bound"].is_null()) << u.dump();
    EXPECT_EQ(u["source"], "model");
    auto text = runSightline("report " + args, sourcePath(""));
    EXPECT_NE(text.out.find("Unprofiled between "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("bound: cannot tell from this capture"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Measure   sightline capture -- python " + std::string(r.script) + " measures the step"),
              std::string::npos)
        << text.out;
  }
}

INSTANTIATE_TEST_SUITE_P(OwnScripts, CaptureOverhead,
                         ::testing::Values(OwnRun{"gpt_full.sqlite.xz", "gpt.py", "gpt_none.log", true},
                                           OwnRun{"compiled_full.sqlite.xz", "gpt.py", "compiled_none.log", true},
                                           OwnRun{"compiled_light.sqlite.xz", "gpt.py", "compiled_none.log", false},
                                           OwnRun{"loader_full.sqlite.xz", "resnet.py", "loader_none.log", true},
                                           OwnRun{"loader_light.sqlite.xz", "resnet.py", "loader_none.log", false},
                                           OwnRun{"loader_torch.pt.trace.json.gz", "resnet.py", "loader_none.log",
                                                  false}),
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
  EXPECT_EQ(both["verdict"]["unprofiled"]["source"], "light-capture");
  EXPECT_EQ(both["verdict"]["unprofiled"]["wall_ns"], both["verdict"]["wall_ns"]);
  EXPECT_LT(both["verdict"]["wall_ns"].get<double>(), 0.5 * alone["verdict"]["wall_ns"].get<double>());
  // The lines are the full capture's (the light one has no backtraces to put them on).
  ASSERT_FALSE(both["files"].empty());
  EXPECT_EQ(both["files"][0]["lines"].dump(), alone["files"][0]["lines"].dump());
  auto text = runSightline("report --profile '" + full + "' --timing '" + light + "' tests/data/overhead/gpt.py",
                           sourcePath(""));
  EXPECT_NE(text.out.find("figures from the light capture compiled_light.sqlite"), std::string::npos) << text.out;
}

// A GPU-bound step (fp32 matmuls, tests/data/verdict): the GPU's own work is nearly all of the
// captured step, so any point between them is within 30% of the truth: a figure, GPU-bound,
// and no advice to measure again. A wider range (the light capture of the ResNet) gives none.
TEST(CaptureOverhead, ANarrowRangeGivesAFigure) {
  json doc =
      reportJson("--profile '" + repoProfile("tests/data/verdict/fp32.sqlite.xz") + "' tests/data/verdict/verdict.py");
  const json& u = doc["verdict"]["unprofiled"];
  ASSERT_TRUE(u["wall_ns"].is_number()) << u.dump();
  EXPECT_LE(u["range_ns"][1].get<double>(), 1.3 * u["range_ns"][0].get<double>());
  EXPECT_EQ(u["bound"], "GPU-bound");
  EXPECT_EQ(u["measure"], "");
  json light =
      reportJson("--profile '" + repoProfile(runs("loader_light.sqlite.xz")) + "' tests/data/overhead/resnet.py");
  const json& lu = light["verdict"]["unprofiled"];
  EXPECT_TRUE(lu["wall_ns"].is_null()) << lu.dump();
  EXPECT_GT(lu["range_ns"][1].get<double>(), 1.3 * lu["range_ns"][0].get<double>());
}

// gpt.py reads `loss.item()` every iteration, yet the GPU is done by then: the measured block
// is 0.01 ms/step, so the finding is a note, not a warning; train_small's `.item()` blocks for
// milliseconds and stays a warning.
TEST(MeasuredSeverity, FollowsWhatTheProfileMeasured) {
  std::string gpt = repoProfile(runs("gpt_full.sqlite.xz"));
  auto small = runSightline("check --profile '" + gpt + "' tests/data/overhead/gpt.py", sourcePath(""));
  auto at = small.out.find("gpt.py:149:");
  ASSERT_NE(at, std::string::npos) << small.out;
  std::string line = small.out.substr(at, small.out.find('\n', at) - at);
  EXPECT_NE(line.find(": information: "), std::string::npos) << line;
  EXPECT_NE(line.find("too little to matter in this run"), std::string::npos) << line;
  std::string naive = repoProfile("examples/train_small_naive.sqlite.xz");
  auto big = runSightline("check --profile '" + naive + "' examples/train_small.py", sourcePath(""));
  at = big.out.find("train_small.py:109:");
  ASSERT_NE(at, std::string::npos) << big.out;
  line = big.out.substr(at, big.out.find('\n', at) - at);
  EXPECT_NE(line.find(": warning: "), std::string::npos) << line;
  EXPECT_EQ(line.find("too little"), std::string::npos) << line;
}

// A file over 150 lines prints its lines with costs, each run of the others as one marker;
// --all-lines prints them all.
TEST(HotLines, LongFilesPrintTheirLinesWithCosts) {
  std::string gpt = repoProfile(runs("gpt_full.sqlite.xz"));
  auto hot = runSightline("report --profile '" + gpt + "' tests/data/overhead/gpt.py", sourcePath(""));
  EXPECT_NE(hot.out.find("│   32          y = F.scaled_dot_product_attention"), std::string::npos) << hot.out;
  EXPECT_EQ(hot.out.find("import argparse"), std::string::npos) << "a line without cost";
  EXPECT_NE(hot.out.find("⋮ 25 lines without cost"), std::string::npos) << hot.out;
  EXPECT_NE(hot.out.find("--all-lines prints the whole file"), std::string::npos);
  auto all = runSightline("report --all-lines --profile '" + gpt + "' tests/data/overhead/gpt.py", sourcePath(""));
  EXPECT_NE(all.out.find("│    9  import argparse"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("lines without cost"), std::string::npos);
}

// Naming a script the profile never ran: a notice names the script it did run.
TEST(NeverRan, TheReportSaysWhichScriptTheProfileRan) {
  std::string gpt = repoProfile(runs("gpt_full.sqlite.xz"));
  auto other = runSightline("report --profile '" + gpt + "' tests/data/overhead/resnet.py", sourcePath(""));
  EXPECT_NE(other.out.find("Notice    the profile never ran this file"), std::string::npos) << other.out;
  EXPECT_NE(other.out.find("most of its GPU time is on "), std::string::npos);
  EXPECT_NE(other.out.find("gpt.py (100%)"), std::string::npos) << other.out;
  auto same = runSightline("report --profile '" + gpt + "' tests/data/overhead/gpt.py", sourcePath(""));
  EXPECT_EQ(same.out.find("never ran"), std::string::npos) << same.out;
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// Ranks in the replay: in the DDP run of tests/data/capture (no straggler by design) the ranks
// wait 5-6 ms/step for each other as captured, a wait no rank's own GPU work explains: the
// replay drops it. In the DDP run of tests/data/multi/ddp rank 1 does 138 ms/step of extra work
// on purpose: that wait is the program's and stays.
TEST(CaptureOverhead, TheReplayKeepsOnlyTheWaitsALateRanksWorkExplains) {
  auto replay = [](const std::string& profile) {
    json doc = reportJson("--profile '" + profile + "'");
    const json& s = doc["step_summary"];
    double wait = 0;
    for (const auto& r : doc["ranks"])
      wait += r["steady_comm_wait_ns"].get<double>() / std::max(1, r["steady_steps"].get<int>());
    return std::make_tuple(s["busy_ns"].get<double>(), s["unprofiled"]["busy_ns"].get<double>(),
                           wait / static_cast<double>(doc["ranks"].size()));
  };
  auto [busy, replayed, wait] = replay(repoProfile("tests/data/capture/runs/ddp_nsys.sqlite.xz"));
  ASSERT_GT(wait, 1e6);
  // The summary's busy time is the GPU's own work (its waits left out): the replay's adds at most
  // a fifth of the waits back.
  EXPECT_LT(replayed, busy + 0.2 * wait) << "waits no rank's work explains go";
  auto [busy_one, replayed_one, wait_one] = replay(repoProfile("tests/data/multi/ddp/ddp_one.sqlite.xz"));
  ASSERT_GT(wait_one, 10e6);
  EXPECT_GT(replayed_one, 0.9 * busy_one) << "the straggler's own work keeps its wait";
}

}  // namespace
}  // namespace sightline::testing
