// `sightline capture [options] -- COMMAND...`: runs a training command unmodified with the
// capture hook on PYTHONPATH, measures its step without a profiler and then under one, and
// writes NAME.steps.json beside the profile (docs/capture.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sightline::server {

// Runs the verb with its arguments (after "capture"); returns the exit code: the command's
// when it failed, else 0 when the steps file was written, 2 for sightline's own errors (usage,
// no window, an export that failed).
int runCaptureCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sightline::server
