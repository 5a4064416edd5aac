// A line's time in the compare profile, for hints and hovers (internal to analysis/features).
#pragma once

#include "analysis/features/profile_view.h"

namespace sightline::features {

// A line's GPU time in the compare profile, in its own per-step scale (its steps, not ours).
inline double compareValue(const FileCosts& costs, int32_t line, bool per_step) {
  const FileCosts& c = *costs.compare;
  auto it = c.lines.find(line);
  double ns = it == c.lines.end() ? 0 : static_cast<double>(it->second.gpu_ns);
  return per_step && c.steps > 0 ? ns / c.steps : ns;
}

// Both profiles compare per step only when both know their steps.
inline bool comparePerStep(const FileCosts& costs, const HintOptions& options) {
  return options.per_step && costs.steps > 0 && costs.compare && costs.compare->steps > 0;
}

}  // namespace sightline::features
