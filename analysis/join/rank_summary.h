// What one rank contributes to a job's view (internal to analysis/join, read by
// features/job_view): its identity, steps, per-line costs per step and every collective with
// its order, on that rank's own clock. Small enough to write where a report was made and merge
// by the thousand: no profile rows, no source.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "analysis/join/profile_join.h"

namespace sightline::join {

struct SummaryStep {
  int64_t start_ns = 0, end_ns = 0;  // its wall on the GPU's side (Step::window_*), rank's clock
  attribution::StepKind kind = attribution::StepKind::Steady;
  int64_t gpu_ns = 0, busy_ns = 0, compute_ns = 0, copy_ns = 0, comm_ns = 0;
  std::array<int64_t, attribution::kWaitCount> wait_ns{};
  int64_t capture_ns = 0;  // host time the profiler's own events cost in it
  int64_t wallNs() const { return end_ns - start_ns; }
};

// A user line's GPU time on this rank: over its steady steps, and per step (every step of
// RankSummary::steps; empty for lines past the costliest kMaxStepLines).
struct SummaryLine {
  std::string path;  // as the profile records it
  int32_t line = 0;
  int64_t ns = 0, backward_ns = 0, comm_ns = 0;
  std::vector<int64_t> step_ns;
  std::string text;  // the line's source text where the report read the file (trimmed); "" unknown
  // Synchronizing calls made on the line by this rank over the steady steps, and the host time
  // blocked in them.
  int64_t syncs = 0, sync_ns = 0;
  // Its costliest kernels by name on this rank, over the steady steps (at most kMaxLineKernels,
  // most first): a diff says when a line's kernels changed.
  std::vector<std::string> kernels;
};

// The pass a collective serves: backward (launched by it, or in one of FSDP's backward ranges),
// forward (in FSDP's forward ranges), other (launched from a line outside backward: DDP's
// forward broadcasts, a loss reduced for logging) or unknown (no line, no FSDP range).
enum class CollectivePass : int8_t { Unknown = -2, Other = -1, Forward = 0, Backward = 1 };
const char* collectivePassName(CollectivePass pass);  // "unknown", "other", "forward", "backward"

// A communication kernel: (step, name, nth) pairs it with the same collective on other ranks.
struct SummaryCollective {
  int32_t step = -1;  // index into RankSummary::steps; -1 outside every step
  uint32_t nth = 0;   // its name's occurrence within the step (or outside steps), from 0
  uint32_t name = 0;  // index into RankSummary::names: the kernel's name
  int64_t start_ns = 0, end_ns = 0;
  int64_t exposed_ns = 0;  // while no other kernel ran on its GPU
  int32_t line = -1;       // index into RankSummary::lines of the line that launched it; -1 none
  CollectivePass pass = CollectivePass::Unknown;
  int32_t module = -1;  // index into names: the FSDP module it serves ("layers.0"); -1 none
  int64_t durationNs() const { return end_ns - start_ns; }
};

struct RankSummary {
  // Who: the job's rank where known (and where that came from), the machine, the GPU.
  int32_t rank = -1;
  int32_t world_size = -1;
  std::string rank_source;
  std::string host;
  std::string gpu_uuid;
  std::string gpu_name;
  std::vector<uint32_t> devices;
  uint32_t pid = 0;
  std::string process;
  std::string report;  // the report's file name it came from
  std::string format;  // "nsys-sqlite", "kineto-json"
  std::string steps_source;
  // Totals over the whole report, as RankInfo.
  int64_t gpu_ns = 0, busy_ns = 0, comm_ns = 0, comm_exposed_ns = 0;
  uint32_t launches = 0, lost_launches = 0;
  std::vector<std::string> names;
  std::vector<SummaryStep> steps;              // by time
  std::vector<SummaryLine> lines;              // costliest first
  std::vector<SummaryCollective> collectives;  // by start
  std::vector<std::string> warnings;           // the report's own
  // The run as sightline capture measured it (its steps file), where it did: this rank's timed
  // steps (no profiler recording), the window's profiler, the command it ran.
  std::vector<int64_t> measured_ns;
  std::vector<int64_t> measured_input_ns;  // per measured step: the loop's wait for its next batch
  // The caching allocator's peaks on the rank's GPU by the end of the measured steps (no
  // profiler had run); -1 unknown.
  int64_t measured_peak_allocated_bytes = -1, measured_peak_reserved_bytes = -1;
  std::string input_path;  // the loop's line that asks for batches (as run); "" unknown
  int32_t input_line = 0;
  std::string profiler;      // "nsys", "torch", "none"; "" unknown
  std::string tool_version;  // the profiler's own version, as the profile records it
  // What the profiler recorded beyond kernels (model::ProfileInfo::capabilities of
  // kRecordingOptions): the options that set its cost; empty when unknown (older summaries).
  std::vector<std::string> profiler_options;
  // torch's version, its CUDA's and the driver's, where sightline capture's hook read them.
  std::string torch_version, cuda_version, cuda_driver;
  std::vector<std::string> command;
};

inline constexpr size_t kMaxStepLines = 64;

// Whether step `k` of `s` counts in the rank's median step: a steady one, and not the last of
// more than 3 (the loop's last, cut short where it ends). The job view and `diff` read it.
inline bool countsInMedian(const RankSummary& s, size_t k) {
  return k < s.steps.size() && s.steps[k].kind == attribution::StepKind::Steady &&
         (k + 1 < s.steps.size() || s.steps.size() <= 3);
}
inline constexpr size_t kMaxLineKernels = 3;
inline constexpr size_t kMaxKernelName = 160;  // bytes of a kernel's name a summary keeps
// The capabilities that are options of the profiler (each changes what a profiled step costs),
// not facts of the script (CUDA graphs, autograd ops).
inline constexpr std::array<const char*, 5> kRecordingOptions = {"python-backtraces", "autograd-nvtx",
                                                                 "cuda-memory-usage", "call-stacks", "memory-history"};
// A report of more processes with GPU work than this is no job of ranks (an export of a service,
// a crafted file): summarizeRanks gives none.
inline constexpr size_t kMaxSummarizedRanks = 4096;

// One summary per rank (process with GPU work) of a joined profile, ranks in the attribution's
// order (none past kMaxSummarizedRanks). `report` names the file it was read from.
std::vector<RankSummary> summarizeRanks(const ProfileJoin& join, const std::string& report);

// The FSDP module a range's text names: "FSDP::all_gather (layers.0), op_id = 12" -> "layers.0";
// the root module's own collectives ("FSDP::all_gather") -> "(root)"; "" for another range.
std::string fsdpModuleOf(std::string_view range_text);

}  // namespace sightline::join
