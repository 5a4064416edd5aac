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
// which are set aside and counted. The log may be UTF-8 (a byte-order mark skipped) or UTF-16,
// little- or big-endian, with or without a byte-order mark (what PowerShell's `>` writes),
// decided on its first four bytes. Pure: it parses bytes a caller read, whole or piece by piece
// (StepLogReader: a log of gigabytes in a few megabytes); it opens nothing.
#pragma once

#include <cstdint>
#include <memory>
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

// Bounds on what a log can cost: lines longer than this are not a training log's; a family of
// lines keeps its first kMaxStepLogLines readings; a counter has at most 12 digits and a line
// stands for at most kMaxStepsPerLine steps (so no sum of steps overflows).
inline constexpr size_t kMaxStepLogLineBytes = 4096;
inline constexpr size_t kMaxStepLogLines = 1'000'000;
inline constexpr int64_t kMaxStepsPerLine = 1'000'000'000;

struct StepLog {
  StepLogKind kind = StepLogKind::None;
  // what was read: "`time` per step", "`ms/batch` means", ...; a log in UTF-16 says so:
  // "`ms/batch` means (UTF-16LE)"
  std::string format;
  std::string encoding = "UTF-8";  // "UTF-8", "UTF-16LE" or "UTF-16BE"
  std::vector<int64_t> steps_ns;   // each line used, in order (ns per step)
  std::vector<int64_t> weights;    // the steps each of those lines stands for
  int64_t median_ns = 0;           // over the lines after the warm-up (weighted by steps); 0: none
  int64_t min_ns = 0, max_ns = 0;
  int lines = 0;           // lines the median stands on
  int64_t steps = 0;       // steps they stand for
  int warmup_lines = 0;    // first lines left out as warm-up
  int set_aside = 0;       // lines with a time that are not a training step's (epoch totals, evaluation)
  std::string first_line;  // the first line used, as written (for the reader to check)
};

// The whole log at once.
StepLog parseStepLog(std::string_view text);

// The log piece by piece, cut anywhere (inside a line, a UTF-8 or UTF-16 character, the first
// four bytes): the same StepLog as the whole, holding one line and the readings kept.
class StepLogReader {
 public:
  StepLogReader();
  ~StepLogReader();
  StepLogReader(const StepLogReader&) = delete;
  StepLogReader& operator=(const StepLogReader&) = delete;
  void feed(std::string_view bytes);
  // The log read so far, as if it ended here.
  StepLog finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// "`ms/batch` means", "per-step `time`" ...: for messages.
const char* stepLogKindName(StepLogKind k);

}  // namespace sightline::ingest
