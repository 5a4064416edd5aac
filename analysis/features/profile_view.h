// What the editor shows of a profile on one file: the file's line costs (every profile path
// that maps onto it, merged), inlay-hint labels with markdown tooltips, and hover cards.
// Pure functions over the source model and the attribution result; lines are 0-based here
// (LineCost maps use the profile's 1-based lines).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/join/file_costs.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

using join::FileCosts;

// "▲ +3.20 ms" / "▼ −1.10 ms" for a change of `delta_ns` (already per step when per step).
std::string formatDelta(double delta_ns);

struct HintOptions {
  double min_share = 0.005;  // lines below this share of all GPU time get no hint
  bool per_step = true;      // ms per step (when steps are known), else totals
  bool show_backward = true;
};

struct LineHint {
  uint32_t line = 0;    // 0-based
  std::string label;    // "▮ 12.4 ms · 31% (fwd 4.1 + bwd 8.3)"
  std::string tooltip;  // markdown
  bool rollup = false;  // a def or loop header's total
};

// "12.4", "0.41", "153": three significant figures, no unit.
std::string formatMilliseconds(double ns);
// Kernel names shortened for display: template arguments and parameter lists elided.
std::string shortKernelName(const std::string& name, size_t max_length = 60);

// Hints for lines [first, last] (0-based, inclusive): lines with cost, then def and loop
// header lines with the sum of their bodies (`Σ`), in line order.
std::vector<LineHint> computeInlayHints(const source::SourceFile& file, const source::SourceIndex& index,
                                        const FileCosts& costs, const model::Profile& profile,
                                        const HintOptions& options, uint32_t first, uint32_t last);

// A name for an NVTX range around a 0-based line, from what the profile saw it run: its top
// autograd op without the `aten::` prefix ("conv2d"), else its top GPU work's short name; ""
// when the line has no cost or is below `options.min_share`.
std::string rangeNameFromProfile(const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                 uint32_t line);

// The hover card (markdown) for a 0-based line, or nullopt when it has no cost.
std::optional<std::string> hoverCard(const source::SourceFile& file, const source::SourceIndex& index,
                                     const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                     uint32_t line);

}  // namespace sightline::features
