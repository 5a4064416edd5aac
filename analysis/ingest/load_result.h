// What every profile reader returns: a profile, or why there is none.
#pragma once

#include <optional>
#include <string>

#include "analysis/model/profile.h"

namespace sightline::ingest {

struct LoadResult {
  std::optional<model::Profile> profile;
  std::string error;  // set when profile is empty
};

}  // namespace sightline::ingest
