// Opens a profile file by its name: nsys SQLite exports (`.sqlite`), PyTorch profiler traces
// (`.json`, `.json.gz`) and PyTorch memory snapshots (`.pickle`). An Nsight Systems report (`.nsys-rep`) must be
// exported to SQLite first: that runs a program and writes a cache, which is the server's job (server/profile_files.h),
// never the analysis core's.
#pragma once

#include <string>

#include "analysis/ingest/kineto_reader.h"
#include "analysis/ingest/nsys_reader.h"

namespace sightline::ingest {

struct LoadOptions {
  LoadProgress progress;  // what the reader has read (on the loading thread)
  NamesRead names_read;   // the profile's names, once read (nsys exports)
};

// A memory snapshot's name (`.pickle`, `.pkl`): read as a profile of GPU memory alone.
bool isMemorySnapshotName(const std::string& path);

LoadResult loadProfile(const std::string& path, const LoadOptions& options = {});

// What to run to get a profile Sightline can put on lines; with the profile's info, only what
// that capture lacks (never a flag it already used).
std::string captureAdvice();
std::string captureAdvice(const model::ProfileInfo& info);

}  // namespace sightline::ingest
