// A training script's own log, as the step time it reports: the run without a profiler that a
// capture is compared with. Reads the lines common trainers print, as they print them:
//   per step:  nanoGPT `iter 39: loss 4.17, time 17.19ms`, the ImageNet example
//              `Epoch: [0][ 10/5005]\tTime  0.220 ( 0.250)`, `step 12 | 123.4 ms/step`,
//              `step_time=0.123s`;
//   averages:  pytorch/examples' `| epoch 1 | 200/ 2983 batches | ... | ms/batch 45.03 |` (the mean
//              of the batches since the last such line), tqdm bars (`450/1000 [00:30<00:36,
//              15.00it/s]`: Lightning, Hugging Face), Hugging Face Trainer's `train_steps_per_second`
//              (the whole run), torchtitan's `tps` with the batch and sequence length it logs;
// and never the loss, an evaluation's lines or an epoch's total (`| end of epoch 1 | time: 3.76s`),
// which are set aside and counted. Pure: it parses text a caller read; it opens nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::ingest {

enum class StepLogKind : uint8_t {
  None,
  PerStep,     // each line times one step
  Averaged,    // each line is the mean of the steps since the last one (ms/batch, tqdm)
  WholeRun,    // one figure over the whole run, warm-up and evaluation included (Trainer)
  Throughput,  // tokens per second with the tokens of a step (torchtitan)
};

struct StepLog {
  StepLogKind kind = StepLogKind::None;
  std::string format;             // what was read: "`time` per step", "`ms/batch` means", ...
  std::vector<int64_t> steps_ns;  // each line used, in order (ns per step)
  std::vector<int64_t> weights;   // the steps each of those lines stands for
  int64_t median_ns = 0;          // over the lines after the warm-up (weighted by steps); 0: none
  int64_t min_ns = 0, max_ns = 0;
  int lines = 0;           // lines the median stands on
  int64_t steps = 0;       // steps they stand for
  int warmup_lines = 0;    // first lines left out as warm-up
  int set_aside = 0;       // lines with a time that are not a training step's (epoch totals, evaluation)
  std::string first_line;  // the first line used, as written (for the reader to check)
};

StepLog parseStepLog(std::string_view text);

// "`ms/batch` means", "per-step `time`" ...: for messages.
const char* stepLogKindName(StepLogKind k);

}  // namespace sightline::ingest
