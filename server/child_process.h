// Child processes the server starts (today `nsys export`): each in a process group of its own,
// stdin from /dev/null (it never reads the LSP stream), its output to a log file, killed with its
// group at a time limit, when its caller cancels, and when this process exits.
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
// Kills the process groups of the children still running (also done at exit).
void killChildren();

}  // namespace sightline::server
