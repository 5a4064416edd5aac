// GPU memory as PyTorch's caching allocator recorded it (a memory snapshot): its trace of
// allocations and frees with their Python stacks, and the blocks alive at the dump.
// Format-neutral: filled by ingest/memory_snapshot_reader, replayed by attribution/memory_replay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sightline::model {

// Names are ids into MemorySnapshot::strings: a file name shared by a thousand frames is held
// once, however long.
struct MemoryFrame {
  uint32_t file = 0;
  uint32_t function = 0;
  int32_t line = 0;
};

enum class MemoryAction : uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Snapshot,
  Oom,
  Other
};

// 40 bytes: a full ring buffer holds millions of them.
struct MemoryEvent {
  MemoryAction action = MemoryAction::Other;
  int32_t device = 0;
  uint32_t stack = 0;   // into MemorySnapshot::stacks; 0: no frames
  uint64_t addr = 0;    // an oom: the bytes the device had free (as PyTorch's own entry keeps it)
  int64_t size = 0;     // bytes (an oom: the bytes asked for)
  int64_t time_us = 0;  // 0 when not recorded

  int64_t deviceFree() const { return action == MemoryAction::Oom ? static_cast<int64_t>(addr) : 0; }
};

// One allocation or free as a profiler recorded it on the host (PyTorch profiler `[memory]`
// events with profile_memory=True): no stack of its own, charged to the line running on its
// thread at its time (attribution).
struct MemoryUse {
  int64_t time_ns = 0;
  uint32_t pid = 0, tid = 0;
  int32_t device = 0;
  uint64_t addr = 0;
  int64_t bytes = 0;             // negative: a free
  int64_t total_allocated = -1;  // on the device after it (-1: not recorded)
  int64_t total_reserved = -1;
  // The caching allocator's own cudaMalloc/cudaFree (nsys --cuda-memory-usage=true): reserved
  // memory, not a tensor; charged through the CUDA call of `correlation`.
  bool segment = false;
  int64_t correlation = -1;
};

// A block of a segment at the dump.
struct MemoryBlock {
  int32_t device = 0;
  uint32_t stack = 0;
  uint64_t addr = 0;
  int64_t size = 0;
  int64_t requested = 0;
  bool allocated = false;  // active_allocated or active_pending_free (else cached, free)
};

struct MemorySnapshot {
  std::vector<std::string> strings{""};       // distinct, the frames' names; strings[0] is ""
  std::vector<MemoryFrame> frames;            // distinct frames
  std::vector<std::vector<uint32_t>> stacks;  // frame ids, innermost first; stacks[0] is empty
  std::vector<MemoryEvent> events;            // in trace order within each device
  std::vector<MemoryBlock> blocks;            // of every segment at the dump
  std::vector<int64_t> reserved_at_dump;      // by device: the segments' total size
  std::vector<std::string> warnings;

  bool empty() const { return events.empty() && blocks.empty(); }
};

}  // namespace sightline::model
