// What the profile features share: a file's line costs (analysis/join/file_costs.h), the hint
// options, the number formatting that diagnostics' messages use, and an NVTX range name from
// what a line ran. The hints and hovers themselves are inlay_hints.h and hover.h. Lines are
// 0-based here (LineCost maps use the profile's 1-based lines).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/features/units.h"
#include "analysis/join/file_costs.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

using join::FileCosts;

// What a line's hint shows where the profile has both: GPU time, GPU memory at the peak, or both.
enum class HintFigures : uint8_t { Both, Time, Memory };

struct HintOptions {
  double min_share = 0.005;  // lines below this share of all GPU time (or of the memory peak) get no hint
  bool per_step = true;      // ms per step (when steps are known), else totals
  bool show_backward = true;
  HintFigures figures = HintFigures::Both;
};

// Kernel names shortened for display: template arguments and parameter lists elided.
std::string shortKernelName(const std::string& name, size_t max_length = 60);

// How a line's time spreads over the ranks (LineCost::rank_ns): the slowest and fastest rank
// (indices into FileCosts::ranks) and min / median / max in ns. Empty input: all zero.
struct RankSpread {
  size_t slowest = 0, fastest = 0;
  double min_ns = 0, median_ns = 0, max_ns = 0;
};
RankSpread rankSpread(const std::vector<int64_t>& per_rank);

// One rank of the rank table, per step of its own steady steps (totals where it has none): the
// figures whose mean over the ranks the step verdict gives, so table, header and findings agree.
struct RankRow {
  const attribution::RankInfo* rank = nullptr;
  bool per_step = false;  // divided by its steady steps
  double gpu_ns = 0, busy_share = 0, comm_ns = 0, comm_exposed_ns = 0;
  // Collectives paired across ranks (paired false: none): of comm_ns, waiting for the last rank
  // to arrive and moving data; the share of them it arrived last at.
  bool paired = false;
  double comm_wait_ns = 0, comm_transfer_ns = 0, late_share = 0;
};
std::vector<RankRow> rankRows(const std::vector<attribution::RankInfo>& ranks);
// `ns` of one rank (a line's LineCost::rank_ns entry), per step of that rank when it has steps.
double perRankStep(const attribution::RankInfo& rank, double ns);

// Inclusive time: the work launched beneath 1-based lines [first, last] of the file (through
// calls into any file, and the backward of their forward work), each piece once. Without
// inclusive data (FileCosts::spans empty) the lines' own time.
struct Inclusive {
  int64_t gpu_ns = 0, forward_ns = 0, backward_ns = 0;
};
Inclusive inclusiveOver(const FileCosts& costs, int32_t first, int32_t last);
// Inclusive time per profile file and 1-based line, over the whole attribution: each piece of
// work once on every line it ran beneath (attribution::ContextCost).
std::map<model::StringId, std::map<int32_t, Inclusive>> inclusiveByLine(const attribution::Attribution& a);
// The lines the work beneath 1-based `line` is charged to, other than the line itself,
// costliest first (PlacedLine::ns: their time beneath it); `more` counts those left out.
std::vector<join::PlacedLine> linesBeneath(const FileCosts& costs, int32_t line, size_t n, size_t& more);

// A name for an NVTX range around a 0-based line, from what the profile saw it run: its top
// autograd op without the `aten::` prefix ("conv2d"), else its top GPU work's short name; ""
// when the line has no cost or is below `options.min_share`.
std::string rangeNameFromProfile(const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                 uint32_t line);

}  // namespace sightline::features
