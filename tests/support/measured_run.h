// The built binary run under a time limit, its peak memory measured (wait4's ru_maxrss), and
// outside a sanitizer build its address space held to 4 GB: a regression that would take the
// machine fails instead. For the tests of hostile inputs.
#pragma once

#include <string>
#include <vector>

namespace sightline::testing {

// Whether this build runs under AddressSanitizer (its memory figures are not the binary's).
bool sanitizedBuild();

struct Measured {
  int code = -1;  // exit code; -1: a signal ended it
  bool killed = false;
  std::string out;  // stdout and stderr together
  double seconds = 0;
  long max_rss_kb = 0;  // of the binary alone
};

// The binary with `args` from `cwd` (its output kept in `cwd`/measured.out), killed past `seconds`.
Measured runMeasured(const std::vector<std::string>& args, const std::string& cwd, int seconds);

}  // namespace sightline::testing
