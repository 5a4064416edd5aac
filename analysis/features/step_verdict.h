// The step verdict: for the steady step, its wall time, the GPU's busy share and where the
// rest goes (host launch overhead, host-device syncs, the input pipeline, other host work),
// each with its lines, what bounds the step, and the changes that would help most, each with
// the number from the profile that backs it. HTA's temporal and idle-time breakdown, on lines.
// Numbers only: text is made at the edge.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/join/file_costs.h"

namespace sightline::features {

enum class Bound : uint8_t {
  Gpu,     // the GPU is busy most of the step
  Launch,  // the host cannot launch kernels as fast as the GPU runs them
  Sync,    // the host waits for the GPU each step (`.item()`, synchronize)
  Input,   // the loop waits for data
  Host,    // other host work between steps (logging, sleeps, Python)
  Comm,    // NCCL communication not hidden behind compute (a slower rank, no overlap)
};
const char* boundName(Bound b);

struct VerdictCause {
  Bound kind = Bound::Gpu;
  double ns = 0;  // per step: GPU idle for it (Sync: the host's blocked time; Comm: exposed NCCL time)
  std::vector<join::PlacedLine> lines;  // its lines, costliest first (ns: totals over the steady steps)
};

// A change that would help, backed by one figure of the profile.
enum class Change : uint8_t {
  CompileOrGraphs,  // torch.compile / CUDA graphs: kernels per step, mean kernel time
  DropSync,         // keep values on the GPU, sync less often: the blocked time
  LoaderWorkers,    // DataLoader(num_workers, pin_memory, persistent_workers): the wait
  MoveHostWork,     // move host work out of the step or overlap it: the idle time
  Tf32,             // TF32 / autocast for fp32 matmuls: their time per step
  HostPace,         // long kernels, yet the GPU runs dry between them: the host's time per launch
  Overlap,          // exposed communication: overlap it, or find the slower rank
};

struct VerdictChange {
  Change change = Change::CompileOrGraphs;
  double ns = 0;  // per step: the time at stake
  std::optional<join::PlacedLine> line;
};

struct StepVerdict {
  int steady = 0, warmup = 0, outliers = 0, all_steps = 0;
  double wall_ns = 0, wall_min_ns = 0, wall_max_ns = 0;  // steady step: median, min, max
  double busy_ns = 0, busy_share = 0;                    // GPU busy in a steady step (median)
  Bound bound = Bound::Gpu;
  std::vector<VerdictCause> causes;                                 // largest first
  double kernels = 0;                                               // per step
  double mean_kernel_ns = 0, mean_queue_ns = 0, launch_api_ns = 0;  // launch_api_ns: per step
  double sync_ns = 0;                                               // host blocked per step
  double fp32_matmul_ns = 0;                                        // per step
  double comm_exposed_ns = 0;                                       // per step
  int ranks = 0;                                                    // processes in the profile
  std::vector<VerdictChange> changes;                               // two or three, most helpful first
  int64_t oneoff_gpu_ns = 0, oneoff_idle_ns = 0;
  std::vector<join::StepStory::OneOffStep> oneoff_steps;
  std::vector<join::PlacedLine> oneoff_lines;
  bool all_counted = false;  // every step counted as steady (setting, or a capture range)
};

// What a cause of idle time is called ("host launch overhead").
std::string causeName(Bound b);
// A change's stable name for JSON ("torch-compile", "fewer-syncs", ...).
const char* changeName(Change c);
// A change that would help, as a sentence with its figure (for diagnostics, which carry text).
std::string changeText(const VerdictChange& c, const StepVerdict& v);

// The verdict of a profile's steady steps, or nullopt when it knows no steps.
std::optional<StepVerdict> stepVerdict(const join::StepStory* story);

}  // namespace sightline::features
