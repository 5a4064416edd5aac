// Which TORCH_TRACE logs are the profiled run's. A folder often holds the logs of several runs
// (a warm-up run's beside the profiled one's): their compilations and graph breaks are not this
// run's. A log is kept when its process is one of the profile's (by pid) and, where the
// profile's clock is the capture session's (Nsight Systems: the session begins before the
// process), when it compiled after the capture began; a log whose every compilation began after
// the profile ended is another run's too. What is set aside is said, with why.
#pragma once

#include <string>
#include <vector>

#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"

namespace sightline::join {

struct CompileLogs {
  std::vector<std::string> read;  // logs whose records were kept
  struct SetAside {
    std::string log;
    std::string reason;  // "its process (pid 1039) is not one of this profile's (479)"
  };
  std::vector<SetAside> set_aside;
};

// The compilations and graph breaks of `code` that belong to `profile`'s run; `logs` says which
// logs were read and which set aside.
model::CompiledCode profiledRunsCompiles(const model::CompiledCode& code, const model::Profile& profile,
                                         CompileLogs& logs);

}  // namespace sightline::join
