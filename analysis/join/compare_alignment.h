// Lines of a compare profile placed on the current script when the script changed between the
// two runs. Profiles keep no source text, so lines are matched by what they ran: the kernels,
// copies, memsets, autograd ops and synchronizing calls on each line (and, where the profile
// names it, the function the line is in), in order. A line of the earlier profile whose work
// matches no line of the later one has no place in the new script and is left out (its time
// still counts in the totals).
#pragma once

#include <map>
#include <vector>

#include "analysis/join/file_costs.h"
#include "analysis/join/function_anchors.h"

namespace sightline::join {

struct LineAlignment {
  std::map<int32_t, int32_t> moved;  // 1-based line in the compare profile -> line in the main one
  size_t unmatched = 0;              // compare lines with cost that match no line
};

// Aligns the costly lines of `before` (the compare profile's costs on this file) with those of
// `after` (the main profile's): a monotone matching that maximizes the similarity of the lines'
// work; lines named in different functions never match.
LineAlignment alignProfiledLines(const std::map<int32_t, attribution::LineCost>& before,
                                 const model::Profile& before_profile,
                                 const std::vector<FunctionAnchor>& before_anchors,
                                 const std::map<int32_t, attribution::LineCost>& after,
                                 const model::Profile& after_profile, const std::vector<FunctionAnchor>& after_anchors);

// "10 of 11 profiled lines matched by the work they ran".
std::string describe(const LineAlignment& alignment);

// `costs` with its lines moved by `alignment`; lines it does not place are dropped (the totals
// stay those of the whole profile).
FileCosts moveLines(const FileCosts& costs, const LineAlignment& alignment);

}  // namespace sightline::join
