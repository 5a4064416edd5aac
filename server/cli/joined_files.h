// What `report` and `check` share before they print: the files the user named, read and
// parsed once, and a profile loaded and joined to them (analysis/join/profile_join.h).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/join/profile_join.h"

namespace sightline::server::cli {

struct NamedFile {
  std::string path;      // as named on the command line
  std::string absolute;  // std::filesystem::absolute(path)
  std::shared_ptr<const source::SourceFile> file;
  std::shared_ptr<const source::SourceIndex> index;
};

// Reads and parses `paths`; each one that cannot be read is told to `err` ("sightline VERB:
// cannot read PATH") and left out, and `unreadable` is set.
std::vector<NamedFile> readNamedFiles(const std::vector<std::string>& paths, const std::string& verb, std::ostream& err,
                                      bool& unreadable);

// Loads the profile at `profile_paths` (several: the reports of one run's ranks, as one
// profile) and joins it with `named` (profile paths mapped by `mapper`); nullptr with `error`
// set when it cannot be read or holds no GPU activity. torch.compile's generated code is looked
// for in `compiled_code` (--compiled-code), then where the run kept it, under the current
// directory and in this user's default cache (server/workspace/compiled_code.h).
struct JoinRequest {
  int64_t idle_gap_ns = 1'000'000;
  bool all_steps = false;
  std::vector<std::string> compiled_code;  // --compiled-code folders
  // The step of the run without the profiler (--step-log); without one, a steps file beside the
  // profile (sightline capture's, server/workspace/steps_file.h) is read when there is one.
  std::optional<model::StepMeasurement> measured;
};
std::unique_ptr<join::ProfileJoin> loadJoinedProfile(const std::vector<std::string>& profile_paths,
                                                     const attribution::PathMapper& mapper,
                                                     const std::vector<NamedFile>& named, const JoinRequest& request,
                                                     std::string& error);

}  // namespace sightline::server::cli
