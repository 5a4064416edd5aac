// Issue 55 on captures made for it by `sightline capture` on an H200 (tests/data/capture/runs,
// stage `hooks` of device_run.sh; the table in that folder's README): each kind of loop gets its
// measured step, the steps it profiled, the bound the measurement shows and advice the run does
// not already follow. Each test failed before the change it names.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/support/lost_records.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

std::string run(const std::string& name) { return "tests/data/capture/runs/" + name; }
std::string shellQuoted(const std::string& s) { return "'" + s + "'"; }

// A capture as its user has it: the export (or trace) with the steps file beside it.
std::string captured(const std::string& name) {
  return name.ends_with(".xz") ? repoProfile(run(name)) : sourcePath(run(name));
}

struct Report {
  json doc;
  std::string text;
};

Report report(const std::string& capture, const std::string& script) {
  std::string args =
      " --profile " + shellQuoted(captured(capture)) + " " + shellQuoted(sourcePath("tests/data/capture/" + script));
  Report out;
  auto js = runSightline("report --format json" + args, sourcePath(""));
  EXPECT_EQ(js.code, 0) << js.out;
  out.doc = json::parse(js.out, nullptr, false);
  auto text = runSightline("report" + args, sourcePath(""));
  EXPECT_EQ(text.code, 0) << text.out;
  out.text = text.out.substr(0, text.out.find("\n\n"));  // the header
  return out;
}

const json& change(const json& doc, const std::string& name) {
  static const json none;
  for (const auto& c : doc["verdict"]["changes"])
    if (c["change"] == name) return c;
  return none;
}

// Every capture here: the profiled steps are the ones the hook marked (5, ProfilerStep#N), and
// the headline is the step measured without the profiler in the same run.
TEST(CaptureRuns, EachLoopIsMeasuredAndItsProfiledStepsFound) {
  struct Case {
    const char* capture;
    const char* script;
  };
  for (const Case& c : {Case{"hw_nsys.sqlite.xz", "hw.py"}, Case{"hw_torch.rank0.pt.trace.json.gz", "hw.py"},
                        Case{"graphs_nsys.sqlite.xz", "graphs.py"}, Case{"loader1_nsys.sqlite.xz", "resnet.py"},
                        Case{"loader8_nsys.sqlite.xz", "resnet.py"}}) {
    SCOPED_TRACE(c.capture);
    Report r = report(c.capture, c.script);
    EXPECT_EQ(r.doc["steps_source"], "ProfilerStep ranges");
    EXPECT_EQ(r.doc["steps"], 5);
    const json& u = r.doc["verdict"]["unprofiled"];
    EXPECT_EQ(u["source"], "measured") << u.dump();
    EXPECT_EQ(u["steps"], 20) << u.dump();
    // Under nsys the timed steps ran with nsys loaded outside its range, and the text says so.
    bool nsys = std::string(c.capture).find("_nsys") != std::string::npos;
    EXPECT_NE(r.text.find(nsys ? "measured with nsys loaded but not recording, in the same run over 20 steps"
                               : "measured without the profiler in the same run over 20 steps"),
              std::string::npos)
        << r.text;
  }
}

// Item 9: a hand-written SGD update (no optimizer object) is stepped by its backward() calls,
// under both profilers, and the report says that is what a step is.
TEST(CaptureRuns, AHandWrittenUpdateIsSteppedByBackward) {
  for (const char* capture : {"hw_nsys.sqlite.xz", "hw_torch.rank0.pt.trace.json.gz"}) {
    SCOPED_TRACE(capture);
    Report r = report(capture, "hw.py");
    EXPECT_NE(r.text.find("a step is each backward(): the loop has no optimizer"), std::string::npos) << r.text;
    // Its own log of the same run (hw_*.log) gives 5.86 and 6.40 ms a step; the plain runs 5.3-5.4.
    double wall = r.doc["verdict"]["unprofiled"]["wall_ns"].get<double>();
    EXPECT_GT(wall, 5.0e6);
    EXPECT_LT(wall, 7.0e6);
  }
}

