// The command `sightline capture` runs: in the foreground (its output is the user's), in a
// process group of its own, SIGINT and SIGTERM forwarded to that group (the third one kills it),
// and on every way out the group killed together with any straggler that carries the capture's
// marker in its environment (a worker that left the group). Not for `nsys export`: that is a
// bounded background job (server/platform/child_process.h).
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace sightline::server::capture {

// While one lives, SIGINT and SIGTERM do not end this process: they are counted and forwarded
// to the command runForeground runs. The previous handlers are restored when it goes.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // SIGINT/SIGTERM received since the guard was made.
  static int interrupts();
  // The last of them (SIGINT or SIGTERM), or 0.
  static int lastSignal();

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
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
ForegroundResult runForeground(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                               const std::string& marker);

}  // namespace sightline::server::capture
