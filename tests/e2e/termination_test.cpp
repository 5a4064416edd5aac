// The binary ended while `nsys export` runs: SIGINT, SIGTERM and SIGHUP to `report` and `serve`,
// and the server's own exits (shutdown + exit, input closed). The export must go with it (its
// whole group) and the cache must keep no temporary export or log. A stand-in `nsys` on PATH
// writes part of an export, records its pid and its sleeping child's, and waits.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

extern char** environ;

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSlowNsys = R"(#!/bin/sh
here=$(dirname "$0")
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
echo "exporting to $out"
echo "part of an export" > "$out"
sleep 120 &
echo $! > "$here/sleep.pid"
echo $$ > "$here/nsys.pid.tmp"
mv "$here/nsys.pid.tmp" "$here/nsys.pid"
wait
)";

// Alive and not a zombie (the orphans of a killed parent wait for an init that may never reap).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class Termination : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sightline_term_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    fs::create_directories(dir_ / "xdg");
    fs::create_directories(dir_ / "ws");
    std::ofstream(dir_ / "bin" / "nsys") << kSlowNsys;
    fs::permissions(dir_ / "bin" / "nsys", fs::perms::owner_all);
    std::ofstream(dir_ / "ws" / "run.nsys-rep") << "a report";
    for (const char* name : {"PATH", "XDG_CACHE_HOME"})
      saved_.emplace_back(name, std::getenv(name) ? std::getenv(name) : "");
  }
  void TearDown() override {
    // Whatever the binary left running (before the fix: the export, for two minutes).
    for (const char* name : {"nsys.pid", "sleep.pid"})
      if (pid_t pid = pidIn(name); pid > 0) ::kill(pid, SIGKILL);
    fs::remove_all(dir_);
  }

  // The environment the binary runs in: the stand-in first on PATH, the cache under dir_.
  std::vector<std::string> environment() const {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      std::string entry(*e);
      if (entry.rfind("PATH=", 0) != 0 && entry.rfind("XDG_CACHE_HOME=", 0) != 0) env.push_back(entry);
    }
    const char* path = std::getenv("PATH");
    env.push_back("PATH=" + (dir_ / "bin").string() + ":" + (path ? path : "/usr/bin:/bin"));
    env.push_back("XDG_CACHE_HOME=" + (dir_ / "xdg").string());
    return env;
  }

  // `sightline report --format json --profile run.nsys-rep`, its output to a file, the signals we send at
  // their default action (a runner may start us with SIGINT ignored).
  pid_t startReport() {
    std::vector<std::string> args = {binaryPath(), "report",    "--format",
                                     "json",       "--profile", (dir_ / "ws" / "run.nsys-rep").string()};
    std::vector<std::string> env = environment();
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, (dir_ / "out.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &files, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&files);
    posix_spawnattr_destroy(&attr);
    return rc == 0 ? pid : -1;
  }

  // `sightline serve` on the workspace with the report as its profile, with the same environment.
  std::unique_ptr<LspClient> startServer() {
    for (const auto& entry : environment()) {
      auto eq = entry.find('=');
      std::string name = entry.substr(0, eq);
      if (name != "PATH" && name != "XDG_CACHE_HOME") continue;
      ::setenv(name.c_str(), entry.substr(eq + 1).c_str(), 1);
    }
    auto client = LspClient::spawnStdio();
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
    auto id =
        client->request("initialize", {{"processId", nullptr},
                                       {"rootUri", server::pathToUri((dir_ / "ws").string())},
                                       {"capabilities", json::object()},
                                       {"initializationOptions", {{"settings", {{"profiles", {"run.nsys-rep"}}}}}}});
    if (!client->waitForResponse(id, 30s)) ADD_FAILURE() << "no initialize reply: " << client->stderrText();
    client->notify("initialized", json::object());
    return client;
  }

  pid_t pidIn(const std::string& name) const {
    std::ifstream in(dir_ / "bin" / name);
    long pid = -1;
    in >> pid;
    return static_cast<pid_t>(pid);
  }
  bool exportStarted() const { return fs::exists(dir_ / "bin" / "nsys.pid"); }

  // The export is gone (its shell and the shell's child), and the cache holds no file.
  void expectCleanedUp() {
    pid_t nsys = pidIn("nsys.pid"), sleeper = pidIn("sleep.pid");
    ASSERT_GT(nsys, 0);
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(eventually([&] { return !running(nsys) && !running(sleeper); }, 5s))
        << "the export still runs (pids " << nsys << ", " << sleeper << ")";
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "xdg"))
      if (!e.is_directory()) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left in the cache: " << ::testing::PrintToString(left);
    // The next round starts clean whatever this one left.
    ::kill(nsys, SIGKILL);
    ::kill(sleeper, SIGKILL);
    fs::remove_all(dir_ / "xdg" / "sightline");
  }

  fs::path dir_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(Termination, ReportOnSigintSigtermAndSighup) {
  // Each dies of its signal, as a plain binary would, and takes the export and its files along.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    fs::remove(dir_ / "bin" / "nsys.pid");
    pid_t pid = startReport();
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(eventually([this] { return exportStarted(); }, 60s)) << "the stand-in nsys never started";
    ASSERT_EQ(::kill(pid, sig), 0);
    int status = 0;
    bool ended = eventually([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 10s);
    if (!ended) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
    ASSERT_TRUE(ended) << "report did not end on signal " << sig;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ": status " << status;
    expectCleanedUp();
  }
}

TEST_F(Termination, ServerOnSigtermAndSighup) {
  for (int sig : {SIGTERM, SIGHUP}) {
    fs::remove(dir_ / "bin" / "nsys.pid");
    auto client = startServer();
    ASSERT_TRUE(eventually([this] { return exportStarted(); }, 60s)) << client->stderrText();
    ASSERT_EQ(::kill(client->pid(), sig), 0);
    EXPECT_EQ(client->waitExit(10s), 128 + sig) << "signal " << sig << "; stderr:\n" << client->stderrText();
    expectCleanedUp();
  }
}

TEST_F(Termination, ServerExitAndClosedInput) {
  // shutdown + exit (exit code 0) and input closed without shutdown (1), while the export runs.
  for (bool shutdown : {true, false}) {
    fs::remove(dir_ / "bin" / "nsys.pid");
    auto client = startServer();
    ASSERT_TRUE(eventually([this] { return exportStarted(); }, 60s)) << client->stderrText();
    if (shutdown) {
      auto id = client->request("shutdown", nullptr);
      EXPECT_TRUE(client->waitForResponse(id, 10s));
      client->notify("exit", nullptr);
    } else {
      client->closeInput();
    }
    EXPECT_EQ(client->waitExit(10s), shutdown ? 0 : 1) << client->stderrText();
    expectCleanedUp();
  }
}

}  // namespace
}  // namespace sightline::testing
