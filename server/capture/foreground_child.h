// The command `sightline capture` runs: in the foreground (its output is the user's), in a
// process group of its own, SIGINT, SIGTERM, SIGHUP and SIGQUIT forwarded to that group (the
// third one kills it; SIGPIPE ignored meanwhile, so a closed terminal does not end sightline),
// and on every way out the group killed together with any straggler that carries the capture's
// marker in its environment (a worker that left the group). Not for `nsys export`: that is a
// bounded background job (server/platform/child_process.h).
#pragma once

#include <sys/types.h>

#include <csignal>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace sightline::server::capture {

// While one lives, SIGINT, SIGTERM, SIGHUP and SIGQUIT do not end this process: they are counted
// and forwarded to the command runForeground runs (a signal ignored when it is made, as nohup
// ignores SIGHUP, stays ignored). SIGPIPE is ignored. The previous handlers are restored when it
// goes.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // The signals received since the guard was made.
  static int interrupts();
  // The last of them, or 0.
  static int lastSignal();

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
  struct sigaction old_[std::size(kSignals)] = {};
};

struct ForegroundResult {
  bool started = false;
  int exit_code = -1;  // the command's exit status; 128 + N when signal N ended it
  int signal = 0;      // the signal that ended it, or 0
  std::string error;   // why it did not start
};

// Runs argv (argv[0] found on PATH) with the environment `env` ("NAME=value" each) and waits
// for it. stdin is inherited unless it is a terminal, which a process group in the background
// cannot read (it would stop): /dev/null then. `marker` ("NAME=value") is an entry of `env` no
// other process has: at the end, processes of this user whose environment holds it are killed
// too. Make an InterruptGuard first, so that Ctrl-C reaches the command and not only this one.
// `started` is told the command's process group (its pid) as soon as it runs.
ForegroundResult runForeground(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                               const std::string& marker, const std::function<void(pid_t)>& started = {});

// Kills (SIGKILL) every process of this user but this one whose environment holds `marker`
// ("NAME=value") exactly: what runForeground does at its end, and the watchdog when sightline
// is gone.
void killMarkedProcesses(const std::string& marker);

}  // namespace sightline::server::capture
