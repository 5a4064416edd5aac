// Child processes in their own group, bounded in time, killed on cancel, at exit and on the
// termination signals, with the temporary files around them.
#include "server/platform/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

extern char** environ;

namespace sightline::server {
namespace {

// What must not outlive this process: its children's groups and its temporary paths. Spawning
// and registering happen under the one mutex, and the cleanup on a signal keeps it until the
// process is gone, so no child starts unseen by it and none starts after it.
struct Leftovers {
  std::mutex mutex;
  std::set<pid_t> groups;
  std::vector<std::string> paths;  // in the order registered
};

Leftovers& leftovers() {
  // Never destroyed: exit handlers and the signal thread use it while static destructors run.
  static auto* state = new Leftovers;
  return *state;
}

void killChildrenAtExit() {
  static std::once_flag at_exit;
  std::call_once(at_exit, [] { std::atexit(killChildren); });
}

void removeLeftoversLocked(Leftovers& state) {
  for (pid_t pid : state.groups) ::kill(-pid, SIGKILL);
  std::error_code ec;
  for (auto it = state.paths.rbegin(); it != state.paths.rend(); ++it) std::filesystem::remove_all(*it, ec);
}

// The termination signals' pipe: the handler writes the signal's number, the cleanup thread
// reads it. Both ends close on exec, so no child holds them.
int signal_pipe[2] = {-1, -1};

void onTerminationSignal(int sig) {
  int saved = errno;
  auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t written = ::write(signal_pipe[1], &byte, 1);  // full: one is pending anyway
  errno = saved;
}

void cleanUpOnSignal() {
  for (;;) {
    unsigned char sig = 0;
    ssize_t n = ::read(signal_pipe[0], &sig, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return;
    Leftovers& state = leftovers();
    state.mutex.lock();  // kept until the end: no child starts after this
    removeLeftoversLocked(state);
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(sig);  // the default action of these three ends the process here
    ::_exit(128 + sig);
  }
}

}  // namespace

void killChildren() {
  Leftovers& state = leftovers();
  std::lock_guard<std::mutex> lock(state.mutex);
  removeLeftoversLocked(state);
}

void cleanUpOnTerminationSignals() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (::pipe2(signal_pipe, O_CLOEXEC) != 0) return;
    ::fcntl(signal_pipe[1], F_SETFL, ::fcntl(signal_pipe[1], F_GETFL) | O_NONBLOCK);
    killChildrenAtExit();
    try {
      std::thread(cleanUpOnSignal).detach();
    } catch (const std::system_error&) {
      return;  // no thread: the signals keep their default action
    }
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = onTerminationSignal;
      action.sa_flags = SA_RESTART;  // the other threads' reads and waits go on undisturbed
      sigemptyset(&action.sa_mask);
      ::sigaction(sig, &action, nullptr);
    }
  });
}

TemporaryPath::TemporaryPath(std::string path) : path_(std::move(path)) {
  killChildrenAtExit();
  Leftovers& state = leftovers();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.paths.push_back(path_);
}

TemporaryPath::~TemporaryPath() {
  Leftovers& state = leftovers();
  std::lock_guard<std::mutex> lock(state.mutex);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  auto it = std::find(state.paths.rbegin(), state.paths.rend(), path_);
  if (it != state.paths.rend()) state.paths.erase(std::next(it).base());
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
  killChildrenAtExit();
  pid_t pid = -1;
  int rc = 0;
  {
    // Started and registered at once: a termination signal's cleanup sees it or runs before it.
    Leftovers& state = leftovers();
    std::lock_guard<std::mutex> lock(state.mutex);
    rc = posix_spawnp(&pid, args[0], &files, &attr, args.data(), environ);
    if (rc == 0) state.groups.insert(pid);
  }
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return out;
  }
  out.started = true;
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
  {
    Leftovers& state = leftovers();
    std::lock_guard<std::mutex> lock(state.mutex);
    ::kill(-pid, SIGKILL);  // whatever it left behind in its group
    state.groups.erase(pid);
  }
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
