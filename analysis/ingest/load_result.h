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

struct LoadResult {
  std::optional<model::Profile> profile;
  std::string error;  // set when profile is empty
};

}  // namespace sightline::ingest
