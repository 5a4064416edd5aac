// `nsys export` and any other child: its own group, no stdin, a time limit, killed on cancel.
#include "server/platform/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

class Child : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sightline_child_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string at(const std::string& name) const { return (dir_ / name).string(); }
  // The pid a child wrote to `name`, or -1.
  pid_t pidIn(const std::string& name) const {
    std::ifstream in(at(name));
    long pid = -1;
    in >> pid;
    return static_cast<pid_t>(pid);
  }
  fs::path dir_;
};

// Alive and not a zombie (a container's init may never reap the orphans).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

double secondsOf(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(Child, ATimeLimitKillsItsWholeGroup) {
  // A child that starts a grandchild and waits: both go at the limit (the export's importer
  // once outlived the server).
  ChildLimits limits;
  limits.timeout_s = 0.3;
  ChildResult r;
  double took = secondsOf([&] {
    r = runChild({"sh", "-c", "sleep 30 & echo $! > " + at("grandchild") + "; wait"}, at("log"), limits);
  });
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(took, 5.0);
  pid_t grandchild = pidIn("grandchild");
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && running(grandchild); ++i) usleep(10000);
  EXPECT_FALSE(running(grandchild)) << "the grandchild still runs";
}

TEST_F(Child, CancelStopsIt) {
  std::atomic<bool> cancel{false};
  ChildLimits limits;
  limits.cancelled = [&] { return cancel.load(); };
  std::thread later([&] {
    usleep(200000);
    cancel = true;
  });
  ChildResult r;
  double took = secondsOf([&] { r = runChild({"sleep", "30"}, at("log"), limits); });
  later.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(took, 5.0);
}

TEST_F(Child, ItReadsNothingOfOurStdinAndRunsInAGroupOfItsOwn) {
  // Our stdin is the LSP stream: a child reading stdin gets end of file at once. It is the
  // leader of its own process group.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  int saved = ::dup(0);
  ::dup2(pipe_fds[0], 0);  // a stdin that would block forever
  ChildLimits limits;
  limits.timeout_s = 10;
  auto r = runChild({"sh", "-c",
                     "cat > " + at("read") + "; cut -d' ' -f5 /proc/$$/stat > " + at("pgid") + "; echo $$ > " +
                         at("pid") + "; echo said; exit 3"},
                    at("log"), limits);
  ::dup2(saved, 0);
  ::close(saved);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.error, "exit 3");
  EXPECT_EQ(fs::file_size(at("read")), 0u);
  EXPECT_EQ(pidIn("pgid"), pidIn("pid"));
  EXPECT_NE(pidIn("pgid"), ::getpgrp());
  std::ifstream log(at("log"));
  std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(said, "said\n");
}

TEST_F(Child, KillChildrenEndsTheRunningAndRemovesTheTemporaries) {
  // What exit and SIGINT, SIGTERM and SIGHUP run (the end to end check is in
  // tests/e2e/termination_test.cpp): the group of a child still running goes, and so do the
  // temporaries, a folder after the file in it.
  fs::create_directories(at("scratch"));
  std::ofstream(at("scratch/part")) << "part of an export";
  auto folder = std::make_unique<TemporaryPath>(at("scratch"));
  auto file = std::make_unique<TemporaryPath>(at("scratch/part"));
  ChildResult r;
  std::thread waiting([&] {
    r = runChild({"sh", "-c",
                  "sleep 30 & echo $! > " + at("grandchild.tmp") + "; mv " + at("grandchild.tmp") + " " +
                      at("grandchild") + "; wait"},
                 at("log"), {});
  });
  for (int i = 0; i < 500 && !fs::exists(at("grandchild")); ++i) usleep(10000);
  killChildren();
  waiting.join();
  EXPECT_EQ(r.error, "killed by signal 9");
  EXPECT_FALSE(fs::exists(at("scratch")));
  pid_t grandchild = pidIn("grandchild");
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && running(grandchild); ++i) usleep(10000);
  EXPECT_FALSE(running(grandchild)) << "the grandchild still runs";
  file.reset();  // already gone: nothing to do
  folder.reset();
}

TEST_F(Child, ATemporaryGoesWithItsGuard) {
  {
    TemporaryPath log(at("export.log"));
    std::ofstream(log.path()) << "said";
    EXPECT_TRUE(fs::exists(at("export.log")));
  }
  EXPECT_FALSE(fs::exists(at("export.log")));
  std::ofstream(at("kept")) << "not registered";
  killChildren();
  EXPECT_TRUE(fs::exists(at("kept"))) << "only what is registered is removed";
}

TEST_F(Child, AMissingProgramIsAnError) {
  auto r = runChild({"sightline-no-such-program"}, at("log"), {});
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("cannot start"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace sightline::server
