// The watchdog: a forked process that outlives a killed sightline long enough to end its command.
#include "server/capture/watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "server/capture/foreground_child.h"
#include "server/platform/output_file.h"

namespace sightline::server::capture {
namespace {

namespace fs = std::filesystem;

// What sightline tells the watchdog, one byte each (the group's id after 'G').
constexpr char kStarted = 'G', kEnded = 'E', kWritten = 'W', kDone = 'D';

bool readAll(int fd, char* into, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, into + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void say(const std::string& line) {
  std::string text = "sightline capture (watchdog): " + line + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, text.data(), text.size());  // the terminal may be gone
}

// The watchdog's life: the pipe read until sightline says it is done or goes.
int watch(int fd, const WatchdogPlan& plan) {
  pid_t group = 0;
  bool ended = false, written = false;
  for (;;) {
    char op = 0;
    if (!readAll(fd, &op, 1)) break;
    if (op == kDone) return 0;
    if (op == kEnded) ended = true;
    if (op == kWritten) written = true;
    if (op == kStarted) {
      int32_t id = 0;
      if (!readAll(fd, reinterpret_cast<char*>(&id), sizeof id)) break;
      group = id;
    }
  }
  // sightline is gone and did not say it was done: end what it ran, keep what was measured.
  if (group > 0 && !ended) ::kill(-group, SIGKILL);
  killMarkedProcesses(plan.marker);
  std::string kept = written ? std::string() : keepWindow(plan);
  std::error_code ec;
  fs::remove_all(plan.private_folder, ec);
  say("sightline ended without finishing: " + std::string(group > 0 && !ended ? "the command was killed; " : "") +
      (kept.empty() ? std::string(written ? "the steps file was written" : "no complete window to keep") : kept));
  return 0;
}

}  // namespace

std::string keepWindow(const WatchdogPlan& plan) {
  CaptureParts parts = readCaptureParts(plan.parts_folder, plan.window);
  if (parts.ranks.empty()) return "";
  std::vector<std::string> profiles;
  std::string folder = fs::path(plan.name.path).parent_path().string();
  std::error_code ec;
  if (plan.window.profiler == "nsys" && fs::is_regular_file(plan.name.file(".nsys-rep"), ec))
    profiles.push_back(fs::path(plan.name.file(".nsys-rep")).filename().string());
  if (plan.window.profiler == "torch")
    for (const auto& r : parts.ranks)
      if (!r.trace.empty() && moveTrace(plan.traces_folder, r.trace, folder, plan.inputs).empty())
        profiles.push_back(r.trace);
  auto doc = stepsDocument(plan.window, plan.command, profiles, parts.ranks);
  std::string error;
  if (!writeOutputFile(plan.name.file(".steps.json"), formatStepsDocument(doc), plan.inputs, error)) return error;
  std::string wrote = plan.name.shownFile(".steps.json");
  for (const auto& p : profiles) wrote += ", " + (fs::path(plan.name.shown).parent_path() / p).string();
  return "wrote " + wrote;
}

std::unique_ptr<Watchdog> Watchdog::start(const WatchdogPlan& plan, std::string& error) {
  // A socket pair rather than a pipe: a watchdog that is gone is an error to send, not SIGPIPE.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    error = std::string("cannot start the watchdog: ") + std::strerror(errno);
    return nullptr;
  }
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    error = std::string("cannot start the watchdog: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return nullptr;
  }
  if (pid == 0) {
    ::close(fds[1]);
    // Its own group: a Ctrl-C or a hangup for sightline's group is not for it.
    ::setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::_exit(watch(fds[0], plan));
  }
  ::close(fds[0]);
  return std::unique_ptr<Watchdog>(new Watchdog(pid, fds[1]));
}

void Watchdog::send(const char* bytes, size_t size) {
  // A few bytes are sent whole; a watchdog that is gone is not an error.
  [[maybe_unused]] ssize_t n = ::send(fd_, bytes, size, MSG_NOSIGNAL);
}

void Watchdog::commandStarted(pid_t group) {
  char message[1 + sizeof(int32_t)] = {kStarted};
  auto id = static_cast<int32_t>(group);
  std::memcpy(message + 1, &id, sizeof id);
  send(message, sizeof message);
}

void Watchdog::commandEnded() { send(&kEnded, 1); }
void Watchdog::stepsWritten() { send(&kWritten, 1); }

Watchdog::~Watchdog() {
  send(&kDone, 1);
  ::close(fd_);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace sightline::server::capture
