// The captured command: spawned in its own group, signals forwarded, everything it left killed.
#include "server/capture/foreground_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace sightline::server::capture {
namespace {

// Shared with the signal handler: only sig_atomic_t values and kill(2), which is safe there.
volatile std::sig_atomic_t g_group = 0;  // the running command's process group, or 0
volatile std::sig_atomic_t g_interrupts = 0;
volatile std::sig_atomic_t g_last_signal = 0;

void onInterrupt(int sig) {
  int saved = errno;
  g_interrupts = g_interrupts + 1;
  g_last_signal = sig;
  pid_t group = static_cast<pid_t>(g_group);
  // Each signal goes on as it came (Python stops at the first, torchrun passes it to its
  // workers); a third means the command did not stop: kill it.
  if (group > 0) ::kill(-group, g_interrupts >= 3 ? SIGKILL : sig);
  errno = saved;
}

void install(int sig, struct sigaction& old) {
  struct sigaction action = {};
  action.sa_handler = sig == SIGPIPE ? SIG_IGN : onInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: waitpid returns with EINTR and the loop looks again
  ::sigaction(sig, nullptr, &old);
  // SIGHUP ignored (nohup): the run is meant to outlive the terminal, and so it does.
  if (sig == SIGHUP && old.sa_handler == SIG_IGN) return;
  ::sigaction(sig, &action, nullptr);
}

// Processes of this user (other than this one) whose environment holds `marker` exactly.
std::vector<pid_t> processesWithMarker(const std::string& marker) {
  std::vector<pid_t> found;
  DIR* proc = ::opendir("/proc");
  if (!proc) return found;
  pid_t self = ::getpid();
  while (struct dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    std::ifstream environ(std::string("/proc/") + entry->d_name + "/environ", std::ios::binary);
    if (!environ) continue;  // another user's, or gone
    std::string text((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    size_t at = 0;
    while (at < text.size()) {
      size_t stop = text.find('\0', at);
      if (stop == std::string::npos) stop = text.size();
      if (text.compare(at, stop - at, marker) == 0) {
        found.push_back(static_cast<pid_t>(pid));
        break;
      }
      at = stop + 1;
    }
  }
  ::closedir(proc);
  return found;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_interrupts = 0;
  g_last_signal = 0;
  for (size_t i = 0; i < std::size(kSignals); ++i) install(kSignals[i], old_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < std::size(kSignals); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
}

int InterruptGuard::interrupts() { return static_cast<int>(g_interrupts); }
int InterruptGuard::lastSignal() { return static_cast<int>(g_last_signal); }

ForegroundResult runForeground(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                               const std::string& marker, const std::function<void(pid_t)>& started) {
  ForegroundResult out;
  if (argv.empty()) {
    out.error = "no command";
    return out;
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  if (::isatty(0)) posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults, none;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGQUIT);
  sigaddset(&defaults, SIGPIPE);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  // argv[0] is looked up on this process's PATH (as the shell that started it would).
  int rc = posix_spawnp(&pid, args[0], &files, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.error = "cannot start " + argv[0] + ": " + std::strerror(rc);
    return out;
  }
  out.started = true;
  if (started) started(pid);
  int seen = InterruptGuard::interrupts();
  g_group = pid;
  // A signal that came between the spawn and the line above had no group to go to.
  if (seen > 0) ::kill(-pid, InterruptGuard::lastSignal());
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(pid, &status, 0);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      status = -1;
      break;
    }
  }
  g_group = 0;
  // Whatever it left behind: its group, and what carries the marker outside it.
  ::kill(-pid, SIGKILL);
  killMarkedProcesses(marker);
  if (status != -1 && WIFEXITED(status)) {
    out.exit_code = WEXITSTATUS(status);
  } else if (status != -1 && WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
    out.exit_code = 128 + out.signal;
  } else {
    out.exit_code = 2;
    out.error = "lost track of the command";
  }
  return out;
}

void killMarkedProcesses(const std::string& marker) {
  if (marker.empty()) return;
  for (pid_t straggler : processesWithMarker(marker)) ::kill(straggler, SIGKILL);
}

}  // namespace sightline::server::capture
