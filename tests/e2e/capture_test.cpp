// `sightline capture` end to end, without torch or a GPU: the real binary runs small training
// scripts (tests/data/capture/fake_train.py) on a stand-in torch (fake_torch/: the optimizer
// hook registry, CUDA events on the host clock, the profilers' start and stop, logged) and a
// stand-in nsys (fake_bin/nsys). Checked: the steps file's schema and counts, the nsys and
// PyTorch profiler windows, ranks, chaining to the user's sitecustomize, the messages when no
// window came out, --stop-after, exit codes, and that Ctrl-C ends the command and all it left.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "analysis/features/code_actions.h"
#include "analysis/source/source_index.h"
#include "tests/e2e/capture_fixture.h"
#include "tests/support/test_paths.h"

extern char** environ;

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST_F(Capture, WritesTheStepsFileOfTheSchema) {
  auto run = capture("--profiler none -- " + kTrain);
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("trained 40 steps"), std::string::npos) << "the run goes on to its end";
  json doc = steps();
  ASSERT_TRUE(doc.is_object()) << file("sightline-capture.steps.json");
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  EXPECT_EQ(doc["sightline_steps"], 1);
  EXPECT_EQ(doc["profiler"], "none");
  EXPECT_EQ(doc["command"], json({"python3", capturePath("fake_train.py")}));
  EXPECT_EQ(doc["warmup"], 5);
  EXPECT_EQ(doc["timed"], 20);
  EXPECT_EQ(doc["profiled"], 0);
  EXPECT_EQ(doc["profiles"], json::array());
  ASSERT_EQ(doc["ranks"].size(), 1u);
  const json& r = doc["ranks"][0];
  for (const char* key : {"rank", "local_rank", "world_size", "pid", "device", "hook_ns"})
    EXPECT_TRUE(r[key].is_number_integer()) << key;
  EXPECT_TRUE(r["host"].is_string());
  EXPECT_EQ(r["rank"], 0);
  EXPECT_EQ(r["world_size"], 1);
  EXPECT_EQ(r["device"], 0);
  // The allocator's peaks as the stand-in torch reports them, read at the timed steps' end.
  EXPECT_EQ(r["memory_peak"], json({{"allocated_bytes", int64_t{3} << 30}, {"reserved_bytes", int64_t{4} << 30}}));
  expectWindow(r, 5, 20, 0);
  // The file starts with the schema's marker, for readers that sniff.
  EXPECT_EQ(file("sightline-capture.steps.json").rfind("{\"sightline_steps\": 1,", 0), 0u);
  EXPECT_NE(run.out.find("rank 0: 20 steps without a profiler, median "), std::string::npos) << run.out;
}

TEST_F(Capture, NsysWrapsTheCommandProfilesTheWindowAndExports) {
  auto run = capture("-o runs/gpt -- " + kTrain, withFakeNsys());
  ASSERT_EQ(run.code, 2) << "no folder runs/: refused before anything runs\n" << run.out;
  EXPECT_NE(run.out.find("no folder"), std::string::npos) << run.out;
  fs::create_directories(dir_ / "runs");
  run = capture("-o runs/gpt -- " + kTrain, withFakeNsys());  // nsys found on PATH: the default
  ASSERT_EQ(run.code, 0) << run.out;
  std::string nsys = file("nsys.log");
  std::string out = (dir_ / "runs/gpt").string();
  // Autograd's NVTX ranges come from the hook, for the profiled steps only.
  EXPECT_NE(nsys.find("profile --trace=cuda,nvtx,osrt --python-backtrace=cuda --cudabacktrace=all "
                      "--cuda-graph-trace=node --capture-range=cudaProfilerApi --capture-range-end=stop "
                      "--force-overwrite=true --output=" +
                      out + " python3 " + capturePath("fake_train.py") + "\n"),
            std::string::npos)
      << nsys;
  EXPECT_NE(nsys.find("export --type=sqlite --include-blobs=true --force-overwrite=true --output=" + out + ".sqlite " +
                      out + ".nsys-rep\n"),
            std::string::npos)
      << nsys;
  json doc = steps("runs/gpt");
  EXPECT_EQ(doc["profiler"], "nsys");
  EXPECT_EQ(doc["profiled"], 5);
  EXPECT_EQ(doc["profiles"], json({"gpt.sqlite"})) << "relative to the steps file";
  expectWindow(doc["ranks"][0], 5, 20, 5);
  // The range opens after the timed steps are read and closes after a synchronize.
  std::string log = file("torch.log");
  auto at = [&](const std::string& what) { return log.find(what); };
  ASSERT_NE(at("cuda.profiler.start"), std::string::npos) << log;
  EXPECT_LT(at("event.synchronize"), at("cuda.profiler.start")) << log;
  EXPECT_LT(at("cuda.profiler.start"), at("emit_nvtx.enter record_shapes=False")) << log;
  EXPECT_LT(at("emit_nvtx.enter"), at(" synchronize\n")) << log;
  EXPECT_LT(at(" synchronize\n"), at("emit_nvtx.exit")) << log;
  EXPECT_LT(at("emit_nvtx.exit"), at("cuda.profiler.stop")) << log;
  EXPECT_NE(run.out.find("sightline report --profile runs/gpt.sqlite"), std::string::npos) << run.out;
  // nsys's own autograd ranges, for the whole run, when asked.
  fs::remove(dir_ / "nsys.log");
  fs::remove(dir_ / "torch.log");
  run = capture("--autograd-nvtx nsys -o runs/gpt -- " + kTrain, withFakeNsys());
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_NE(file("nsys.log").find("profile --trace=cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda"),
            std::string::npos)
      << file("nsys.log");
  EXPECT_EQ(file("torch.log").find("emit_nvtx"), std::string::npos) << file("torch.log");
}

