// Which of a profile's source files are the user's code (internal to analysis/attribution).
// Backtraces and Python calls pass through PyTorch, the standard library and installed
// packages; attribution charges the innermost frame that is the user's own.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

bool contains(std::string_view s, std::string_view part);
// The PyTorch profiler trims sys.path prefixes from file names, so installed packages and the
// standard library look relative ("torch/nn/functional.py", "typing.py"): is this one of them?
bool isTrimmedLibraryPath(std::string_view path);
// Inductor's generated modules (`<cache>/xx/c<hash>.py`, or anything under torchinductor_*):
// never the user's lines, whatever finds them as source.
bool isGeneratedCode(std::string_view path);
// A file in a folder named `sightline-capture-XXXXXX` (six letters or digits: the private
// folder sightline capture puts its hook in, whose wrappers of backward() and of the DataLoader
// sit on the program's stacks): never the user's lines.
bool isCaptureHookFile(std::string_view path);
// A user function that makes batches (`get_batch`, `load_batch`, `_next_batch`, `batchify`):
// time under it is the input pipeline. Not one that takes them (`_run_batch`, `train_batch`).
bool makesBatches(std::string_view function);

// Answers for the Python-call path of traces, cached per interned file name: the options'
// is_user_file, else whether a call-site table exists for it, else the defaults (and never a
// trimmed library path, Inductor's generated code or sightline capture's hook).
class UserFiles {
 public:
  UserFiles(const model::Profile& profile, const Options& options) : profile_(profile), options_(options) {}
  bool isUser(model::StringId file);

 private:
  const model::Profile& profile_;
  const Options& options_;
  std::vector<int8_t> known_;  // by file string: -1 unknown, 0 no, 1 yes
};

}  // namespace sightline::attribution
