// Writing what a verb made to a path the user named (`report -o PATH`), as git's lockfiles do:
// never over one of the verb's inputs, never through a link onto something else, never a
// truncated file with exit 0. Not for the caches (profile_files.h keeps its own files).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::server {

// "" when `path` may be written: absent, a regular file (or a link to one) that is none of
// `inputs` (the same file by device and inode, so a hard link or another spelling counts), or a
// special file written in place (a terminal, a pipe, /dev/null). Otherwise why not.
std::string checkOutputPath(const std::string& path, const std::vector<std::string>& inputs);

// Writes `bytes` to `path`: a special file in place; else a new file created with O_EXCL beside
// the target (its name unique), every write and the close checked, then renamed over it. On
// failure nothing is left behind and `error` says why.
bool writeOutputFile(const std::string& path, std::string_view bytes, const std::vector<std::string>& inputs,
                     std::string& error);

// Writes `bytes` to `out` and flushes it: false when the stream failed (a full disk, a closed
// pipe), with `error` saying so.
bool writeOutputStream(std::ostream& out, std::string_view bytes, std::string& error);

}  // namespace sightline::server
