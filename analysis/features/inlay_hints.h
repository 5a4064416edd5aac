// Inlay hints of a profile on a file: one LineHint per line, with numbers, never a label
// (labels and tooltips are made at the edge, server/render/profile_text.h, so clients that want the
// figures read them from the hint's data, not from its text).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/line_breakdown.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

enum class HintKind : uint8_t {
  Cost,    // the line's own GPU time
  Rollup,  // a def or loop header: the sum of its body's lines (Σ)
  Gone,    // a line that had GPU time in the compare profile and has none now
};

struct LineHint {
  uint32_t line = 0;  // 0-based
  HintKind kind = HintKind::Cost;
  Scale scale;                             // per step or totals
  double gpu_ns = 0;                       // scaled: the line's time; a rollup's sum; a gone line's time before
  double share = 0;                        // of all GPU time (a gone line: of the compare profile's)
  bool show_split = false;                 // forward + backward shown (the line has backward work)
  double forward_ns = 0, backward_ns = 0;  // scaled
  // Change from the compare profile (scaled per step when both profiles know steps); set when
  // at least 5 µs.
  std::optional<double> delta_ns;
  bool delta_per_step = false;
  // The regression gate's change against compareWith (join::FileCosts::regressions): when set,
  // delta_ns is its change of the median per step, with this interval.
  std::optional<join::LineRegression> regression;
  // Inclusive time (everything launched beneath the line); shown when it differs from the
  // line's own time. A rollup's gpu_ns is already inclusive.
  bool show_inclusive = false;
  double inclusive_ns = 0;                 // scaled
  double inclusive_share = 0;              // of all GPU time
  std::string scope;                       // a rollup's "function" or "loop"
  std::string compare_name;                // a gone line's compare profile (its file name)
  std::optional<LineBreakdown> breakdown;  // a cost hint's tooltip figures
  // GPU memory (a memory snapshot): a cost hint may show time, memory or both.
  bool show_time = true;
  int64_t memory_bytes = 0;  // allocated here and alive at the peak; 0: not shown
  double memory_share = 0;   // of the peak
  // Without tensor events (nsys --cuda-memory-usage): memory_bytes is what this line's cudaMalloc
  // grew the caching allocator's pool by, memory_share its share of all the pool grew by.
  bool memory_reserved = false;
  // The line was edited since it was profiled: its figures are of the code it held then.
  bool stale = false;
};

// Hints for lines [first, last] (0-based, inclusive): lines with cost, then def and loop
// header lines with the sum of their bodies, and lines gone since the compare profile, in
// line order.
std::vector<LineHint> computeInlayHints(const source::SourceFile& file, const source::SourceIndex& index,
                                        const FileCosts& costs, const model::Profile& profile,
                                        const HintOptions& options, uint32_t first, uint32_t last);

}  // namespace sightline::features
