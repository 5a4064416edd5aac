// Replays a memory snapshot's trace as PyTorch's memory visualizer does: allocated and reserved
// bytes over time, their peaks, what was allocated before the trace began (the ring buffer
// keeps only the last events: a free with no alloc in the trace, and a block alive at the dump
// that the trace never allocated, count from the start), the out-of-memory event, and the
// bytes alive at the peak per user line. Allocations without frames (the autograd engine's
// thread) go to the user line of the `backward()` call that ran them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/model/memory.h"

namespace sightline::attribution {

struct MemoryLine {
  std::string file;
  int32_t line = 0;
  int64_t bytes = 0;  // alive at the peak, allocated by this line (innermost user frame)
};

struct MemoryOom {
  std::string file;  // the innermost user frame of the failing allocation ("" when none)
  int32_t line = 0;
  int64_t requested = 0;
  int64_t free = 0;    // what the device had free
  uint32_t stack = 0;  // into the snapshot's stacks
};

// What the allocation at the peak was part of: the backward pass (a `backward()` frame, or the
// autograd engine's frameless thread after one), the optimizer (a frame in torch/optim), else
// the forward pass and the rest of the step.
enum class MemoryPhase : uint8_t { Unknown, Forward, Backward, Optimizer };

// Allocations of one line still alive when the trace ends, made over much of it: memory kept
// step after step (a list that keeps each step's tensors).
struct MemoryKept {
  std::string file;
  int32_t line = 0;
  int count = 0;      // allocations never freed
  int64_t bytes = 0;  // their bytes
};

struct MemoryReplay {
  int32_t device = 0;
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  int64_t allocated_before_trace = 0;
  int64_t peak_event = -1;  // index into the snapshot's events; -1: the peak is the trace's start
  int64_t peak_time_us = 0;
  MemoryPhase peak_phase = MemoryPhase::Unknown;
  std::vector<MemoryLine> lines;  // most bytes first
  int64_t unattributed_at_peak = 0;
  std::optional<MemoryOom> oom;
  // The caching allocator's pool (nsys --cuda-memory-usage=true: its cudaMalloc and cudaFree):
  // all it grew by, and by which line (most first). No tensor events: peak_allocated is 0 and
  // allocated_known false.
  std::vector<MemoryKept> kept;  // most bytes first
  bool allocated_known = true;
  int64_t pool_growth = 0;
  std::vector<MemoryLine> growth_lines;
};

// The same from a trace's memory events (PyTorch profiler, profile_memory=True), one replay
// per process and device: the peak is the largest `Total Allocated` recorded, what was
// allocated before the first event is its total less its bytes, and the bytes alive at the
// peak are charged to `lines` (parallel to profile.memory_uses; file 0: on no line).
std::vector<MemoryReplay> replayMemoryUses(const model::Profile& profile, const std::vector<LineRef>& lines);

// One replay per device that has a trace or blocks. `is_user_file` picks the user's frames.
std::vector<MemoryReplay> replayMemory(const model::MemorySnapshot& snapshot,
                                       const std::function<bool(std::string_view path)>& is_user_file);

}  // namespace sightline::attribution
