// Training steps in a profile (internal to analysis/attribution): PyTorch's ProfilerStep#N
// ranges, else a user NVTX range opened once per step, else the wrap-arounds of the training
// loop's line in Python backtraces.
#pragma once

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/backtrace_index.h"

namespace sightline::attribution {

// The median of `v` (0 when empty).
int64_t medianNs(std::vector<int64_t> v);
double median(std::vector<double> v);

// Finds each process's steps and their kinds (steady, warm-up, outlier), and steps_source
// ("" when no steps are found). `call_of` gives each activity's launching call (-1: none), for
// captures without Python or step ranges: their steps come from the launches that repeat.
void detectSteps(const model::Profile& profile, const Options& options, const BacktraceIndex& backtraces,
                 const std::vector<int64_t>& call_of, Attribution& out);

// Sets out.steps (steady steps over every process), steps_per_rank and step_ranks from the
// steps' kinds, once they are final.
void countSteadySteps(Attribution& out);

}  // namespace sightline::attribution