TEST_F(Capture, TorchProfilerWritesOneTracePerRank) {
  auto run = capture("--profiler torch -o ddp -- python3 '" + capturePath("fake_torchrun.py") + "' --nproc 2 '" +
                     capturePath("fake_train.py") + "'");
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = steps("ddp");
  EXPECT_EQ(doc["profiles"], json({"ddp.rank0.pt.trace.json.gz", "ddp.rank1.pt.trace.json.gz"}));
  ASSERT_EQ(doc["ranks"].size(), 2u) << "the launcher imports torch and steps nothing: no rank";
  for (int r = 0; r < 2; ++r) {
    const json& rank = doc["ranks"][static_cast<size_t>(r)];
    EXPECT_EQ(rank["rank"], r);
    EXPECT_EQ(rank["local_rank"], r);
    EXPECT_EQ(rank["world_size"], 2);
    EXPECT_EQ(rank["device"], r) << "the device of the optimizer's parameters";
    expectWindow(rank, 5, 20, 5);
    EXPECT_FALSE(readMaybeGzip((dir_ / ("ddp.rank" + std::to_string(r) + ".pt.trace.json.gz")).string()).empty());
  }
  EXPECT_NE(doc["ranks"][0]["pid"], doc["ranks"][1]["pid"]);
  std::string log = file("torch.log");
  EXPECT_NE(log.find("profiler.enter {\"activities\": [\"CPU\", \"CUDA\"], \"record_shapes\": true, "
                     "\"with_stack\": true}"),
            std::string::npos)
      << log;
  EXPECT_NE(run.out.find("--profile ddp.rank0.pt.trace.json.gz --profile ddp.rank1.pt.trace.json.gz"),
            std::string::npos)
      << run.out;
}

TEST_F(Capture, CountsFollowTheOptions) {
  auto run = capture("--profiler torch --warmup 2 --timed 3 --steps 4 -o small.steps.json -- " + kTrain +
                     " --steps 12 --second-optimizer");
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = steps("small");  // the suffix given is not doubled
  EXPECT_EQ(doc["warmup"], 2);
  EXPECT_EQ(doc["timed"], 3);
  EXPECT_EQ(doc["profiled"], 4);
  // Only the first optimizer seen counts: the second steps three times as often.
  expectWindow(doc["ranks"][0], 2, 3, 4);
}

TEST_F(Capture, ChainsToTheUsersSitecustomize) {
  fs::create_directories(dir_ / "user");
  std::ofstream(dir_ / "user/sitecustomize.py") << "import sys\nUSER_MARK = 1\nprint('user sitecustomize ran', "
                                                   "file=sys.stderr)\n";
  std::string probe =
      "python3 -c \"import sitecustomize, sys; print('theirs' if hasattr(sitecustomize, "
      "'USER_MARK') else 'ours'); print('torch loaded:', 'torch' in sys.modules)\"";
  auto run = capture("--profiler none -- " + probe,
                     "PYTHONPATH='" + capturePath("fake_torch") + ":" + (dir_ / "user").string() + "'");
  EXPECT_NE(run.out.find("user sitecustomize ran"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("theirs"), std::string::npos) << "import sitecustomize gives the user's\n" << run.out;
  EXPECT_NE(run.out.find("torch loaded: False"), std::string::npos) << "the hook never imports torch\n" << run.out;
  // A Python process that never imported torch: no window, and the message says why.
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.out.find("1 Python process ran with the hook, and none imported torch"), std::string::npos) << run.out;
  // The user's sitecustomize and the hook both act in a training run.
  run = capture("--profiler none -- " + kTrain,
                "PYTHONPATH='" + capturePath("fake_torch") + ":" + (dir_ / "user").string() + "'");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("user sitecustomize ran"), std::string::npos) << run.out;
}

