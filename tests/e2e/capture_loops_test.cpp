// `sightline capture` on every kind of loop (issue 55), end to end on the stand-in torch: a
// hand-written update with no optimizer is stepped by backward(); the loop's wait for its
// DataLoader is timed per step at its line; each profiled step is marked ProfilerStep#N in the
// trace under both profilers, so that `report` finds exactly the profiled steps (in the
// stand-in's trace, and in a device capture's nsys export marked as the hook marks it).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/workspace/steps_file.h"
#include "tests/e2e/capture_fixture.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

// The 1-based line of fake_train.py that holds `text`.
int lineOfFakeTrain(const std::string& text) {
  std::ifstream in(capturePath("fake_train.py"));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

// The profiler and step-mark calls the stand-in torch logged, in order, without their pids.
std::vector<std::string> profilerCalls(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::string call = line.substr(line.find(' ') + 1);
    for (const char* kind : {"cuda.profiler.", "nvtx.", "emit_nvtx.", "profiler.", "record_function."})
      if (call.rfind(kind, 0) == 0) {
        out.push_back(call.substr(0, call.find(" {")));  // the profiler's options are checked elsewhere
        break;
      }
  }
  return out;
}

// `first`, then each step's mark opened and closed, then `last`.
std::vector<std::string> markedSteps(std::vector<std::string> first, const std::string& open, const std::string& close,
                                     int from, int to, const std::vector<std::string>& last) {
  for (int n = from; n <= to; ++n) {
    first.push_back(open + " ProfilerStep#" + std::to_string(n));
    first.push_back(close + " ProfilerStep#" + std::to_string(n));
  }
  first.insert(first.end(), last.begin(), last.end());
  return first;
}

TEST_F(Capture, AHandWrittenUpdateStepsByBackward) {
  auto run = capture("--profiler none -- " + kTrain + " --no-step --backward --steps 62");
  ASSERT_EQ(run.code, 0) << "32 backward() calls, then a window of 30\n" << run.out;
  json doc = steps();
  ASSERT_EQ(doc["ranks"].size(), 1u) << run.out;
  EXPECT_EQ(doc["ranks"][0]["step_by"], "backward");
  expectWindow(doc["ranks"][0], 5, 20, 0);
  std::string error;
  auto measured = server::readStepsFile((dir_ / "sightline-capture.steps.json").string(), error);
  ASSERT_TRUE(measured) << error;
  EXPECT_EQ(measured->step_by, "backward");
  EXPECT_EQ(measured->input_ns, -1) << "no DataLoader";
  EXPECT_NE(run.out.find("rank 0: 20 steps (each a backward(): no optimizer step was seen) without a profiler"),
            std::string::npos)
      << run.out;
  // Too few calls: how many there were, and a window that fits them.
  run = capture("--profiler none -- " + kTrain + " --no-step --backward --steps 40");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("no optimizer step was seen, and the run ended after 40 backward() calls"), std::string::npos)
      << run.out;
  std::string advice = "--warmup 1 --timed 7";
  ASSERT_NE(run.out.find("A window that fits 40 calls: " + advice + " (or run"), std::string::npos) << run.out;
  run = capture("--profiler none " + advice + " -- " + kTrain + " --no-step --backward --steps 40");
  EXPECT_EQ(run.code, 0) << "the suggested window fits\n" << run.out;
  expectWindow(steps()["ranks"][0], 1, 7, 0);
  // A backward() inside one (a reentrant checkpoint's) is not a step of its own.
  run = capture("--profiler none -- " + kTrain + " --no-step --backward --reentrant --steps 40");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("ended after 40 backward() calls"), std::string::npos) << run.out;
  // With an optimizer, its steps are the steps, backward() or not.
  run = capture("--profiler none -- " + kTrain + " --backward");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(steps()["ranks"][0]["step_by"], "optimizer");
  expectWindow(steps()["ranks"][0], 5, 20, 0);
}

TEST_F(Capture, EachProfiledStepIsMarkedProfilerStepN) {
  // nsys: an NVTX start/end range per step, inside the capture range (the step hook runs inside
  // the optimizer's own NVTX range: a push/pop range would not nest).
  auto run = capture("-- " + kTrain, withFakeNsys());
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(profilerCalls(file("torch.log")),
            markedSteps({"cuda.profiler.start", "emit_nvtx.enter record_shapes=False"}, "nvtx.range_start",
                        "nvtx.range_end", 26, 30, {"emit_nvtx.exit", "cuda.profiler.stop"}))
      << file("torch.log");
  // The PyTorch profiler: a record_function per step inside the profile.
  std::filesystem::remove(dir_ / "torch.log");
  run = capture("--profiler torch --warmup 2 --timed 3 --steps 4 -- " + kTrain);
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(profilerCalls(file("torch.log")),
            markedSteps({"profiler.enter"}, "record_function.enter", "record_function.exit", 6, 9, {"profiler.exit"}))
      << file("torch.log");
  // A loop stepped by backward(): its steps are marked by the numbers of its steps file.
  std::filesystem::remove(dir_ / "torch.log");
  run = capture("--profiler torch -- " + kTrain + " --no-step --backward --steps 70");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(profilerCalls(file("torch.log")),
            markedSteps({"profiler.enter"}, "record_function.enter", "record_function.exit", 26, 30, {"profiler.exit"}))
      << file("torch.log");
  EXPECT_EQ(steps()["ranks"][0]["profiled"][0]["step"], 26);
}

