// Steps files (sightline capture's NAME.steps.json) and step logs read into measurements.
#include "server/workspace/steps_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/scratch_dir.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

class StepsFile : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) { return dir_.write(name, text); }
  testing::ScratchDir dir_{"sightline_steps"};
};

TEST_F(StepsFile, ItsNameBesideTheProfile) {
  EXPECT_EQ(stepsFileFor("/w/run.sqlite"), "/w/run.steps.json");
  EXPECT_EQ(stepsFileFor("/w/run.nsys-rep"), "/w/run.steps.json");
  EXPECT_EQ(stepsFileFor("run.rank3.pt.trace.json.gz"), "run.steps.json");
  EXPECT_EQ(stepsFileFor("/w/a.b.json"), "/w/a.b.steps.json");
  EXPECT_EQ(stepsFileFor("/w/my.rankings.sqlite"), "/w/my.rankings.steps.json") << "not a rank's number";
}

TEST_F(StepsFile, EveryRanksTimedStepsMakeTheStep) {
  std::string path = write("run.steps.json", R"({"sightline_steps": 1, "profiler": "nsys", "ranks": [
    {"rank": 0, "timed": [{"step": 6, "gpu_ns": 10000000, "host_ns": 9000000},
                          {"step": 7, "gpu_ns": 12000000, "host_ns": 9000000},
                          {"step": 8, "gpu_ns": 11000000, "host_ns": 9000000}]},
    {"rank": 1, "timed": [{"step": 6, "gpu_ns": 13000000}, {"step": 7, "host_ns": 14000000}]}]})");
  std::string error;
  auto m = readStepsFile(path, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->source, model::StepMeasurement::Source::Measured);
  EXPECT_EQ(m->ranks, 2);
  EXPECT_EQ(m->steps, 5);
  EXPECT_EQ(m->median_ns, 12'000'000);
  EXPECT_EQ(m->min_ns, 10'000'000);
  EXPECT_EQ(m->max_ns, 14'000'000) << "a step without its GPU interval takes the host's";
  EXPECT_EQ(m->rank_median_ns, (std::vector<int64_t>{11'000'000, 13'500'000})) << "two steps: their mean";
  EXPECT_EQ(m->from, "run.steps.json");
  auto found = findStepsFile(dir_ / "run.sqlite", error);
  ASSERT_TRUE(found) << error;
  EXPECT_EQ(found->median_ns, 12'000'000);
}