// Item 5: one loader worker starves the loop. The measured wait for the next batch makes it
// input-bound (not launch-bound, as the captured gaps said), with the loader's advice at the
// loop's line; eight workers keep up, and no input cause is named.
TEST(CaptureRuns, AStarvedLoaderIsInputBoundByTheMeasuredWait) {
  Report one = report("loader1_nsys.sqlite.xz", "resnet.py");
  const json& v = one.doc["verdict"];
  EXPECT_EQ(v["unprofiled"]["bound"], "input-bound") << v["unprofiled"].dump();
  ASSERT_FALSE(v["causes"].empty());
  const json& cause = v["causes"][0];
  EXPECT_EQ(cause["cause"], "input pipeline") << cause.dump();
  EXPECT_EQ(cause["measured"], true);
  EXPECT_GT(cause["ns_per_step"].get<double>(), 100e6) << "the plain log waits 120 ms a step for data";
  EXPECT_EQ(cause["lines"][0]["line"], 96) << "the loop's `for ... in loader` line";
  const json& loader = change(one.doc, "loader-workers");
  ASSERT_FALSE(loader.is_null()) << v["changes"].dump();
  EXPECT_NE(loader["text"].get<std::string>().find("num_workers"), std::string::npos);
  EXPECT_EQ(one.text.find("torch.compile"), std::string::npos) << one.text;

  Report eight = report("loader8_nsys.sqlite.xz", "resnet.py");
  EXPECT_NE(eight.doc["verdict"]["unprofiled"]["bound"], "input-bound");
  for (const auto& c : eight.doc["verdict"]["causes"]) EXPECT_NE(c["cause"], "input pipeline") << c.dump();
}

