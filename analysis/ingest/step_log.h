// A training script's own log, as the step time it reports: the run without a profiler that a
// capture is compared with. Reads the lines that name an iteration and a time
// ("iter 39: loss 4.17, time 17.19ms", "Epoch: [0][ 10/5005]\tTime  0.220 ( 0.250)",
// "step 12 | 123.4 ms/step", "step_time=0.123s"), never the loss or other numbers. Pure: it
// parses text a caller read; it opens nothing.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sightline::ingest {

struct StepLog {
  std::vector<int64_t> steps_ns;  // each matched line's step time, in order
  int64_t median_ns = 0;          // over the steps after the first tenth (warm-up), 0: none
};

StepLog parseStepLog(std::string_view text);

}  // namespace sightline::ingest
