// What every profile reader returns: a profile, or why there is none.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "analysis/model/profile.h"

namespace sightline::ingest {

// Reports a reader's progress: what it has read so far and a rough share of the load done
// (0-100). Called on the reading thread.
using LoadProgress = std::function<void(const std::string& message, int percent)>;
// Hands the profile's names to a caller as soon as they are read (nsys: before its activities),
// for work that can start early on them (finding the generated code the run used). Called on
// the reading thread, at most once; the table must not be kept.
using NamesRead = std::function<void(const model::StringTable& names)>;

struct LoadResult {
  std::optional<model::Profile> profile;
  std::string error;  // set when profile is empty
};

}  // namespace sightline::ingest