TEST_F(Capture, AReportOfTheTraceFindsExactlyTheProfiledSteps) {
  auto run = capture("--profiler torch -- " + kTrain);
  ASSERT_EQ(run.code, 0) << run.out;
  auto report = runSightline("report --format json --profile sightline-capture.rank0.pt.trace.json.gz", dir_.string());
  json j = json::parse(report.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << report.out;
  EXPECT_EQ(j["steps_source"], "ProfilerStep ranges") << report.out;
  // Every profiled step found; a slow one (a loaded machine) may be called warm-up or an outlier.
  const json& s = j["step_summary"];
  EXPECT_EQ(s["steady"].get<int>() + s["warmup"].get<int>() + s["outliers"].get<int>(), 5) << report.out;
}

// Under nsys the marks are NVTX start/end ranges (eventType 60 in the export): a capture of
// gpt.py made on the device, with its five profiled steps marked so, is read by them.
TEST_F(Capture, AnNsysReportFindsTheStartEndRangesOfTheProfiledSteps) {
  std::string marked = (dir_ / "gpt_marked.sqlite").string();
  std::filesystem::copy_file(dataProfile("capture/runs/gpt_nsys.sqlite.xz"), marked);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(marked.c_str(), &db), SQLITE_OK);
  // Five equal steps over the kernels' span, on the thread that steps the optimizer.
  for (int i = 0; i < 5; ++i) {
    std::string n = std::to_string(i);
    std::string sql =
        "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, endGlobalTid, domainId) SELECT lo + "
        "(hi - lo) / 5 * " +
        n + ", lo + (hi - lo) / 5 * (" + n + " + 1), 60, 'ProfilerStep#" + std::to_string(26 + i) +
        "', tid, tid, 0 FROM (SELECT MIN(start) AS lo, MAX(\"end\") AS hi FROM CUPTI_ACTIVITY_KIND_KERNEL), (SELECT "
        "globalTid AS tid FROM NVTX_EVENTS WHERE text LIKE 'Optimizer.step%' LIMIT 1)";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  }
  sqlite3_close(db);
  auto report = runSightline("report --format json --profile gpt_marked.sqlite", dir_.string());
  json j = json::parse(report.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << report.out;
  EXPECT_EQ(j["steps_source"], "ProfilerStep ranges") << report.out;
  // Every profiled step found; a slow one (a loaded machine) may be called warm-up or an outlier.
  const json& s = j["step_summary"];
  EXPECT_EQ(s["steady"].get<int>() + s["warmup"].get<int>() + s["outliers"].get<int>(), 5) << report.out;
}

TEST_F(Capture, TheLoopsWaitForDataIsTimedAtItsLine) {
  auto run = capture("-- " + kTrain + " --loader-ms 4", withFakeNsys());
  ASSERT_EQ(run.code, 0) << run.out;
  json r = steps()["ranks"][0];
  expectWindow(r, 5, 20, 5);
  for (const auto& s : r["timed"]) {
    ASSERT_TRUE(s.contains("input_ns")) << s.dump();
    // Each step asks the loader once: a 4 ms sleep, and not the 2 ms the step itself sleeps.
    EXPECT_GE(s["input_ns"].get<int64_t>(), 3'900'000) << s.dump();
    EXPECT_LE(s["input_ns"].get<int64_t>(), s["host_ns"].get<int64_t>() - 1'500'000) << s.dump();
  }
  for (const auto& s : r["profiled"]) EXPECT_FALSE(s.contains("input_ns")) << "timed steps only: " << s.dump();
  int line = lineOfFakeTrain("for batch in batches:");
  ASSERT_GT(line, 0);
  EXPECT_EQ(r["input_site"], (json{{"path", capturePath("fake_train.py")}, {"line", line}}));
  EXPECT_NE(run.out.find(", waiting for data 4."), std::string::npos) << run.out;
  // What report, check and the server take from it.
  std::string error;
  auto measured = server::readStepsFile((dir_ / "sightline-capture.steps.json").string(), error);
  ASSERT_TRUE(measured) << error;
  EXPECT_EQ(measured->step_by, "optimizer");
  EXPECT_GE(measured->input_ns, 3'900'000);
  EXPECT_LE(measured->input_ns, measured->median_ns - 1'500'000);
  EXPECT_EQ(measured->input_path, capturePath("fake_train.py"));
  EXPECT_EQ(measured->input_line, line);
  ASSERT_EQ(measured->processes.size(), 1u);
  EXPECT_EQ(measured->processes[0].pid, r["pid"].get<uint32_t>());
  EXPECT_EQ(measured->processes[0].rank, 0);
  EXPECT_EQ(measured->processes[0].host, r["host"]);
  EXPECT_NE(run.out.find(" at " + capturePath("fake_train.py") + ":" + std::to_string(line) + ";"), std::string::npos)
      << run.out;
  // A progress bar of an installed package around the loader: the line is still the loop's.
  std::filesystem::create_directories(dir_ / "lib/site-packages");
  std::ofstream(dir_ / "lib/site-packages/fake_tqdm.py") << "def tqdm(iterable):\n    for x in iterable:\n"
                                                            "        yield x\n";
  run = capture("--profiler none -- " + kTrain + " --loader-ms 1 --progress-bar",
                "PYTHONPATH='" + capturePath("fake_torch") + ":" + (dir_ / "lib/site-packages").string() + "'");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(steps()["ranks"][0]["input_site"], (json{{"path", capturePath("fake_train.py")}, {"line", line}}));
  // A loop that asks no DataLoader: no wait, no line.
  run = capture("--profiler none -- " + kTrain);
  ASSERT_EQ(run.code, 0) << run.out;
  r = steps()["ranks"][0];
  EXPECT_FALSE(r.contains("input_site")) << r.dump();
  for (const auto& s : r["timed"]) EXPECT_FALSE(s.contains("input_ns")) << s.dump();
  EXPECT_EQ(run.out.find("waiting for data"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace sightline::testing
