// The regression gate: two runs' rank summaries (join/rank_summary.h) compared step by step and
// line by line, each change with a confidence interval from the per-step samples, the lines
// that explain the step's change, and thresholds checked with confidence. Pure: the CLI
// (server/cli/diff_command.cpp) reads the summaries and renders the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/join/rank_summary.h"

namespace sightline::features {

// How every interval is made: a percentile bootstrap of the difference of medians, resampling
// each run's per-step samples with replacement, from a fixed seed (the same inputs give the
// same interval).
inline constexpr int kBootstrapResamples = 2000;
inline constexpr double kConfidence = 0.95;
// Runs of more steps are resampled through an even subset of this many (diff stays well under
// a second on a summary of thousands of steps).
inline constexpr size_t kMaxResampledSteps = 500;
// Lines given an interval (the costliest over both sides); the rest are shown without one.
inline constexpr size_t kMaxIntervalLines = 256;
// A line synchronizes more often when it makes this many more synchronizing calls a step (one
// every other step).
inline constexpr double kSyncsAdded = 0.5;
// Fewer step samples than this on either side give no interval (and are never gated).
inline constexpr size_t kMinSamples = 3;

// A change of a median, ns per step: base and new medians, their difference and its interval.
struct MedianChange {
  double base_ns = 0, new_ns = 0;
  double delta_ns = 0;             // new - base
  double low_ns = 0, high_ns = 0;  // the interval of delta_ns
  size_t base_samples = 0, new_samples = 0;
  bool sampled = false;  // false: a total without per-step samples (no interval; never gated)
  // The change relative to the base median (0 when the base is 0).
  double relative() const { return base_ns > 0 ? delta_ns / base_ns : 0; }
  // Whether the interval holds no change.
  bool certain() const { return sampled && (low_ns > 0 || high_ns < 0); }
};

// A line of the script in either run, matched by its path's file name and its source text
// (lines moved by an edit keep their match), else by its number.
struct LineChange {
  enum class Kind { Both, New, Removed, Edited };  // Edited: its text changed in place (text: the new)
  Kind kind = Kind::Both;
  std::string path;                     // as the new run's profile records it (base's if removed)
  int32_t base_line = 0, new_line = 0;  // 0 where the run has no such line
  std::string text;                     // the source text, where a summary has it
  MedianChange change;                  // its GPU time per step
  // Synchronizing calls on the line per steady step (`.item()`, `.cpu()`, ...: the host waits
  // there for the GPU to drain), in the base runs (their mean) and the new run.
  double base_syncs = 0, new_syncs = 0;
  double base_sync_ns = 0, new_sync_ns = 0;  // the host's time blocked in them per step
  // The step grew past its spread while no line's GPU time explains half of it, and this line
  // synchronizes more often than before: the host waits here while the GPU drains, and the
  // GPU waits for the work the host then does. Such lines are listed first.
  bool sync_added = false;
  // Its costliest kernels in the first base run and in the new one (most first), and whether the
  // costliest changed: fp32 GEMMs for bf16 ones, a fused kernel for several.
  std::vector<std::string> base_kernels, new_kernels;
  bool kernels_changed() const {
    return !base_kernels.empty() && !new_kernels.empty() && base_kernels.front() != new_kernels.front();
  }
};

// The runs' memory peaks as sightline capture measured them: the caching allocator's
// max_memory_allocated on each rank's GPU by the end of the timed steps, before the profiler
// ran. Exact counts, not samples: no interval; a run's peak is its largest rank's.
struct MemoryChange {
  bool known = false;                              // every run has a measured peak
  int64_t base_min_bytes = 0, base_max_bytes = 0;  // over the base runs
  int64_t new_bytes = 0;
  int64_t deltaBytes() const { return new_bytes - base_max_bytes; }
  double relative() const {
    return base_max_bytes > 0 ? static_cast<double>(deltaBytes()) / static_cast<double>(base_max_bytes) : 0;
  }
};

// A threshold: `step:+5%`, `line:+1ms`, `line:+20%`, `memory:+10%`, `memory:+512MiB`.
struct GateRule {
  enum class Scope { Step, Line, Memory };
  Scope scope = Scope::Step;
  bool percent = false;
  double value = 0;  // percent (5 for +5%), ns (step, line) or bytes (memory)
  std::string text;  // as given
};

struct GateResult {
  GateRule rule;
  bool exceeded = false;  // the interval's lower end (memory: the new peak) lies past the threshold
  bool checked = true;    // false: the runs lack what the rule needs (a memory peak)
  // What the check stood on: the step, or the line that exceeded it most (else the largest).
  std::string subject;
  double lower = 0;  // the interval's lower end (memory: the change), in the rule's unit
};

// A part of the step (from the profiled steps): the GPU's work, its communication, or the GPU
// idle for one cause (attribution::Wait), per step.
struct PartChange {
  std::string part;  // "GPU work", "communication", or a wait: "input", "sync", ...
  MedianChange change;
  std::string path;  // the line it happens at, where one is known (the loop's wait for batches)
  int32_t line = 0;
  int32_t rank = -1;  // the rank it is of, in runs of several ranks where it is per rank; -1 all
};

struct RunDiff {
  std::string incomparable;  // why the runs cannot be compared; "" when they can
  size_t base_runs = 1;
  // What the step's samples are: "measured without the profiler" (sightline capture's timed
  // steps) or "profiled steps"; and why, when the measured ones could not be used.
  std::string step_basis, step_basis_note;
  // What else changed between the runs that the comparison includes: torch, its CUDA, the
  // driver ("torch 2.10.0 (base) and 2.11.0 (new)"); empty when the same or unknown.
  std::vector<std::string> version_changes;
  MedianChange step;
  // The step's samples the interval was drawn from: each base run's, and the new run's (ranks
  // one after another), in the order the runs took them.
  std::vector<std::vector<int64_t>> base_steps;
  std::vector<int64_t> new_steps;
  // The smallest change of the step the samples could tell from noise: the interval's half
  // width, relative to the base median.
  double detectable = 0;
  std::vector<PartChange> parts;  // the step's parts, largest change in its direction first
  std::vector<LineChange> lines;  // the lines that explain the step's change, most first
  size_t lines_total = 0;
  // Files matched by line number, not text: some run's summary has no text for their lines.
  std::vector<std::string> matched_by_number;
  MemoryChange memory;
  std::vector<GateResult> gate;
  bool failed() const {
    for (const auto& g : gate)
      if (g.exceeded) return true;
    return false;
  }
};

// The interval of the difference of medians of two samples (MedianChange::sampled true).
MedianChange changeOf(const std::vector<int64_t>& base, const std::vector<int64_t>& next);
// The same over runs: each side's samples by run. Where a side has several runs, each resample
// draws its runs again before their steps, so the interval holds the run-to-run spread too.
using SampleRuns = std::vector<std::vector<int64_t>>;
MedianChange changeOfRuns(const SampleRuns& base, const SampleRuns& next);

// Compares two runs (each: its ranks' summaries). Refuses (RunDiff::incomparable) runs of
// different GPUs, world sizes, profilers or scripts.
RunDiff diffRuns(const std::vector<join::RankSummary>& base, const std::vector<join::RankSummary>& next,
                 const std::vector<GateRule>& rules);
// Several base runs of the same script (the main branch's last runs): their spread from run to
// run enters every interval.
RunDiff diffRuns(const std::vector<std::vector<join::RankSummary>>& bases, const std::vector<join::RankSummary>& next,
                 const std::vector<GateRule>& rules);

// `step:+5%`, `line:+1ms` (ms, us or ns), `line:+20%`, `memory:+10%`, `memory:+512MiB` (B, KiB,
// MiB, GiB, KB, MB, GB); nullopt with `error` set otherwise.
std::optional<GateRule> parseGateRule(const std::string& text, std::string& error);

}  // namespace sightline::features
