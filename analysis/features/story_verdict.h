// The step verdict told as story rows (story.h): the step as captured and without the profiler,
// the confidence, what the profiler cost, the causes with their lines, the changes to try, how
// to measure, what torch.compile ran and compiled, and the work outside the steady steps. Built
// once per load from the one StepVerdict; every surface renders these rows.
#pragma once

#include <string>
#include <vector>

#include "analysis/features/story.h"

namespace sightline::features {

// The verdict's rows, in the order the report's header gives them.
Story verdictStory(const StepVerdict& v);

// Why the verdict's confidence is low (records lost in the steps); "" when it is not.
std::string confidenceReason(const StepVerdict& v);
// What the capture itself cost the step ("the capture added 63.2 ms/step: ..."); empty when it
// cost too little to say.
StoryLine captureCostStory(const StepVerdict& v);
// Where torch.compile's kernels got their lines from, or what to keep or name so they reach the
// model's lines (the `Compiled` row's note and the status's).
StoryLine compiledCodeStory(const join::StepStory::Generated& g);
// What torch.compile's compilations cost per compiled function: compiles, graphs and their
// breaks, recompiles and why ("forward (train.py:20): 10 compilations in 13.9 s, ...").
StoryLine compileSummaryStory(const std::vector<join::CompiledFunctionSummary>& compiles);

}  // namespace sightline::features
