// A file edited since it was profiled, as a whole block of lines moved (lines added or removed
// above the code): the one shift that puts the profile's (function, line) pairs back inside defs
// of their names, and its costs on lines of code, where the file as it is does neither. Also
// which lines hold code, so that no cost is ever shown on a blank or comment line.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/join/function_anchors.h"
#include "analysis/model/profile.h"
#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::join {

struct SourceShift {
  int32_t delta = 0;          // a profiled line L is line L + delta of the file now
  size_t anchors = 0;         // (function, line) pairs checked
  size_t matched_before = 0;  // of those, inside a def of their name where they are
  size_t matched_after = 0;   // and once shifted
  size_t costed = 0;          // lines with a cost
  size_t on_code_before = 0;  // of those, on a line of code where they are
  size_t on_code_after = 0;   // and once shifted
  bool found() const { return delta != 0; }
};

// The shift, when one fits far better than none (0 otherwise): the file differs where it is
// (two pairs and a thirtieth of them outside their defs, or a cost on a line without code) and
// the shift puts (nearly: 99%) every pair in a def of its name and every cost on code.
SourceShift findSourceShift(const source::SourceFile& file, const source::SourceIndex& index,
                            const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                            const std::map<int32_t, attribution::LineCost>& costs);

// Whether 1-based `line` of `file` holds code (not blank, not a comment alone).
bool isCodeLine(const source::SourceFile& file, int32_t line);

}  // namespace sightline::join
