// Each step's GPU busy time split into compute, copies and communication (internal to
// analysis/attribution; the idle part is split by cause where the steps are summarized).
// It reads the windows summarizeSteps set; busyOfOwnWork then sets the summary's busy figures.
#pragma once

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/ranks.h"

namespace sightline::attribution {

// Fills Step::compute_ns, copy_ns, comm_ns and comm_wait_ns of every step with a window, per
// process over all its GPUs (as Step::busy_ns): compute first, copies and memsets where no
// kernel ran, communication where neither ran. `ranks` gives which activities are collectives
// and, once paired, how long each waited for the last rank.
void splitStepBusy(const model::Profile& profile, const RankTable& ranks, Attribution& out);

// Sets StepSummary::busy_ns and busy_share from the GPU's own work (each steady step's busy time
// less its Step::comm_wait_ns), where steps waited for other ranks; after splitStepBusy.
void busyOfOwnWork(Attribution& out);

// Fills Step::capture_ns of every step: the host time the profiler's own events in the step
// cost (model::CaptureEvents by kind, times `costs`, times `scale`).
void chargeCaptureToSteps(const model::Profile& profile, const CaptureCosts& costs, double scale, Attribution& out);

}  // namespace sightline::attribution
