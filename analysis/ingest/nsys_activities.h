// The GPU-activity tables of an nsys export (internal to analysis/ingest): kernels, copies,
// memsets and CUDA graph launches, read on a connection and thread of their own while the main
// reader reads the CUDA API calls; and the NVTX domains' rows, read by whichever finishes first.
#pragma once

#include <array>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/ingest/sqlite.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::nsys {

// What the GPU-activity tables give back; read on a second connection and thread, so it
// interns nothing: names come from the shared id -> StringId map and pre-interned ids.
// An NVTX domain's row (eventType 75): interned by the caller once the thread has ended.
struct DomainRow {
  int64_t pid = -1;  // -1: a row of no thread
  int64_t id = 0;
  std::string name;  // empty: named by `text_id`
  model::StringId text_id = 0;
};

struct ActivityTables {
  std::vector<model::GpuActivity> activities;
  std::vector<model::LaunchConfig> launch_configs{model::LaunchConfig{}};
  std::vector<std::pair<size_t, int64_t>> graphs;  // activity index -> graphId, named afterwards
  std::vector<std::string> warnings;
};

// Reads them into `out`: names through `strings` (StringIds' id -> the profile's id), copies
// named by kind (`copy_names`), memsets `memset_name`; CUTLASS's "Kernel"/"Kernel2" take their
// demangled name.
void readActivityTables(Database& db, ActivityTables& out, const std::unordered_map<int64_t, model::StringId>& strings,
                        const std::array<model::StringId, 6>& copy_names, model::StringId memset_name,
                        std::array<model::StringId, 2> generic_kernels);

// The NVTX domains' rows (eventType 75) into `out`. They may come after the events that use
// them, so they take a scan of the whole table of their own. Interns nothing, like the above.
void readNvtxDomainRows(Database& db, std::vector<DomainRow>& out, std::vector<std::string>& warnings,
                        const std::unordered_map<int64_t, model::StringId>& strings);

}  // namespace sightline::ingest::nsys
