// Training steps in a profile (internal to analysis/attribution): PyTorch's ProfilerStep#N
// ranges, else a user NVTX range opened once per step, else the wrap-arounds of the training
// loop's line in Python backtraces.
#pragma once

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/backtrace_index.h"

namespace sightline::attribution {

// The median of `v` (0 when empty).
int64_t medianNs(std::vector<int64_t> v);

// Sets out.steps and out.steps_source (0 and "" when no steps are found).
void detectSteps(const model::Profile& profile, const Options& options, const BacktraceIndex& backtraces,
                 Attribution& out);

}  // namespace sightline::attribution
