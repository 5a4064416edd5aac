// Opens a profile file by its name: nsys SQLite exports (`.sqlite`), PyTorch profiler traces
// (`.json`, `.json.gz`) and PyTorch memory snapshots (`.pickle`). An Nsight Systems report (`.nsys-rep`) must be
// exported to SQLite first: that runs a program and writes a cache, which is the server's job
// (server/workspace/profile_files.h), never the analysis core's.
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

// Who each process is, completed from what the file's name says (loadProfile calls it): the host
// of a PyTorch-profiler trace named by tensorboard_trace_handler (`HOST_PID.*.pt.trace.json`,
// where PID is the trace's), the job's rank of a report written per rank (`run_rank%q{RANK}`:
// `rank3`, `rank-3`, `rank_3` in the name) where the profile records none and one process ran
// GPU work, and each process's host and GPU UUID from the profile's own.
void completeIdentity(model::Profile& profile, std::string_view file_name);
// The rank a file's name gives (`rank12` → 12), else -1.
int32_t rankInFileName(std::string_view file_name);

// What to run to get a profile Sightline can put on lines; with the profile's info, only what
// that capture lacks (never a flag it already used).
std::string captureAdvice();
std::string captureAdvice(const model::ProfileInfo& info);

}  // namespace sightline::ingest
