// Replays a memory snapshot's trace as PyTorch's memory visualizer does: allocated and reserved
// bytes over time, their peaks, what was allocated before the trace began (the ring buffer
// keeps only the last events: a free with no alloc in the trace, and a block alive at the dump
// that the trace never allocated, count from the start), the out-of-memory event, and the
// bytes alive at the peak per user line. Allocations without frames (the autograd engine's
// thread) go to the user line of the `backward()` call that ran them.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/model/memory.h"

namespace sightline::attribution {

// What was allocated in each pass: forward, backward, optimizer (MemoryPhase less one).
using PhaseBytes = std::array<int64_t, 3>;

// Files are ids into the strings of what was replayed (MemorySnapshot::strings for replayMemory,
// Profile::strings for replayMemoryUses), never copies: a thousand lines of one long file name
// hold it once.
struct MemoryLine {
  uint32_t file = 0;
  int32_t line = 0;
  int64_t bytes = 0;      // alive at the peak, allocated by this line (innermost user frame)
  PhaseBytes by_phase{};  // of `bytes`, by the pass that allocated them (where known)
  int64_t allocations = 0;
  // Of `bytes`, by the operator that allocated them, most first (traces: the autograd engine's
  // allocations charged to `backward()` name their backward op).
  std::vector<std::pair<std::string, int64_t>> ops;
};

struct MemoryOom {
  uint32_t file = 0;  // the innermost user frame of the failing allocation (0, "": none)
  int32_t line = 0;
  int64_t requested = 0;
  int64_t free = 0;     // what the device had free
  uint32_t stack = 0;   // into the snapshot's stacks
  int64_t time_us = 0;  // when (the trace's clock; 0: not recorded)
};

// What the allocation at the peak was part of: the backward pass (a `backward()` frame, or the
// autograd engine's frameless thread after one), the optimizer (a frame in torch/optim), else
// the forward pass and the rest of the step.
enum class MemoryPhase : uint8_t { Unknown, Forward, Backward, Optimizer };
// Index into PhaseBytes; -1 for Unknown.
inline int phaseIndex(MemoryPhase p) { return static_cast<int>(p) - 1; }

// Allocations of one line still alive when the trace ends, made over much of it: memory kept
// step after step (a list that keeps each step's tensors).
struct MemoryKept {
  uint32_t file = 0;
  int32_t line = 0;
  int count = 0;      // allocations never freed
  int64_t bytes = 0;  // their bytes
  int steps = 0;      // the steps they were made in
};

// Bytes over the trace, for a picture: the most allocated within each of up to kMemorySamples
// runs of events, with the reserved bytes there, and the bytes alive then of each band line
// (MemoryReplay::band_lines; what they do not hold, `allocated` less their sum, is the rest's).
struct MemorySample {
  int64_t time_us = 0;
  int64_t allocated = 0, reserved = 0;
  std::vector<int64_t> bands;
};
inline constexpr size_t kMemorySamples = 1000;
// The lines a picture draws as bands of their own: those holding the most at the peak.
inline constexpr size_t kMemoryBands = 8;

struct MemoryReplay {
  int32_t device = 0;
  uint32_t pid = 0;  // a trace's process (replayMemoryUses); 0 for a snapshot
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
  int64_t allocated_before_trace = 0;
  int64_t peak_event = -1;  // index into the snapshot's events; -1: the peak is the trace's start
  int64_t peak_time_us = 0;
  MemoryPhase peak_phase = MemoryPhase::Unknown;
  // Steps as the trace tells them (a forward after a backward or optimizer pass begins one): how
  // many it holds (the first and last may be partial) and the one of the peak (1-based; 0: none).
  int steps = 0;
  int peak_step = 0;
  std::vector<MemoryLine> lines;  // most bytes first
  // Per steady step (the trace's steps but its first and last, when it has three or more):
  // each line's bytes allocated (`bytes`, by pass) and allocations, most bytes first.
  int steady_steps = 0;
  std::vector<MemoryLine> per_step;
  int64_t unattributed_at_peak = 0;
  std::optional<MemoryOom> oom;
  // The caching allocator's pool (nsys --cuda-memory-usage=true: its cudaMalloc and cudaFree):
  // all it grew by, and by which line (most first). No tensor events: peak_allocated is 0 and
  // allocated_known false.
  std::vector<MemoryKept> kept;  // most bytes first
  bool allocated_known = true;
  int64_t pool_growth = 0;
  std::vector<MemoryLine> growth_lines;
  std::vector<MemorySample> series;     // in time order (empty: the pool alone, no allocations known)
  std::vector<int64_t> step_starts_us;  // where each step after the first begins
  // The first kMemoryBands of `lines` (file, line): the bands of each sample's `bands`.
  std::vector<std::pair<uint32_t, int32_t>> band_lines;
  // The peak's step alone in up to kMemorySamples samples, bands too (a snapshot's; empty where
  // the series already holds each of its events): a picture's zoom into one step.
  std::vector<MemorySample> step_series;
};

// The same from a trace's memory events (PyTorch profiler, profile_memory=True), one replay
// per process and device: the peak is the largest `Total Allocated` recorded, what was
// allocated before the first event is its total less its bytes, and the bytes alive at the
// peak are charged to `lines` (parallel to profile.memory_uses; file 0: on no line) and to the
// operators of `ops` (the same; ranges of profile.ranges, -1: none).
std::vector<MemoryReplay> replayMemoryUses(const model::Profile& profile, const std::vector<LineRef>& lines,
                                           const std::vector<int32_t>& ops);

// One replay per device that has a trace or blocks. `is_user_file` picks the user's frames.
std::vector<MemoryReplay> replayMemory(const model::MemorySnapshot& snapshot,
                                       const std::function<bool(std::string_view path)>& is_user_file);

}  // namespace sightline::attribution
