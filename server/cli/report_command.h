// `sightline report`: the GPU cost of each source line, from a profile, as annotated source
// in the terminal or as JSON (docs/report-json.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sightline::server {

// Runs the verb with its arguments (after "report"); returns the exit code:
// 0 printed, 2 usage error or a profile/file that cannot be read.
int runReportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sightline::server
