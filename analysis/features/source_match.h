// The profile-source-mismatch finding: one warning at the top of a file that no longer looks
// like the source the profile measured (the check itself is analysis/join/function_anchors.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/join/file_costs.h"
#include "analysis/join/function_anchors.h"
#include "analysis/model/profile.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

using join::FunctionAnchor;
using join::SourceMatch;

// The one warning for the top of a file that differs, or "" when it matches.
std::string sourceMismatchMessage(const SourceMatch& match, const std::string& file_name);

// The `profile-source-mismatch` finding (on the first line) when the rule is on and the file
// differs; nullopt otherwise. `costs` says what the join did of it: a file whose code moved as a
// block was re-aligned (realigned_by: information, saying so), lines of the profile on no code
// were left out (off_code_lines: a warning even where the function names still fit).
std::optional<Finding> sourceMismatchFinding(const source::SourceFile& file, const source::SourceIndex& index,
                                             const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                                             const RuleConfig& config, const std::string& file_name,
                                             const source::LineTracker* tracker = nullptr,
                                             const join::FileCosts* costs = nullptr);

}  // namespace sightline::features
