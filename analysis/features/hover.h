// The hover card of a profiled line, as numbers: the line's breakdown, its change from the
// compare profile, whether it was edited since it was measured; or, on a line without GPU
// time of its own, the def/loop roll-up or gone-line hint that stands there. Markdown is made
// at the edge (server/render/profile_text.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "analysis/features/inlay_hints.h"

namespace sightline::features {

struct CompareChange {
  std::string name;                  // the compare profile's file name
  double before_ns = 0, now_ns = 0;  // per step when both profiles know steps, else totals
  bool per_step = false;
  std::string note;  // how the compare profile's lines were placed ("" when they were not moved)
};

struct HoverInfo {
  uint32_t line = 0;   // 0-based
  bool stale = false;  // edited since it was profiled
  std::optional<CompareChange> compare;
  // The regression gate's change of the line against compareWith, and what it compared.
  std::optional<join::LineRegression> regression;
  std::shared_ptr<const join::RegressionBasis> regression_basis;
  std::optional<LineBreakdown> cost;  // the line's own GPU time
  std::optional<LineHint> standing;   // no own time: the roll-up or gone hint on the line
  // A torch.compile'd function defined on the line, or broken at it: its compilations.
  std::optional<join::CompiledFunctionSummary> compiled;
  // GPU memory (a memory snapshot): what the line holds at the peak, and whether the GPU ran out
  // of memory on it. `memory` is the whole profile's story (null: no memory in the profile).
  std::shared_ptr<const join::MemoryStory> memory;
  int64_t memory_bytes = 0;
  std::array<int64_t, 3> memory_by_phase{};                 // of memory_bytes: forward, backward, optimizer
  std::vector<std::pair<std::string, int64_t>> memory_ops;  // of memory_bytes: by operator, most first
  int memory_rank = 0;                                      // 1: the line holding the most at the peak; 0: holds none
  // Allocated here per steady step of the memory trace (0: none, or no steps told).
  int64_t memory_step_bytes = 0;
  int64_t memory_step_allocations = 0;
  bool oom_here = false;
};

// The hover of a 0-based line, or nullopt when the profile has nothing to say there.
std::optional<HoverInfo> computeHover(const source::SourceFile& file, const source::SourceIndex& index,
                                      const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                      uint32_t line);

}  // namespace sightline::features
