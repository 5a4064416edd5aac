// The `regressed-since-baseline` finding: a line whose GPU time per step grew past its spread
// against compareWith's run (join::FileCosts::regressions, from features/regression.h), or
// that now synchronizes more often while the step grew.
#pragma once

#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/features/rules.h"
#include "analysis/join/file_costs.h"
#include "analysis/source/source_file.h"

namespace sightline::features {

std::vector<Finding> regressionFindings(const source::SourceFile& file, const join::FileCosts& costs,
                                        const RuleConfig& config);

}  // namespace sightline::features