// Items 4 and 8: a run that replays CUDA graphs is never told to compile or to graph; the advice
// counts the launches left outside the graphs and names their lines (clipping, the optimizer,
// zero_grad: graphs.py:33-35), and a node-level trace puts each replayed kernel on the call's line
// with its forward and backward.
TEST(CaptureRuns, GraphsAreNeverAdvisedToARunThatReplaysThem) {
  Report r = report("graphs_nsys.sqlite.xz", "graphs.py");
  EXPECT_EQ(r.text.find("reduce-overhead"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("fuse kernels with torch.compile"), std::string::npos) << r.text;
  const json& outside = change(r.doc, "launches-outside-graphs");
  ASSERT_FALSE(outside.is_null()) << r.doc["verdict"]["changes"].dump();
  std::string text = outside["text"].get<std::string>();
  EXPECT_NE(text.find("most at graphs.py:34 (400), graphs.py:33"), std::string::npos) << text;
  EXPECT_EQ(text.find(":0 ("), std::string::npos) << "launches of no line are counted, not named: " << text;
  for (const auto& line : r.doc["files"][0]["lines"])
    if (line["line"] == 30) {
      EXPECT_GT(line["forward_ns"].get<double>(), 0) << line.dump();
      EXPECT_GT(line["backward_ns"].get<double>(), line["forward_ns"].get<double>()) << line.dump();
    }
}

// Items 3 and 7, on the 2-rank DDP capture: ranks come from the steps file (nsys records none),
// and the straggler found in the profiled steps is said to be as captured, beside the timed
// steps, which meet at every collective and cannot name one.
TEST(CaptureRuns, ADdpCapturesRanksAndStragglerAreTheCapturesOwn) {
  Report r = report("ddp_nsys.sqlite.xz", "train_ddp.py");
  EXPECT_NE(r.text.find("ranks from the capture's steps file"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("Straggler as captured, rank "), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("the timed steps cannot name a late rank"), std::string::npos) << r.text;
  // Ranks stepping together (21.03 and 21.04 ms) are one figure, not "21.0–21.0".
  EXPECT_NE(r.text.find("each rank's timed step (median) is 21.0 ms ("), std::string::npos) << r.text;
  EXPECT_EQ(r.doc["verdict"]["unprofiled"]["source"], "measured");
}

// Item 2, on the 2-rank DDP capture with the plain run's own log (no steps file): the busy share
// is of the GPU's own work, known, and the bound is not "waiting ranks" (the ranks wait for the
// profiler's slowing of their hosts); the straggler found in the profiled steps is said to be
// as captured, beside the step the log gives.
TEST(CaptureRuns, ADdpWithAStepLogIsJudgedOnItsOwnWork) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sightline-ddplog-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(repoProfile(run("ddp_nsys.sqlite.xz")), dir / "run.sqlite", fs::copy_options::overwrite_existing);
  std::string args = " --profile " + shellQuoted((dir / "run.sqlite").string()) + " --step-log " +
                     shellQuoted(sourcePath(run("ddp_plain_a.log"))) + " " +
                     shellQuoted(sourcePath("tests/data/capture/train_ddp.py"));
  auto js = runSightline("report --format json" + args, sourcePath(""));
  ASSERT_EQ(js.code, 0) << js.out;
  json doc = json::parse(js.out);
  const json& u = doc["verdict"]["unprofiled"];
  EXPECT_EQ(u["source"], "step-log") << u.dump();
  ASSERT_TRUE(u["busy_share"].is_number()) << u.dump();
  EXPECT_NE(u["bound"], "bound by waiting ranks") << u.dump();
  auto text = runSightline("report" + args, sourcePath(""));
  std::string header = text.out.substr(0, text.out.find("\n\n"));
  EXPECT_NE(header.find("Straggler as captured, "), std::string::npos) << header;
  EXPECT_NE(header.find("without the profiler the step is 18.7 ms (ddp_plain_a.log): the waits above are as captured"),
            std::string::npos)
      << header;
  EXPECT_EQ(header.find("GPU busy: not known"), std::string::npos) << header;
  fs::remove_all(dir);
}

// Item 6, on FSDP2 at 2 ranks under both profilers: the steps are the hook's ProfilerStep marks,
// one per optimizer step (5 a rank), never the pseudo-steps repeating launches make inside them
// (20 "steps" of 8.6 ms in 2 real ones once); the captured step is the one the hook timed under
// the profiler, and the straggler and busy share are per real step.
TEST(CaptureRuns, FsdpStepsAreTheMarkedOptimizerSteps) {
  for (const char* capture : {"fsdp2_torch.rank0.pt.trace.json.gz", "fsdp2_nsys.sqlite.xz"}) {
    SCOPED_TRACE(capture);
    std::string c = capture;
    std::string profiles = " --profile " + shellQuoted(captured(c));
    if (c.find("rank0") != std::string::npos)
      profiles += " --profile " + shellQuoted(captured("fsdp2_torch.rank1.pt.trace.json.gz"));
    std::string args = profiles + " " + shellQuoted(sourcePath("tests/data/capture/train_fsdp2.py"));
    auto js = runSightline("report --format json" + args, sourcePath(""));
    ASSERT_EQ(js.code, 0) << js.out;
    json doc = json::parse(js.out);
    EXPECT_EQ(doc["steps_source"], "ProfilerStep ranges");
    EXPECT_EQ(doc["steps_per_rank"], 5) << doc["steps"];
    EXPECT_EQ(doc["ranks"].size(), 2u);
    // The hook's own timing of the profiled steps (its steps file) against the report's step.
    std::string steps_file = c.substr(0, c.find('.')) + ".steps.json";
    json measured = json::parse(readFile(sourcePath(run(steps_file))));
    std::vector<double> profiled;
    for (const auto& r : measured["ranks"])
      for (const auto& st : r["profiled"]) profiled.push_back(st["gpu_ns"].get<double>());
    ASSERT_FALSE(profiled.empty());
    std::sort(profiled.begin(), profiled.end());
    double hook = profiled[profiled.size() / 2], step = doc["verdict"]["wall_ns"].get<double>();
    EXPECT_NEAR(step / hook, 1.0, 0.2) << "report " << step << " ns, hook " << hook << " ns";
    EXPECT_FALSE(doc["job"]["straggler"].is_null());
    EXPECT_LT(doc["verdict"]["busy_share"].get<double>(), 0.5) << "most of a rank's GPU time waits for the other";
  }
}

// Item 3, the rest: in the profiled steps of both DDP captures the late rank changes between
// steps, and rank 0, late in some, runs a line the other rank does not (train_ddp.py:157, its
// logging `loss.item()`): the text says both, and JSON has them under job.late_ranks.
TEST(CaptureRuns, ALateRankThatChangesAndARankOnlyLineAreNamed) {
  for (const char* capture : {"ddp_nsys.sqlite.xz", "ddp_torch.rank0.pt.trace.json.gz"}) {
    SCOPED_TRACE(capture);
    std::string profiles = " --profile " + shellQuoted(captured(capture));
    if (std::string(capture).find("rank0") != std::string::npos)
      profiles += " --profile " + shellQuoted(captured("ddp_torch.rank1.pt.trace.json.gz"));
    std::string args = profiles + " " + shellQuoted(sourcePath("tests/data/capture/train_ddp.py"));
    auto text = runSightline("report" + args, sourcePath(""));
    ASSERT_EQ(text.code, 0) << text.out;
    std::string header = text.out.substr(0, text.out.find("\n\n"));
    EXPECT_NE(header.find("the late rank changes between steps: rank 1 "), std::string::npos) << header;
    EXPECT_NE(header.find("; rank 0 ("), std::string::npos) << header;
    EXPECT_NE(
        header.find(
            ") held up, it launches GPU work at train_ddp.py:157: no other rank's profile puts GPU work on that line"),
        std::string::npos)
        << header;
    auto js = runSightline("report --format json" + args, sourcePath(""));
    ASSERT_EQ(js.code, 0);
    json doc = json::parse(js.out, nullptr, false);
    const json& late = doc["job"]["late_ranks"];
    ASSERT_EQ(late.size(), 2u) << late.dump();
    EXPECT_EQ(late[0]["rank"], doc["job"]["straggler"]["rank"]) << "the straggler first";
    EXPECT_EQ(late[0]["steps"], doc["job"]["straggler"]["steps"]);
    ASSERT_EQ(late[1]["only_lines"].size(), 1u) << late.dump();
    EXPECT_EQ(late[1]["only_lines"][0]["line"], 157);
    EXPECT_TRUE(late[0]["only_lines"].empty()) << "rank 1 runs no line of its own";
  }
}

// Item 8: graphs.py traced whole run by plain nsys with its default graph-level trace. The report
// says what such a capture lacks and how to get it; the launches made while
// make_graphed_callables captured the model into graphs (its backward on autograd's thread) run
// nothing then and are not lost records (they were 260, 1.9%, "the capture ended before ...").
TEST(CaptureRuns, AGraphLevelCaptureSaysWhatItLacks) {
  auto js = runSightline("report --format json --profile " + shellQuoted(captured("graphs_wholerun.sqlite.xz")) + " " +
                             shellQuoted(sourcePath("tests/data/capture/graphs.py")),
                         sourcePath(""));
  ASSERT_EQ(js.code, 0) << js.out;
  json doc = json::parse(js.out);
  bool told = false;
  for (const auto& w : doc["warnings"]) {
    std::string text = w.get<std::string>();
    told = told || (text.find("40 CUDA graph replays were traced as whole graphs") != std::string::npos &&
                    text.find("--cuda-graph-trace=node") != std::string::npos);
    EXPECT_EQ(text.find("have no GPU record"), std::string::npos) << text;
  }
  EXPECT_TRUE(told) << doc["warnings"].dump();
  EXPECT_EQ(doc["lost_launches"], 0);
}

// Item 1: a capture whose autograd thread lost its kernels in every step (made from the resnet.py
// capture by deleting the kernels that thread launched: 2240 of its 2375 launches keep no record,
// as an ImageNet capture lost all of that thread's). Its steps are still found, with what the
// main thread ran on its lines; no busy share, bound, idle cause or idle finding rests on the
// lost records, and the warning says the thread lost them in every step (not the capture's end).
TEST(CaptureRuns, LostRecordsOfAThreadNameNoBoundOrCause) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sightline-lost-" + std::to_string(::getpid()));
  std::string error;
  fs::path capture = craftLostBackwardCapture(dir.string(), error);
  ASSERT_FALSE(capture.empty()) << error;

  std::string args =
      " --profile " + shellQuoted(capture.string()) + " " + shellQuoted(sourcePath("tests/data/capture/resnet.py"));
  auto js = runSightline("report --format json" + args, sourcePath(""));
  ASSERT_EQ(js.code, 0) << js.out;
  json doc = json::parse(js.out);
  EXPECT_EQ(doc["steps"], 5) << "the steps are kept, not all called lost";
  const json& v = doc["verdict"];
  EXPECT_TRUE(v["unprofiled"]["bound"].is_null()) << v["unprofiled"].dump();
  EXPECT_TRUE(v["unprofiled_busy_share"].is_null()) << v.dump();
  EXPECT_TRUE(v["idle_ns_per_step"].is_null());
  for (const auto& c : v["causes"]) EXPECT_EQ(c["measured"], true) << c.dump();
  EXPECT_GT(doc["attributed_gpu_ns"].get<double>(), 0);

  auto text = runSightline("report" + args, sourcePath(""));
  std::string header = text.out.substr(0, text.out.find("\n\n"));
  EXPECT_NE(header.find("thread 1211 lost them in every step"), std::string::npos) << header;
  EXPECT_NE(header.find("GPU busy: not known (the capture lost GPU records"), std::string::npos) << header;
  EXPECT_EQ(header.find("Try "), std::string::npos) << header;
  EXPECT_EQ(header.find("Call torch.cuda.synchronize() before"), std::string::npos) << header;
  auto check = runSightline("check" + args, sourcePath(""));
  EXPECT_EQ(check.out.find("[gpu-idle]"), std::string::npos) << check.out;
  fs::remove_all(dir);
}

