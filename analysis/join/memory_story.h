// GPU memory joined to the user's lines: a profile's memory snapshot replayed
// (attribution/memory_replay.h), each user line's bytes alive at the peak charged to its
// LineCost, and what the features say about the peak and an out-of-memory error, with every
// line named for display. Plain data and a pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/memory_replay.h"
#include "analysis/model/profile.h"

namespace sightline::join {

struct MemoryPlace {
  std::string path;  // the local file the profile path maps onto, else the profile's path
  int32_t line = 0;
  int64_t bytes = 0;
  std::string function;  // where known ("" otherwise)
};

struct MemoryStory {
  std::string source;  // "memory-snapshot", "pytorch-profiler"
  int32_t device = 0;  // the device told (the one that ran out of memory, else the highest peak)
  int devices = 0;     // devices with memory in the snapshot
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t allocated_before_trace_bytes = 0;  // the trace's ring buffer began after these
  int64_t unattributed_bytes = 0;            // of the peak, on no user line
  attribution::MemoryPhase peak_phase = attribution::MemoryPhase::Unknown;
  int steps = 0;      // in the trace (a snapshot's; 0: not told)
  int peak_step = 0;  // the step of the peak, 1-based; 0: not known
  int steady_steps = 0;
  std::vector<MemoryPlace> top;  // the user lines holding the peak, most first (the first 100)
  // Allocated and reserved over the trace (attribution::MemorySample; empty for the pool alone),
  // the peak's time and the steps' starts, on the trace's clock (us).
  std::vector<attribution::MemorySample> series;
  int64_t peak_time_us = 0;
  std::vector<int64_t> step_starts_us;
  // The lines of each sample's `bands` (bytes unused), and the peak's step sampled finer (empty
  // where the series holds each event already).
  std::vector<MemoryPlace> band_lines;
  std::vector<attribution::MemorySample> step_series;
  // The caching allocator's pool (nsys --cuda-memory-usage=true): all it grew by, and the lines
  // whose cudaMalloc grew it, most first. Without tensor events the allocated figures are unknown.
  bool allocated_known = true;
  int64_t pool_growth_bytes = 0;
  std::vector<MemoryPlace> growth;  // the first 100
  struct Oom {
    MemoryPlace where;  // its bytes: those asked for
    int64_t requested_bytes = 0;
    int64_t free_bytes = 0;
    std::vector<MemoryPlace> chain;  // its stack's user frames (the innermost 100), outermost first; bytes unused
    int64_t time_us = 0;             // when, on the series' clock (0: not recorded)
  };
  std::optional<Oom> oom;
};

struct JoinedMemory {
  std::shared_ptr<const MemoryStory> story;  // null: the profile has no memory
  model::StringId oom_file = 0;              // the failing allocation's user file (interned), with
  int32_t oom_line = 0;                      // its line; 0: none
};

// Replays `profile.memory` (else the trace's memory events, on the lines `attr` found for them)
// and charges each user line's bytes at the peak (of the device told)
// to `attr.files` (interning the paths into the profile). `place` names a profile path.
JoinedMemory joinMemory(model::Profile& profile, attribution::Attribution& attr,
                        const std::function<std::string(model::StringId)>& place);

// "backward", "optimizer", "forward", "" for a phase.
const char* phaseName(attribution::MemoryPhase phase);

}  // namespace sightline::join
