// Diagnostics with a profile: the static findings gain the measured cost of their line
// ("`.item()` ... measured: blocks the host 0.93 ms/step here ..."; severity at least warning),
// and rules that only a profile can raise are added:
//   pageable-memcpy  host<->device copies from/to pageable memory on a line
//   sync-api         host time blocked in cudaDeviceSynchronize/StreamSynchronize/EventSynchronize
//   launch-bound     many tiny kernels per step launched from a line
//   gpu-idle         GPU idle gaps (>= 1 ms each by default) while the host runs a line
#pragma once

#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_view.h"

namespace sightline::features {

struct ProfileRuleThresholds {
  uint64_t pageable_min_bytes = uint64_t{64} * 1024;  // per step
  int64_t sync_api_min_ns = 100'000;                  // per step
  double launch_bound_min_kernels = 50;               // per step
  int64_t launch_bound_max_mean_ns = 10'000;
  int64_t gpu_idle_min_ns = 500'000;  // per step, summed over the line's gaps
  // The shortest GPU idle gap counted (attribution::Options::idle_gap_ns; named in messages).
  int64_t gpu_idle_gap_ns = 1'000'000;
};

// `findings` (from computeDiagnostics) with evidence added, plus the profile-only findings;
// source order, suppressions honoured.
std::vector<Finding> confirmWithProfile(std::vector<Finding> findings, const source::SourceFile& file,
                                        const source::SourceIndex& index, const FileCosts& costs,
                                        const model::Profile& profile, const RuleConfig& config,
                                        const ProfileRuleThresholds& thresholds = {});

}  // namespace sightline::features