TEST_F(Capture, SaysWhatItSawWhenNoOptimizerStepped) {
  auto run = capture("--profiler none -- " + kTrain + " --no-step --steps 3");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("no optimizer step was seen"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("torch imported, step hook on, CUDA available, 0 steps"), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(dir_ / "sightline-capture.steps.json"));
  run = capture("--profiler none -- " + kTrain + " --no-step --steps 3", "FAKE_CUDA=0");
  EXPECT_NE(run.out.find("CUDA not available"), std::string::npos) << run.out;
  run = capture("--profiler none -- python3 -c 'print(1)'", "PYTHONPATH=");
  EXPECT_NE(run.out.find("none imported torch"), std::string::npos) << run.out;
  run = capture("--profiler none -- sh -c 'exit 0'");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.out.find("no Python process ran the capture hook"), std::string::npos) << run.out;
}

TEST_F(Capture, SuggestsAWindowThatFitsARunThatEndedEarly) {
  auto run = capture("--profiler torch -- " + kTrain + " --steps 12");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("the run ended after 12 optimizer steps, before the window of 30 (5 warm-up, 20 timed, "
                         "5 profiled) was complete"),
            std::string::npos)
      << run.out;
  std::string advice = "--warmup 2 --timed 8 --steps 2";
  ASSERT_NE(run.out.find(advice), std::string::npos) << run.out;
  run = capture("--profiler torch " + advice + " -- " + kTrain + " --steps 12");
  EXPECT_EQ(run.code, 0) << "the suggested window fits\n" << run.out;
  run = capture("--profiler none -- " + kTrain + " --steps 1");
  EXPECT_NE(run.out.find("run the command longer"), std::string::npos) << run.out;
}

TEST_F(Capture, StopAfterEndsTheRunOnceTheWindowIsWritten) {
  auto run = capture("--profiler torch --stop-after -- " + kTrain + " --forever");
  ASSERT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(run.out.find("trained"), std::string::npos) << "SystemExit left the loop\n" << run.out;
  json doc = steps();
  expectWindow(doc["ranks"][0], 5, 20, 5);
  EXPECT_EQ(doc["profiles"], json({"sightline-capture.rank0.pt.trace.json.gz"}));
}

TEST_F(Capture, ExitCodes) {
  // The command's own failure wins; the window it measured is still written.
  auto run = capture("--profiler none -- " + kTrain + " --exit 3");
  EXPECT_EQ(run.code, 3) << run.out;
  EXPECT_TRUE(fs::exists(dir_ / "sightline-capture.steps.json"));
  EXPECT_NE(run.out.find("the command ended with exit code 3"), std::string::npos) << run.out;
  run = capture("--profiler none -- " + kTrain + " --steps 3 --exit 4");
  EXPECT_EQ(run.code, 4) << run.out;
  run = capture("--profiler none -- no-such-command-here");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("cannot start no-such-command-here"), std::string::npos) << run.out;
  run = capture("--profiler none");
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.out.find("name the command to run after --"), std::string::npos) << run.out;
  run = capture("--timed x -- " + kTrain);
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.out.find("--timed expects a whole number from 1, got \"x\""), std::string::npos) << run.out;
  run = capture("--profiler nsys --nsys /no/such/nsys -- " + kTrain);
  EXPECT_EQ(run.code, 2) << run.out;
  // An export that fails: exit 2, and the steps file names the report (export it later).
  run = capture("-- " + kTrain, withFakeNsys() + " FAKE_NSYS_EXPORT_FAILS=1");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("nsys export failed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fake export failure"), std::string::npos) << run.out;
  EXPECT_EQ(steps()["profiles"], json({"sightline-capture.nsys-rep"})) << run.out;
  // Without "--", the command starts at the first word that is not an option of ours.
  run = capture("--profiler none " + kTrain + " --steps 40");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(steps()["command"].back(), "40");
  // The verb's help.
  run = capture("--help");
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.out.find("usage: sightline capture"), std::string::npos);
}

