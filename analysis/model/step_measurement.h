// The step of a run without any profiler, measured: `sightline capture`'s steps file (each
// rank's steps timed with CUDA events before the profiler started) or the script's own log.
// The verdict's headline rests on it when one is known. Filled by the server (which reads the
// files), carried by the join into the step story; nothing here is modeled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sightline::model {

struct StepMeasurement {
  enum class Source : uint8_t { Measured, StepLog };
  Source source = Source::Measured;
  int64_t median_ns = 0;           // the step: median of the steps measured (every rank's)
  int64_t min_ns = 0, max_ns = 0;  // their range
  int64_t steps = 0;               // steps it stands on (a log: its lines times the steps each stands for)
  int ranks = 1;                   // ranks measured
  std::string from;                // the file it came from (its name)
  // A log: what was read ("`ms/batch` means"), the lines used and those set aside (epoch totals,
  // evaluation), and whether a line is the mean of several steps or of the whole run.
  std::string log_format;
  int log_lines = 0, log_set_aside = 0;
  bool averaged = false, whole_run = false;
  std::vector<int64_t> rank_median_ns;  // measured: each rank's median step, by rank
  // sightline capture's steps file (empty or unknown from a log):
  // How a step was told: "optimizer" (each optimizer step) or "backward" (each backward(), a loop
  // with no optimizer); "" unknown.
  std::string step_by;
  // The profiler of the capture's window ("nsys", "torch", "none"; "" unknown). Under nsys the
  // timed steps ran with nsys loaded, outside its capture range: it records nothing then.
  std::string profiler;
  // The time the loop waited for its next batch (a DataLoader iterator's __next__) per timed step:
  // the median over the timed steps of every rank; -1 where the loop asked no DataLoader (or a log).
  int64_t input_ns = -1;
  std::string input_path;  // the user's line that asks the DataLoader for batches (the loop's), as run
  int32_t input_line = 0;  // 1-based; 0 unknown
  // Each measured process: its pid, its rank (-1 unknown) and host, as the hook saw them.
  struct Process {
    uint32_t pid = 0;
    int32_t rank = -1;
    std::string host;
    std::vector<int64_t> timed_ns;  // its timed steps, each as the steps file has it, in order
    // Per timed step, the loop's wait for its next batch; empty where a step has none.
    std::vector<int64_t> timed_input_ns;
    // The caching allocator's peaks on its GPU by the end of its timed steps (before the
    // profiler ran); -1 unknown.
    int64_t peak_allocated_bytes = -1, peak_reserved_bytes = -1;
    std::string torch_version, cuda_version, cuda_driver;  // as the hook read them; "" unknown
  };
  std::vector<std::string> command;  // the command sightline capture ran (untrusted text)
  std::vector<Process> processes;
};

}  // namespace sightline::model
