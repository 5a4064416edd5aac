// What the capture hook wrote (one part per rank, one status per Python process) read back and
// merged into NAME.steps.json (docs/capture.md has the schema), and the messages for a run that
// gave no window: no step seen (no optimizer step, too few backward() calls), or fewer steps
// than the window needs. Reads the private folder sightline made; writes nothing (the verb
// writes the file).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sightline::server::capture {

// A loop that steps no optimizer is stepped by backward() once this many calls have passed
// with no optimizer step (the hook's _BACKWARD_WAIT): step N ends at call N + this.
inline constexpr int64_t kBackwardWait = 32;

struct CaptureWindow {
  int warmup = 5;                 // W: steps before the clock starts
  int timed = 20;                 // K: steps timed without a profiler
  int profiled = 5;               // M: steps timed under the profiler (0 with --profiler none)
  std::string profiler = "nsys";  // "nsys", "torch" or "none"
  int stepsNeeded() const { return warmup + timed + profiled; }
};

struct StepTime {
  int64_t step = 0;     // the step (1-based, as the hook counts them) that ends the interval
  int64_t gpu_ns = 0;   // between the CUDA events at the ends of step-1 and step
  int64_t host_ns = 0;  // the same on the host's perf_counter clock
  // Timed steps: the host time the loop waited in DataLoader iterators' __next__ within the
  // interval (0..host_ns); -1 when the rank's loop asked no DataLoader (and in profiled steps).
  int64_t input_ns = -1;
};

struct RankPart {
  int64_t rank = 0, local_rank = 0, world_size = 1;
  std::string host;
  int64_t pid = 0;
  int64_t device = -1;  // CUDA device index; -1 when the process had no CUDA
  // How a step was told: "optimizer" (each step of the first optimizer) or "backward" (each
  // backward(), in a loop that stepped no optimizer).
  std::string step_by = "optimizer";
  // The user's line that asks the DataLoader for batches (the loop's), as the frame names it;
  // "" and 0 when the loop asked none.
  std::string input_path;
  int64_t input_line = 0;
  std::vector<StepTime> timed, profiled;
  int64_t hook_ns = 0;  // mean host time inside the hook per timed step
  std::string trace;    // the PyTorch profiler trace it wrote (a file name), or ""
  // The caching allocator's peaks on its GPU at the end of the timed steps (no profiler had
  // run yet); -1 where the hook read none.
  int64_t peak_allocated_bytes = -1, peak_reserved_bytes = -1;
  // torch's version, its CUDA's and the driver's CUDA version ("" where the hook read none).
  std::string torch_version, cuda_version, cuda_driver;
};

// What one Python process of the command saw, written at its exit.
struct ProcessStatus {
  int64_t pid = 0;
  int64_t rank = -1;   // RANK, or -1 outside torchrun
  bool torch = false;  // it imported torch
  bool hook = false;   // the optimizer step hook was registered
  std::optional<bool> cuda;
  int64_t steps = 0;      // optimizer steps of its first optimizer
  int64_t backwards = 0;  // backward() calls of its main thread, before an optimizer stepped
  int64_t optimizers = 0;
  bool written = false;  // it wrote its rank part
  std::string error;
  std::vector<std::string> argv;  // its first arguments, to name it
};

struct CaptureParts {
  std::vector<RankPart> ranks;  // sorted by rank
  std::vector<ProcessStatus> statuses;
  // Unreadable parts, parts past a bound, values out of range, ranks written twice: the first
  // kMaxPartWarnings, and how many more there were.
  std::vector<std::string> warnings;
  size_t warnings_left_out = 0;
};

// What the parts may cost. A part is written by code running in the user's processes (or by
// anything else that writes into the private folder): input like any other, never trusted.
struct PartLimits {
  size_t base_bytes = size_t{64} << 10;  // a part's size: this much, plus
  size_t bytes_per_step = 256;           // this much per step of the window (W + K + M)
  size_t parts = 16384;                  // rank and status parts read, at most
  uint64_t total_bytes = uint64_t{512} << 20;
};
inline constexpr size_t kMaxPartWarnings = 20;

// The ranges a part's values must lie in; a part with a value outside them is refused whole.
inline constexpr int64_t kMaxRanks = 65536;                   // rank, local rank < this; world size <= it
inline constexpr int64_t kMaxPartStepNs = 3'600'000'000'000;  // an hour: a step's time, the hook's
inline constexpr int64_t kMaxDevice = 4095;
inline constexpr size_t kMaxPartText = 4096;  // host, trace name, input path, error, each argument (bytes)
inline constexpr int64_t kMaxPartMemoryBytes = int64_t{1} << 50;  // a GPU's bytes (a petabyte)
inline constexpr int64_t kMaxSourceLine = 10'000'000;

// One part file: its name in the folder and its bytes.
struct PartFile {
  std::string name;
  std::string bytes;
};

// Reads rank.*.json and status.*.json of `folder` (regular files only, name order) within
// `limits`. Anything malformed, past a bound or out of range is a warning.
CaptureParts readCaptureParts(const std::string& folder, const CaptureWindow& window, const PartLimits& limits = {});
// The same from files already read (the fuzz target's way in): each checked as readCaptureParts
// checks the files it reads.
CaptureParts parseCaptureParts(const std::vector<PartFile>& files, const CaptureWindow& window,
                               const PartLimits& limits = {});

// The steps document (schema "sightline_steps": 1), its keys in the schema's order.
// `profiles`: file names beside it.
nlohmann::ordered_json stepsDocument(const CaptureWindow& window, const std::vector<std::string>& command,
                                     const std::vector<std::string>& profiles, const std::vector<RankPart>& ranks);
// The document as text: one line per step, so that a diff or a reader's eye finds them.
std::string formatStepsDocument(const nlohmann::ordered_json& doc);

// Why no window came out of the run, in words, with what to do (several lines, no prefix):
// no Python process ran the hook, torch was never imported, no optimizer step was seen (and
// too few backward() calls to step by them), or the run ended after N steps (and the
// --warmup/--timed/--steps values that fit N).
std::string explainMissingWindow(const CaptureWindow& window, const std::vector<ProcessStatus>& statuses);

// The median of the timed steps' GPU time (host time where there is no GPU time), in ns.
int64_t medianStepNs(const std::vector<StepTime>& steps);
// The median of the steps' waits for data, in ns; -1 when no step has one.
int64_t medianInputNs(const std::vector<StepTime>& steps);

// One line per rank (the first 8; the rest counted): the measured step (and how steps were
// told when not by an optimizer), the loop's wait for data, the profiled step, the hook's
// cost; "sightline capture: " before each.
void writeRanksSummary(const CaptureWindow& window, const std::vector<RankPart>& ranks, std::ostream& out);

}  // namespace sightline::server::capture