// The README's demo: the capture `sightline capture` made of examples/train_small.py headlines
// its measured step and bound, not a range and "cannot tell".
TEST(CaptureRuns, TheDemoHeadlinesTheMeasuredStep) {
  std::string args = " --profile " + shellQuoted(repoProfile("examples/train_small_capture.sqlite.xz")) + " " +
                     shellQuoted(sourcePath("examples/train_small.py"));
  auto text = runSightline("report" + args, sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(
      text.out.find("Unprofiled 10.9 ms, measured with nsys loaded but not recording, in the same run over 20 steps"),
      std::string::npos)
      << text.out.substr(0, 2000);
  EXPECT_NE(text.out.find("input-bound"), std::string::npos);
  EXPECT_EQ(text.out.find("cannot tell"), std::string::npos) << text.out.substr(0, 2000);
  // The per-line idle is the capture's, and says so beside the measured step.
  auto check = runSightline("check" + args, sourcePath(""));
  EXPECT_NE(check.out.find("as captured (the whole step measured without the profiler: 10.9 ms)"), std::string::npos)
      << check.out;
  // Only idle that recurs is a step's: lines 33, 46 and 109 idled once each in the 5 profiled
  // steps (6.9 ms/step at 109, past the step's measured idle); line 102, four times, is told.
  for (const char* once : {"train_small.py:33:", "train_small.py:46:", "train_small.py:109:"}) {
    for (size_t at = check.out.find(once); at != std::string::npos; at = check.out.find(once, at + 1)) {
      std::string finding = check.out.substr(at, check.out.find('\n', at) - at);
      EXPECT_EQ(finding.find("[gpu-idle]"), std::string::npos) << finding;
    }
  }
  EXPECT_NE(check.out.find("train_small.py:102:21: warning: the GPU sits idle"), std::string::npos) << check.out;
}

}  // namespace
}  // namespace sightline::testing
