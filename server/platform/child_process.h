// Child processes the server starts (today `nsys export`): each in a process group of its own,
// stdin from /dev/null (it never reads the LSP stream), its output to a log file, killed with its
// group at a time limit, when its caller cancels, and when this process ends: at exit, and on
// SIGINT, SIGTERM and SIGHUP once cleanUpOnTerminationSignals() has run. The temporary files
// around a child (its log, what it writes) go then too. Not a general process library: no
// pipes to the child, no environment of its own.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace sightline::server {

struct ChildResult {
  bool started = false;
  int exit_code = -1;  // when it exited by itself
  bool timed_out = false;
  bool cancelled = false;
  std::string error;  // why it did not start, or how it ended, in words
};

struct ChildLimits {
  double timeout_s = 600;
  std::function<bool()> cancelled;  // asked every few ms; true kills it
};

// Runs argv[0] (found on PATH) with argv, stdout and stderr to `log_path`.
ChildResult runChild(const std::vector<std::string>& argv, const std::string& log_path, const ChildLimits& limits);
// Kills the process groups of the children still running and removes the temporary paths still
// registered (TemporaryPath). Done at exit, and on the signals below once they are handled.
void killChildren();
// From now on SIGINT, SIGTERM and SIGHUP run killChildren (on a thread of its own, woken through
// a pipe by an async-signal-safe handler), then end the process by the same signal at its
// default action, so its parent sees what ended it. A signal ignored now (nohup) stays ignored.
// Once per process, early in main.
void cleanUpOnTerminationSignals();

// A temporary file or folder of this process (an export being written, a child's log, a folder
// for one): removed, folders with what they hold, when the guard goes, or by killChildren if the
// process ends first (the later registered first, so a folder goes after the files in it).
class TemporaryPath {
 public:
  explicit TemporaryPath(std::string path);
  ~TemporaryPath();
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sightline::server
