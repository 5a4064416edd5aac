// The fixtures of the capture tests (capture_test.cpp, capture_hostile_test.cpp): a folder of
// a test's own for the run's cwd, TMPDIR and logs, the verb run on the stand-in torch and nsys
// of tests/data/capture, and the verb started in the background for the signal tests.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

extern char** environ;

namespace sightline::testing {

inline std::string capturePath(const std::string& relative) { return testDataPath("capture/" + relative); }
inline const std::string kTrain = "python3 '" + capturePath("fake_train.py") + "'";

// Every rank's timed and profiled steps: consecutive, ending at the right steps,
// positive integers.
inline void expectWindow(const nlohmann::json& rank, int warmup, int timed, int profiled) {
  ASSERT_TRUE(rank["timed"].is_array()) << rank.dump();
  ASSERT_EQ(rank["timed"].size(), static_cast<size_t>(timed)) << rank.dump();
  ASSERT_EQ(rank["profiled"].size(), static_cast<size_t>(profiled)) << rank.dump();
  for (int i = 0; i < timed; ++i) {
    const nlohmann::json& s = rank["timed"][static_cast<size_t>(i)];
    EXPECT_EQ(s["step"], warmup + 1 + i);
    EXPECT_TRUE(s["gpu_ns"].is_number_integer() && s["host_ns"].is_number_integer()) << s.dump();
    // The script sleeps 2 ms a step; the stand-in events keep the host clock.
    EXPECT_GT(s["gpu_ns"].get<int64_t>(), 1'500'000) << s.dump();
    EXPECT_GT(s["host_ns"].get<int64_t>(), 1'500'000) << s.dump();
    EXPECT_LT(s["host_ns"].get<int64_t>(), 500'000'000) << s.dump();
  }
  for (int i = 0; i < profiled; ++i)
    EXPECT_EQ(rank["profiled"][static_cast<size_t>(i)]["step"], warmup + timed + 1 + i);
  EXPECT_TRUE(rank["hook_ns"].is_number_integer());
  EXPECT_GT(rank["hook_ns"].get<int64_t>(), 0);
}

// A fresh folder for one test: the run's cwd, TMPDIR and logs.
class Capture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ =
        std::filesystem::temp_directory_path() / ("sightline-capture-test-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "tmp");
  }
  void TearDown() override {
    // The private folder is gone after every run.
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "tmp"))
      ADD_FAILURE() << "left behind: " << entry.path();
    std::filesystem::remove_all(dir_);
  }

  // The environment the verb runs in (shell words): the stand-in torch first on PYTHONPATH.
  std::string environment(const std::string& extra) const {
    return "env TMPDIR='" + (dir_ / "tmp").string() + "' PYTHONPATH='" + capturePath("fake_torch") +
           "' FAKE_TORCH_LOG='" + (dir_ / "torch.log").string() + "' FAKE_NSYS_LOG='" + (dir_ / "nsys.log").string() +
           "' PYTHONUNBUFFERED=1 " + extra;
  }

  CommandOutput capture(const std::string& args, const std::string& extra_env = "") const {
    std::string cmd = "cd '" + dir_.string() + "' && " + environment(extra_env) + " timeout 120 '" + binaryPath() +
                      "' capture " + args + " 2>&1";
    CommandOutput result;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return result;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) result.out.append(buf, n);
    int status = pclose(p);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  nlohmann::json steps(const std::string& name = "sightline-capture") const {
    return nlohmann::json::parse(readFile((dir_ / (name + ".steps.json")).string()), nullptr, false);
  }
  std::string file(const std::string& name) const {
    std::error_code ec;
    return std::filesystem::exists(dir_ / name, ec) ? readFile((dir_ / name).string()) : std::string();
  }
  // With fake_bin (nsys) first on PATH.
  std::string withFakeNsys() const {
    return "PATH='" + capturePath("fake_bin") + ":" + std::string(std::getenv("PATH")) + "'";
  }

  std::filesystem::path dir_;
};

// Ctrl-C: the verb runs in the foreground as a shell would start it; SIGINT goes to it alone.
class CaptureSignals : public Capture {
 protected:
  pid_t start(const std::string& args) {
    std::string cmd = "cd '" + dir_.string() + "' && exec " + environment("") + " '" + binaryPath() + "' capture " +
                      args + " >'" + (dir_ / "out.log").string() + "' 2>&1";
    const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    pid_t pid = -1;
    posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ);
    return pid;
  }
  // Waits for `text` in the verb's output; false after `seconds`.
  bool waitForOutput(const std::string& text, int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      if (file("out.log").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // The exit status, or -1 when it has not ended after `seconds`.
  static int waitExit(pid_t pid, int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  // Running (a zombie waiting for a parent that was killed is not).
  static bool alive(const std::string& pid_text) {
    pid_t pid = static_cast<pid_t>(std::atoi(pid_text.c_str()));
    if (pid <= 0 || ::kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto paren = text.rfind(')');
    return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
  }
};

}  // namespace sightline::testing
