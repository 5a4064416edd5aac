// `sightline check`: static diagnostics for files, printed as text, JSON or SARIF 2.1.0.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sightline::server {

// Runs the verb with its arguments (after "check"); returns the process exit code:
// 0 nothing at warning or above, 1 some warning or error, 2 usage error or unreadable file.
int runCheckCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sightline::server
