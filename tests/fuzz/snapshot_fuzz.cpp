// A memory snapshot on any bytes, read and replayed as the server does: an error that says why,
// or a snapshot whose replay finishes (no crash, no overflow, no hang) with figures that hold
// together: nothing on a line beyond the peak, the peak never below what predates the trace.
// Read both ways (entries taken as they complete, and the whole document first). Whatever the
// input shares is read once (a list, string or stack named many times; the seeds include the
// shapes of tests/support/crafted_snapshots.h): the events, blocks, frames, stacks and the
// strings' bytes stay within what the input's bytes can hold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/memory_replay.h"
#include "analysis/ingest/memory_snapshot_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (bool whole : {false, true}) {
    std::string error;
    auto snapshot =
        sightline::ingest::parseMemorySnapshot(std::string(reinterpret_cast<const char*>(data), size), error, whole);
    if (!snapshot) {
      if (error.empty()) __builtin_trap();  // every failure says why
      continue;
    }
    size_t string_bytes = 0, stack_frames = 0;
    for (const auto& s : snapshot->strings) string_bytes += s.size();
    for (const auto& s : snapshot->stacks) stack_frames += s.size();
    if (snapshot->events.size() > size || snapshot->blocks.size() > size || snapshot->frames.size() > size ||
        string_bytes > size || stack_frames > size)
      __builtin_trap();  // more than the bytes hold: something shared was read again
    for (const auto& r : sightline::attribution::replayMemory(*snapshot, sightline::attribution::isDefaultUserFile)) {
      int64_t on_lines = r.unattributed_at_peak;
      for (const auto& l : r.lines) on_lines += l.bytes;
      if (r.peak_allocated < r.allocated_before_trace) __builtin_trap();
      if (on_lines < 0) __builtin_trap();
    }
  }
  return 0;
}
