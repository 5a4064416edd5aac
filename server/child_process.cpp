// Child processes in their own group, bounded in time, killed on cancel and at exit.
#include "server/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace sightline::server {
namespace {

std::mutex& liveMutex() {
  static std::mutex m;
  return m;
}
std::set<pid_t>& live() {
  static std::set<pid_t> groups;
  return groups;
}

void registerGroup(pid_t pid) {
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(killChildren); });
  std::lock_guard<std::mutex> lock(liveMutex());
  live().insert(pid);
}

void forgetGroup(pid_t pid) {
  std::lock_guard<std::mutex> lock(liveMutex());
  live().erase(pid);
}

}  // namespace

void killChildren() {
  std::lock_guard<std::mutex> lock(liveMutex());
  for (pid_t pid : live()) ::kill(-pid, SIGKILL);
}

ChildResult runChild(const std::vector<std::string>& argv, const std::string& log_path, const ChildLimits& limits) {
  ChildResult out;
  if (argv.empty()) return out;
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawnattr_setpgroup(&attr, 0);  // a group of its own: killed whole, never by the editor's signals
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &files, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return out;
  }
  out.started = true;
  registerGroup(pid);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.timeout_s);
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    bool cancel = limits.cancelled && limits.cancelled();
    bool late = std::chrono::steady_clock::now() >= deadline;
    if (cancel || late) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      out.cancelled = cancel;
      out.timed_out = !cancel;
      out.error = cancel ? "cancelled" : "stopped after " + std::to_string(static_cast<int>(limits.timeout_s)) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // whatever it left behind in its group
  forgetGroup(pid);
  if (!out.cancelled && !out.timed_out) {
    if (WIFEXITED(status)) {
      out.exit_code = WEXITSTATUS(status);
      if (out.exit_code != 0) out.error = "exit " + std::to_string(out.exit_code);
    } else {
      out.error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) : "ended abnormally";
    }
  }
  return out;
}

}  // namespace sightline::server
