// Times no capture gives, left out of a profile before anything sums them: spans that end
// before they start, GPU work longer than an hour, calls and ranges longer than a day, and
// anything more than a day from the middle of the capture (an end at INT64_MAX once gave
// "GPU time 9223372036853 ms"; crafted starts after ends, a negative total). A warning counts
// what was left out.
#pragma once

#include <cstdint>

#include "analysis/model/profile.h"

namespace sightline::ingest {

inline constexpr int64_t kMaxGpuActivityNs = 3600LL * 1000 * 1000 * 1000;   // an hour
inline constexpr int64_t kMaxCaptureSpanNs = 86400LL * 1000 * 1000 * 1000;  // a day

// Removes them (the vectors keep their order) and adds the warning; returns how many.
size_t dropImplausibleTimes(model::Profile& profile);

}  // namespace sightline::ingest
