// The capture's own cost, and the steps without it (internal to analysis/attribution; the
// result is StepSummary::unprofiled). Every event a profiler records on the host costs the
// program time (model::CaptureEvents, by kind; the cost of each kind is measured, see
// docs/capture-overhead.md). Each process's steps are replayed with that time taken out of its
// host timeline: launches move earlier, GPU work starts when its stream is free and its launch
// is done, a sync waits for the replayed GPU, and time the host spent waiting on anything else
// (a DataLoader, a lock) stays. The replayed steps give the step without the profiler, its GPU
// busy time, and the idle that remains, each replayed gap keeping the cause of the gap it came
// from (summarizeSteps). It does not model the GPU slowing down under a profiler (CUPTI's
// kernel records cost the GPU next to nothing). Ranks go together only as far as their
// collectives do: a collective's wait for the last rank keeps the share the late rank's own extra
// GPU work explains (ReplayInput::wait_kept); the rest is the hosts' uneven arrival and goes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

// Host time one event of each kind costs the program, in ns: the measured model.
const CaptureCosts& measuredCaptureCosts();

// Why the GPU idled in the gap an activity ended (summarizeSteps): the host's wait, and the part
// of the gap torch.compile spent compiling (of 255).
struct GapCause {
  int8_t wait = -1;  // a Wait, or -1: no gap classified
  uint8_t compile = 0;
};

struct ReplayInput {
  const model::Profile& profile;
  const std::vector<int64_t>& call_of;     // per activity, the API call that launched it (-1: none)
  const std::vector<GapCause>& gap_cause;  // per activity
  // Ranks replayed together: per activity, a collective's wait for the last rank to arrive (-1:
  // none; pairCollectives), and the share of those waits the replay keeps — what the late rank's
  // own extra GPU work explains (1: all). The rest is the ranks' hosts arriving unevenly, which a
  // profiler that slows them unevenly makes: without it they arrive together.
  const std::vector<int64_t>* comm_wait = nullptr;
  double wait_kept = 1;
};

// Fills out.step_summary.unprofiled: the capture's cost over the steady steps, and the steady
// steps replayed without it, with every cost multiplied by `scale`.
void estimateUnprofiled(const ReplayInput& in, const CaptureCosts& costs, double scale, Attribution& out);

// Of the waits in collectives, the share the late rank's own extra GPU work explains
// (ReplayInput::wait_kept).
double waitExplained(const Attribution& out);

// The steady steps without the profiler: estimateUnprofiled with the measured costs, or scaled
// so the replay takes as long as the step the script's own log gives; the capture's cost charged
// to each step.
void estimateWithoutProfiler(const ReplayInput& in, const Options& options, Attribution& out);

}  // namespace sightline::attribution