// Issue 55: how the steps were told, the loop's wait for data (every rank's timed steps) and its
// line, and each process's pid, rank and host.
TEST_F(StepsFile, TheLoopsFactsAndTheProcesses) {
  std::string path = write("loop.steps.json", R"({"sightline_steps": 1, "profiler": "nsys", "ranks": [
    {"rank": 0, "host": "node7", "pid": 1234, "step_by": "backward",
     "input_site": {"path": "/w/train.py", "line": 96},
     "timed": [{"step": 6, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": 4000000},
               {"step": 7, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": 0},
               {"step": 8, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": 6000000}]},
    {"rank": 1, "host": "node8", "pid": 99, "step_by": "backward",
     "input_site": {"path": "/w/other.py", "line": 3},
     "timed": [{"step": 6, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": 5000000},
               {"step": 7, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": -4},
               {"step": 8, "gpu_ns": 10000000, "host_ns": 10000000, "input_ns": 18446744073709551615}]}]})");
  std::string error;
  auto m = readStepsFile(path, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->step_by, "backward");
  EXPECT_EQ(m->profiler, "nsys") << "the timed steps ran with nsys loaded";
  EXPECT_EQ(m->input_ns, 4'500'000) << "the median of 0, 4, 5 and 6 ms: waits out of range are not read";
  EXPECT_EQ(m->input_path, "/w/train.py") << "the first rank's";
  EXPECT_EQ(m->input_line, 96);
  ASSERT_EQ(m->processes.size(), 2u);
  EXPECT_EQ(m->processes[0].pid, 1234u);
  EXPECT_EQ(m->processes[0].rank, 0);
  EXPECT_EQ(m->processes[0].host, "node7");
  EXPECT_EQ(m->processes[1].pid, 99u);
  EXPECT_EQ(m->processes[1].rank, 1);
  EXPECT_EQ(m->processes[1].host, "node8");
  // Ranks that disagree on how steps were told, no wait, a rank without a number, a site with no
  // line, a host past 4 KiB.
  path = write("mixed.steps.json", R"({"sightline_steps": 1, "ranks": [
    {"rank": 0, "pid": 5, "step_by": "optimizer", "input_site": {"path": "/w/train.py"},
     "timed": [{"step": 6, "gpu_ns": 10000000, "host_ns": 10000000}]},
    {"rank": "one", "pid": -3, "step_by": "backward", "host": ")" +
                                       std::string(5000, 'h') + R"(",
     "timed": [{"step": 6, "gpu_ns": 10000000, "host_ns": 10000000}]}]})");
  m = readStepsFile(path, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->step_by, "") << "not one way";
  EXPECT_EQ(m->profiler, "") << "not said";
  EXPECT_EQ(m->input_ns, -1);
  EXPECT_EQ(m->input_path, "");
  EXPECT_EQ(m->input_line, 0);
  ASSERT_EQ(m->processes.size(), 2u);
  EXPECT_EQ(m->processes[1].rank, -1);
  EXPECT_EQ(m->processes[1].pid, 0u);
  EXPECT_EQ(m->processes[1].host, "");
  // A file of an older capture: how steps were told is not known.
  path = write("old.steps.json",
               R"({"sightline_steps": 1, "ranks": [{"rank": 0, "timed": [{"step": 6, "gpu_ns": 10000000}]}]})");
  m = readStepsFile(path, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->step_by, "");
  EXPECT_EQ(m->input_ns, -1);
}

TEST_F(StepsFile, WhatIsNotOneIsAnError) {
  std::string error;
  EXPECT_FALSE(findStepsFile(dir_ / "none.sqlite", error));
  EXPECT_EQ(error, "") << "no steps file beside it: nothing to say";
  for (const char* text : {"", "[]", R"({"sightline_steps": 2, "ranks": []})", R"({"sightline_steps": 1, "ranks": []})",
                           R"({"sightline_steps": 1, "ranks": [{"timed": [{"gpu_ns": -5}, {"gpu_ns": "x"},
                              {"gpu_ns": 18446744073709551615}]}]})"}) {
    std::string path = write("bad.steps.json", text);
    EXPECT_FALSE(readStepsFile(path, error)) << text;
    EXPECT_NE(error.find("bad.steps.json"), std::string::npos) << error;
  }
}

TEST_F(StepsFile, ALogNamesWhatItRead) {
  std::string error;
  std::string log = write("train.log",
                          "| epoch 1 | 200/ 453 batches | ms/batch 7.50 | loss 6.0\n"
                          "| epoch 1 | 400/ 453 batches | ms/batch 7.30 | loss 5.9\n"
                          "| end of epoch 1 | time: 3.76s | valid loss 5.74\n");
  auto m = readStepLog(log, error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->source, model::StepMeasurement::Source::StepLog);
  EXPECT_EQ(m->median_ns, 7'300'000);
  EXPECT_TRUE(m->averaged);
  EXPECT_EQ(m->log_format, "`ms/batch` means");
  EXPECT_EQ(m->log_set_aside, 1);
  std::string epochs = write("epochs.log", "| end of epoch 1 | time: 3.76s | valid loss 5.74\n");
  EXPECT_FALSE(readStepLog(epochs, error));
  EXPECT_NE(error.find("1 line with a time was set aside"), std::string::npos) << error;
}

}  // namespace
}  // namespace sightline::server
