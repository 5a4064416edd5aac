// Opening a profile the user points at, with what that takes outside the analysis core: an
// Nsight Systems report (`.nsys-rep`) is exported to SQLite once with `nsys export` (a child
// process) into a cache directory, then read like any export. Everything else goes straight
// to the readers (analysis/ingest/profile_loader.h).
#pragma once

#include <string>

#include "analysis/ingest/profile_loader.h"

namespace sightline::server {

struct OpenProfileOptions {
  std::string cache_dir;          // where .nsys-rep exports go; "" = $XDG_CACHE_HOME or ~/.cache /sightline
  ingest::LoadProgress progress;  // on the loading thread
};

ingest::LoadResult openProfile(const std::string& path, const OpenProfileOptions& options = {});

}  // namespace sightline::server
