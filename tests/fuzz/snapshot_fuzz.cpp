// A memory snapshot on any bytes, read and replayed as the server does: an error that says why,
// or a snapshot whose replay finishes (no crash, no overflow, no hang) with figures that hold
// together: nothing on a line beyond the peak, the peak never below what predates the trace.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/memory_replay.h"
#include "analysis/ingest/memory_snapshot_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto snapshot = sightline::ingest::parseMemorySnapshot(std::string(reinterpret_cast<const char*>(data), size), error);
  if (!snapshot) {
    if (error.empty()) __builtin_trap();  // every failure says why
    return 0;
  }
  for (const auto& r : sightline::attribution::replayMemory(*snapshot, sightline::attribution::isDefaultUserFile)) {
    int64_t on_lines = r.unattributed_at_peak;
    for (const auto& l : r.lines) on_lines += l.bytes;
    if (r.peak_allocated < r.allocated_before_trace) __builtin_trap();
    if (on_lines < 0) __builtin_trap();
  }
  return 0;
}
