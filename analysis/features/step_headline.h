// The step's headline as every surface says it (report, check, JSON's reason, the HTML page,
// the status bar and hovers): the step without the profiler — its figure or the range that
// surely holds it, where that comes from, the GPU's busy share and the bound where it holds —
// and how to measure it where it was not. Plain text: a Markdown surface escapes it.
#pragma once

#include <string>

#include "analysis/features/step_verdict.h"
#include "analysis/features/units.h"

namespace sightline::features {

// The bound where it holds, else "bound: cannot tell from this capture".
std::string unprofiledBoundText(const UnprofiledStep& u);
// "measured", "from the script's log", "from the light capture", "estimated".
std::string unprofiledSourceShort(const UnprofiledStep& u);
// Where the figure comes from ("measured without the profiler in the same run over 20 steps
// (run.steps.json, by sightline capture)"), or why there is only a range.
std::string unprofiledReason(const StepVerdict& v);
// The step without the profiler, whole: "12.4 ms, measured ... (11.9–13.0 ms), GPU busy 47% ·
// sync-bound", or "between 4.97 ms (the GPU's own work per step) and 13.3 ms (as captured): ...".
std::string unprofiledText(const StepVerdict& v);
// One line: "without the profiler 12.4 ms (measured) · GPU 47% busy · sync-bound", "without the
// profiler 4.97–13.3 ms (not measured) · bound: cannot tell from this capture".
std::string unprofiledSummary(const StepVerdict& v);
// How to measure it (`sightline capture -- python SCRIPT`, StepVerdict::script) where it was not
// measured; "" where it was.
std::string measureAdvice(const StepVerdict& v);
// Its parts: the command ("" where measured), and what it does (after the command).
std::string measureCommand(const StepVerdict& v);
extern const char* const kMeasureWhy;

}  // namespace sightline::features
