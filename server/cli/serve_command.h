// `sightline serve`: the language server over stdio, or for one TCP client (--listen).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sightline::server {

// Runs the verb with its arguments (after "serve") until the client exits; returns the exit
// code: 0 after shutdown + exit, 1 when the input ended without shutdown, 2 usage error.
int runServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sightline::server
