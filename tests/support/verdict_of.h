// The step verdict of a profile's story, kept alive for the test: what a load computes once
// (server/workspace/profiles.h LoadedProfile::verdict) and lends to the features that tell it.
#pragma once

#include <deque>

#include "analysis/features/step_verdict.h"

namespace sightline::testing {

inline const features::StepVerdict* verdictOf(const join::FileCosts& costs) {
  static std::deque<features::StepVerdict> kept;
  auto v = features::stepVerdict(costs.story.get());
  if (!v) return nullptr;
  kept.push_back(std::move(*v));
  return &kept.back();
}

}  // namespace sightline::testing
