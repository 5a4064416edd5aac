// Diagnostics with a profile: the static findings gain the measured cost of their line
// ("`.item()` ... measured: blocks the host 0.93 ms/step here ..."; severity at least warning),
// and rules that only a profile can raise are added:
//   pageable-memcpy  host<->device copies from/to pageable memory on a line
//   sync-api         host time blocked in cudaDeviceSynchronize/StreamSynchronize/EventSynchronize
//   launch-bound     many tiny kernels per step launched from a line
//   gpu-idle         GPU idle gaps (>= 1 ms each by default) while the host runs a line
//   rank-imbalance   the slowest rank spends far more on a line than the median rank
//   exposed-communication  NCCL time launched from a line with no compute beside it
//   graph-break      torch.compile broke a compiled function's graph on a line (TORCH_TRACE)
//   recompiles       torch.compile recompiled a function (TORCH_TRACE), on its `def` line
// Profile-only rules stay silent on lines whose launches lost their GPU records.
#pragma once

#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/step_verdict.h"

namespace sightline::features {

struct ProfileRuleThresholds {
  uint64_t pageable_min_bytes = uint64_t{64} * 1024;  // per step
  int64_t sync_api_min_ns = 100'000;                  // per step
  double launch_bound_min_kernels = 50;               // per step
  int64_t launch_bound_max_mean_ns = 10'000;
  int64_t gpu_idle_min_ns = 500'000;  // per step, summed over the line's gaps
  // The shortest GPU idle gap counted (attribution::Options::idle_gap_ns; named in messages).
  int64_t gpu_idle_gap_ns = 1'000'000;
  double rank_imbalance_min_share = 0.2;    // slowest rank above the median by this share
  int64_t rank_imbalance_min_ns = 500'000;  // per step, slowest minus median
  int64_t exposed_comm_min_ns = 1'000'000;  // per step
};

// `findings` (from computeDiagnostics) with evidence added, plus the profile-only findings;
// source order, suppressions honoured. `verdict`: the load's step verdict (null: none), told on
// the training loop as every other surface tells it.
std::vector<Finding> confirmWithProfile(std::vector<Finding> findings, const source::SourceFile& file,
                                        const source::SourceIndex& index, const FileCosts& costs,
                                        const model::Profile& profile, const StepVerdict* verdict,
                                        const RuleConfig& config, const ProfileRuleThresholds& thresholds = {});

}  // namespace sightline::features