// The "Time steps N..M, then profile" code action writes the same window into the loop: run on
// the stand-in torch, its code opens and closes the range and writes a steps file of the schema.
TEST_F(Capture, TheCodeActionsWindowWritesTheSameStepsFile) {
  std::string text =
      "import time\nimport torch\n\n\nclass Loss:\n    def backward(self):\n        time.sleep(0.002)\n\n\n"
      "opt = torch.optim.SGD([torch.Tensor('cuda')])\nfor i in range(40):\n    loss = Loss()\n    loss.backward()\n"
      "    opt.step()\n";
  source::SourceFile source(text);
  auto index = source::buildSourceIndex(source);
  auto action =
      features::limitProfilingWindow(source, index, static_cast<uint32_t>(text.find("loss = Loss()")), 25, 29);
  ASSERT_TRUE(action);
  auto edited = features::applyEdits(text, action->edits);
  ASSERT_TRUE(edited);
  text = *edited;
  std::ofstream(dir_ / "train.py") << text;
  std::string cmd = "cd '" + dir_.string() + "' && " + environment("") + " python3 train.py 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out << "\n" << text;
  json doc = steps("train-profile");
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["sightline_steps"], 1);
  EXPECT_EQ(doc["profiler"], "nsys");
  EXPECT_EQ(doc["command"], json({"python3", "train.py"}));
  EXPECT_EQ(doc["warmup"], 5);
  EXPECT_EQ(doc["timed"], 20);
  EXPECT_EQ(doc["profiled"], 5);
  EXPECT_EQ(doc["profiles"], json({"train-profile.sqlite"}));
  ASSERT_EQ(doc["ranks"].size(), 1u);
  expectWindow(doc["ranks"][0], 5, 20, 5);
  std::string log = file("torch.log");
  ASSERT_NE(log.find("cuda.profiler.start"), std::string::npos) << log;
  EXPECT_LT(log.find("cuda.profiler.start"), log.find(" synchronize\n")) << log;
  EXPECT_LT(log.find(" synchronize\n"), log.find("cuda.profiler.stop")) << log;
}

TEST_F(CaptureSignals, CtrlCEndsTheCommandAndKeepsAMeasuredWindow) {
  pid_t verb = start("--profiler none -- " + kTrain + " --forever --pid-file '" + (dir_ / "train.pid").string() + "'");
  ASSERT_TRUE(waitForOutput("the window is measured", 60)) << file("out.log");
  std::string train = file("train.pid");
  ASSERT_TRUE(alive(train));
  ::kill(verb, SIGINT);
  EXPECT_EQ(waitExit(verb, 30), 130) << file("out.log");
  EXPECT_FALSE(alive(train)) << "the command ended";
  EXPECT_NE(file("out.log").find("KeyboardInterrupt"), std::string::npos) << "it got SIGINT\n" << file("out.log");
  EXPECT_EQ(steps()["ranks"][0]["timed"].size(), 20u) << file("out.log");
}

