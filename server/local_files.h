// The user's files as the join sees them (analysis/join/profile_join.h): what a local path's
// identity is, and reading a script's text. The analysis core asks through these callbacks and
// never opens a file itself.
#pragma once

#include <optional>
#include <string>

#include "analysis/join/profile_join.h"

namespace sightline::server {

// Absolute and canonical where the file exists (symlinks resolved), else absolute and normal.
std::string normalPath(const std::string& path);
// A regular file's bytes, or nullopt (missing, a directory, unreadable).
std::optional<std::string> readTextFile(const std::string& path);
// `mapper` with existence asked of the file system, paths normalized by normalPath, and
// sources read from disk.
join::JoinEnvironment localJoinEnvironment(attribution::PathMapper mapper);

}  // namespace sightline::server
