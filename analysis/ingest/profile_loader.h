// Opens a profile by its file name: nsys SQLite exports (`.sqlite`), and Nsight Systems
// reports (`.nsys-rep`), which are exported once with `nsys export --include-blobs=true`
// into a cache directory when `nsys` is on PATH; PyTorch profiler traces (`.json`, `.json.gz`).
#pragma once

#include <string>

#include "analysis/ingest/kineto_reader.h"
#include "analysis/ingest/nsys_reader.h"

namespace sightline::ingest {

struct LoadOptions {
  std::string cache_dir;  // where .nsys-rep exports go; "" = $XDG_CACHE_HOME or ~/.cache /sightline
  LoadProgress progress;  // what the reader has read (on the loading thread)
};

LoadResult loadProfile(const std::string& path, const LoadOptions& options = {});

// What to run to get a profile Sightline can put on lines.
std::string captureAdvice();

}  // namespace sightline::ingest