TEST_F(CaptureSignals, CtrlCBeforeTheWindowWritesNothing) {
  pid_t verb = start("--profiler none --warmup 100000 -- " + kTrain + " --forever --pid-file '" +
                     (dir_ / "train.pid").string() + "'");
  for (int i = 0; i < 600 && file("train.pid").empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(alive(file("train.pid"))) << file("out.log");
  ::kill(verb, SIGTERM);
  EXPECT_EQ(waitExit(verb, 30), 128 + SIGTERM) << file("out.log");
  EXPECT_FALSE(alive(file("train.pid")));
  EXPECT_NE(file("out.log").find("interrupted before the window was complete; nothing written"), std::string::npos)
      << file("out.log");
  EXPECT_FALSE(fs::exists(dir_ / "sightline-capture.steps.json"));
}

TEST_F(CaptureSignals, AThirdCtrlCKillsACommandThatIgnoresItAndWhatItLeft) {
  pid_t verb = start("--profiler none -- " + kTrain + " --forever --ignore-sigint --pid-file '" +
                     (dir_ / "train.pid").string() + "' --straggler '" + (dir_ / "straggler.pid").string() + "'");
  ASSERT_TRUE(waitForOutput("the window is measured", 60)) << file("out.log");
  std::string straggler = file("straggler.pid");
  ASSERT_TRUE(alive(straggler)) << "a process in a session of its own";
  for (int i = 0; i < 2; ++i) {
    ::kill(verb, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  EXPECT_TRUE(alive(file("train.pid"))) << "two are ignored";
  ::kill(verb, SIGINT);
  EXPECT_EQ(waitExit(verb, 30), 128 + SIGKILL) << file("out.log");
  EXPECT_FALSE(alive(file("train.pid")));
  for (int i = 0; i < 40 && alive(straggler); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(straggler)) << "killed by the capture's marker in its environment";
}

// Issue 54: SIGHUP (an ssh connection that drops) and SIGQUIT (Ctrl-\) once ended sightline
// alone, the command adopted by init and still holding the GPUs, no steps file written. They are
// forwarded like Ctrl-C, and the measured window is kept.
TEST_F(CaptureSignals, HangupAndQuitEndTheCommandAndKeepTheWindow) {
  for (int sig : {SIGHUP, SIGQUIT}) {
    for (const char* name : {"train.pid", "sightline-capture.steps.json", "out.log"}) fs::remove(dir_ / name);
    pid_t verb =
        start("--profiler none -- " + kTrain + " --forever --pid-file '" + (dir_ / "train.pid").string() + "'");
    ASSERT_TRUE(waitForOutput("the window is measured", 60)) << file("out.log");
    std::string train = file("train.pid");
    ASSERT_TRUE(alive(train));
    ::kill(verb, sig);
    EXPECT_EQ(waitExit(verb, 30), 128 + sig) << "signal " << sig << "\n" << file("out.log");
    EXPECT_FALSE(alive(train)) << "signal " << sig << ": the command ended";
    EXPECT_EQ(steps()["ranks"][0]["timed"].size(), 20u) << "signal " << sig << "\n" << file("out.log");
  }
}

// Issue 54: SIGKILL of sightline itself: nothing of it runs, so its watchdog ends the command,
// writes the steps file of the complete window and removes the private folder (TearDown checks).
TEST_F(CaptureSignals, KillingSightlineEndsTheCommandAndKeepsTheWindow) {
  pid_t verb = start("--profiler none -- " + kTrain + " --forever --pid-file '" + (dir_ / "train.pid").string() +
                     "' --straggler '" + (dir_ / "straggler.pid").string() + "'");
  ASSERT_TRUE(waitForOutput("the window is measured", 60)) << file("out.log");
  std::string train = file("train.pid"), straggler = file("straggler.pid");
  ASSERT_TRUE(alive(train));
  ASSERT_TRUE(alive(straggler));
  ::kill(verb, SIGKILL);
  waitExit(verb, 30);
  ASSERT_TRUE(waitForOutput("(watchdog)", 10)) << file("out.log");
  EXPECT_FALSE(alive(train)) << "the command ended\n" << file("out.log");
  EXPECT_FALSE(alive(straggler)) << "and what carries the capture's marker";
  EXPECT_NE(file("out.log").find("the command was killed; wrote sightline-capture.steps.json"), std::string::npos)
      << file("out.log");
  EXPECT_EQ(steps()["ranks"][0]["timed"].size(), 20u) << file("out.log");
}

// Issue 54: one Ctrl-C during `nsys export` once threw a complete window away. The steps file
// names the report, and the message says how to export it.
TEST_F(CaptureSignals, CtrlCDuringTheExportKeepsTheWindow) {
  std::string export_pid = (dir_ / "export.pid").string();
  std::string cmd = "cd '" + dir_.string() + "' && exec " + environment(withFakeNsys()) + " FAKE_NSYS_EXPORT_SLEEP='" +
                    export_pid + "' '" + binaryPath() + "' capture -o run -- " + kTrain + " >'" +
                    (dir_ / "out.log").string() + "' 2>&1";
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t verb = -1;
  ASSERT_EQ(posix_spawn(&verb, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  for (int i = 0; i < 1200 && file("export.pid").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string exporter = file("export.pid");
  ASSERT_TRUE(alive(exporter)) << file("out.log");
  ::kill(verb, SIGINT);
  EXPECT_EQ(waitExit(verb, 30), 130) << file("out.log");
  for (int i = 0; i < 100 && alive(exporter); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(exporter)) << "the export was stopped";
  nlohmann::json doc = steps("run");
  ASSERT_TRUE(doc.is_object()) << file("out.log");
  EXPECT_EQ(doc["profiles"], nlohmann::json({"run.nsys-rep"}));
  EXPECT_EQ(doc["ranks"][0]["timed"].size(), 20u);
  std::string nsys = capturePath("fake_bin/nsys");
  EXPECT_NE(file("out.log").find("export it later with:\n  " + nsys +
                                 " export --type=sqlite --include-blobs=true --force-overwrite=true "
                                 "--output=run.sqlite run.nsys-rep\n"),
            std::string::npos)
      << file("out.log");
}

}  // namespace
}  // namespace sightline::testing
