// What the capture hook wrote (one part per rank, one status per Python process) read back and
// merged into NAME.steps.json (docs/capture.md has the schema), and the messages for a run that
// gave no window: no optimizer step seen, or fewer steps than the window needs. Reads the
// private folder sightline made; writes nothing (the verb writes the file).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sightline::server::capture {

struct CaptureWindow {
  int warmup = 5;                 // W: optimizer steps before the clock starts
  int timed = 20;                 // K: steps timed without a profiler
  int profiled = 5;               // M: steps timed under the profiler (0 with --profiler none)
  std::string profiler = "nsys";  // "nsys", "torch" or "none"
  int stepsNeeded() const { return warmup + timed + profiled; }
};

struct StepTime {
  int64_t step = 0;     // the optimizer step (1-based) that ends the interval
  int64_t gpu_ns = 0;   // between the CUDA events at the ends of step-1 and step
  int64_t host_ns = 0;  // the same on the host's perf_counter clock
};

struct RankPart {
  int64_t rank = 0, local_rank = 0, world_size = 1;
  std::string host;
  int64_t pid = 0;
  int64_t device = -1;  // CUDA device index; -1 when the process had no CUDA
  std::vector<StepTime> timed, profiled;
  int64_t hook_ns = 0;  // mean host time inside the hook per timed step
  std::string trace;    // the PyTorch profiler trace it wrote (a file name), or ""
};

// What one Python process of the command saw, written at its exit.
struct ProcessStatus {
  int64_t pid = 0;
  int64_t rank = -1;   // RANK, or -1 outside torchrun
  bool torch = false;  // it imported torch
  bool hook = false;   // the optimizer step hook was registered
  std::optional<bool> cuda;
  int64_t steps = 0;  // optimizer steps of its first optimizer
  int64_t optimizers = 0;
  bool written = false;  // it wrote its rank part
  std::string error;
  std::vector<std::string> argv;  // its first arguments, to name it
};

struct CaptureParts {
  std::vector<RankPart> ranks;  // sorted by rank
  std::vector<ProcessStatus> statuses;
  std::vector<std::string> warnings;  // unreadable parts, ranks written twice
};

// Reads rank.*.json and status.*.json of `folder`. Anything malformed is a warning.
CaptureParts readCaptureParts(const std::string& folder);

// The steps document (schema "sightline_steps": 1), its keys in the schema's order.
// `profiles`: file names beside it.
nlohmann::ordered_json stepsDocument(const CaptureWindow& window, const std::vector<std::string>& command,
                                     const std::vector<std::string>& profiles, const std::vector<RankPart>& ranks);
// The document as text: one line per step, so that a diff or a reader's eye finds them.
std::string formatStepsDocument(const nlohmann::ordered_json& doc);

// Why no window came out of the run, in words, with what to do (several lines, no prefix):
// no Python process ran the hook, torch was never imported, no optimizer step was seen, or the
// run ended after N steps (and the --warmup/--timed/--steps values that fit N).
std::string explainMissingWindow(const CaptureWindow& window, const std::vector<ProcessStatus>& statuses);

// The median of the timed steps' GPU time (host time where there is no GPU time), in ns.
int64_t medianStepNs(const std::vector<StepTime>& steps);

}  // namespace sightline::server::capture
