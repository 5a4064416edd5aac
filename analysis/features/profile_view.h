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
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

struct FileCosts {
  std::map<int32_t, attribution::LineCost> lines;  // 1-based line -> cost
  int64_t total_gpu_ns = 0;                        // of the whole profile (shares are of this)
  int steps = 0;                                   // 0: unknown (per-step figures become totals)
  std::set<int32_t> stale_lines;                   // 1-based lines edited since they were profiled
  // A second profile on the same lines (`compareWith`): hints and hovers show the change from it.
  std::shared_ptr<const FileCosts> compare;
  std::string compare_name;  // its file name, for the hover
  std::string compare_note;  // how its lines were placed when the script changed in between
};

// "▲ +3.20 ms" / "▼ −1.10 ms" for a change of `delta_ns` (already per step when per step).
std::string formatDelta(double delta_ns);

// `costs` moved onto the current lines of an edited document (1-based both ways): a line
// inserted above shifts them, a deleted line's cost is dropped, an edited line keeps its cost
// and is listed in stale_lines.
FileCosts remapCosts(const FileCosts& costs, const source::LineTracker& tracker);

// Merges the costs of every profile file for which `maps_here(profile path)` is true.
template <class MapsHere>
FileCosts fileCosts(const model::Profile& profile, const attribution::Attribution& attr, MapsHere&& maps_here) {
  FileCosts out;
  out.total_gpu_ns = attr.total_gpu_ns;
  out.steps = attr.steps;
  for (const auto& [file, lines] : attr.files) {
    if (!maps_here(profile.strings[file])) continue;
    for (const auto& [line, cost] : lines) attribution::addCost(out.lines[line], cost);
  }
  return out;
}

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
