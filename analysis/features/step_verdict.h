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
#include "analysis/join/loader_settings.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

enum class Bound : uint8_t {
  Gpu,      // the GPU is busy most of the step
  Launch,   // the host cannot launch kernels as fast as the GPU runs them
  Sync,     // the host waits for the GPU each step (`.item()`, synchronize)
  Input,    // the loop waits for data
  Host,     // other host work between steps (logging, sleeps, Python)
  Comm,     // NCCL communication moving data, not hidden behind compute
  Ranks,    // ranks waiting in collectives for the last rank to arrive (paired across ranks)
  Compile,  // torch.compile compiling (recompiles) inside the steps
  Unknown,  // the GPU idles, but the records that would say why were lost
};
const char* boundName(Bound b);

struct VerdictCause {
  Bound kind = Bound::Gpu;
  double ns = 0;  // per step: GPU idle for it (Sync: the host's blocked time; Comm: exposed NCCL time)
  std::vector<join::PlacedLine> lines;  // its lines, costliest first (ns: totals over the steady steps)
  // Per step as captured: what the step bars draw for it (their mean over the steady steps, lines
  // whose launches lost their records left out). `ns` differs only where the step was measured
  // (or the profiler's own cost replayed) and the causes were fitted to it.
  double captured_ns = 0;
  // Measured without the profiler in the same run (sightline capture timed the loop's wait for
  // data): its figure is the measurement's, never fitted to what the capture showed.
  bool measured = false;
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
  CudaGraphs,       // compiled already (Inductor kernels), no graph replays: mode="reduce-overhead"
  Recompiles,       // torch.compile recompiles inside the steps: why, and how to stop them
  BalanceRanks,     // ranks wait for each other in collectives: the late rank and its line, or jitter
  OutsideGraphs,    // CUDA graphs replay already: the launches left outside them, by line
};

struct VerdictChange {
  Change change = Change::CompileOrGraphs;
  double ns = 0;  // per step: the time at stake
  std::optional<join::PlacedLine> line;
};

// What a file's DataLoader calls already ask for (join/loader_settings.h): the story carries the
// training script's, read once per load.
using join::LoaderSettings;
using join::loaderSettings;

// The profiler's own cost on the host (attribution/capture_overhead.h) and the step without it.
struct CaptureCost {
  bool estimated = false;  // the capture recorded what it costs and its steps were replayed
  // The verdict's bound, causes and changes are the estimate's: the capture changed the step by
  // a tenth or more. Then nothing is advised for time the profiler itself added.
  bool applied = false;
  double overhead_ns = 0;                                        // per step: host time the capture added
  std::vector<std::pair<model::CaptureEvent, double>> by_event;  // per step, largest first
  double light_overhead_ns = 0;  // per step: what a capture tracing only CUDA calls would add
  bool light = false;            // the capture traced nothing else (no stacks, ranges or trace ops)
  bool kineto = false;           // a PyTorch profiler trace
  double wall_ns = 0, wall_min_ns = 0, wall_max_ns = 0;  // the step without the profiler (median, range)
  double busy_share = 0;
  bool calibrated = false;  // the costs were scaled to the script's own step log
  double logged_step_ns = 0, scale = 1;
  Bound captured_bound = Bound::Gpu;  // what the captured step looks bound by
  bool capture_range = false;         // the capture was limited to a cudaProfilerApi range
};

// Where the step without the profiler comes from: a measurement of the same run (sightline
// capture's steps timed before the profiler started), the script's own log, a light capture
// loaded with --timing, the model of the capture's cost, or nothing.
enum class StepSource : uint8_t { Measured, StepLog, LightCapture, Model, None };
const char* stepSourceName(StepSource s);  // "measured", "step-log", "light-capture", "model", "none"

// Why the step without the profiler is given as a range only.
enum class NoPoint : uint8_t {
  None,            // a point is given
  Unvalidated,     // the model has not been shown to hold for this capture's options
  LostRecords,     // the capture lost GPU records in its steps
  MemoryTracking,  // profile_memory / --cuda-memory-usage: costs never modeled
  NoModel,         // the capture recorded nothing of its own cost
};

// The step without the profiler, told only as far as it is known: a point where it was measured
// (or where the range is so narrow that any point in it is within 30% of the truth), always a
// range that surely holds it, and a bound only where it holds over the whole range.
struct UnprofiledStep {
  StepSource source = StepSource::None;
  std::optional<double> wall_ns;  // the step (nullopt: the range alone)
  double lo_ns = 0, hi_ns = 0;    // measured: the steps' spread; else the GPU's own work .. the captured step
  double compile_ns = 0;  // of lo_ns: GPU idle while torch.compile compiled (the compiler's, not the profiler's)
  double busy_share = 0;  // the GPU's work over wall_ns (0 without a point)
  // False where the capture's GPU work per step is more than the point (kernels slowed beside
  // collectives that waited for a rank the profiler made late): how busy the GPU is without the
  // profiler is then not known from it, and busy_share is not told.
  bool busy_known = true;
  std::optional<Bound> bound;  // nullopt: cannot tell from this capture
  int64_t steps = 0;           // measured steps (or a log's) the point stands on
  int ranks = 0;               // ranks measured
  NoPoint no_point = NoPoint::None;
  double added_ns = 0;      // per step: what the capture added (the captured step less the point; 0 without one)
  double added_max_ns = 0;  // at most that much: the captured step less the GPU's own work
  std::optional<model::StepMeasurement> measurement;  // what the point rests on (Measured, StepLog)
};

struct StepVerdict {
  int steady = 0, warmup = 0, outliers = 0, all_steps = 0;
  int median_steps = 0;         // of the steady steps, those the median and the range stand on (StepSummary)
  int lost_steps = 0;           // steps left out because their GPU records are missing
  double lost_share = 0;        // of the steady steps' launches, those without a GPU record
  bool low_confidence = false;  // the capture lost records in the steps (lost_steps, lost_share)
  double wall_ns = 0, wall_min_ns = 0, wall_max_ns = 0;  // steady step: median, min, max
  double busy_ns = 0, busy_share = 0;                    // GPU busy in a steady step (median)
  double idle_ns = 0;  // per step: what the median step holds beyond the GPU's median busy time
  Bound bound = Bound::Gpu;
  std::vector<VerdictCause> causes;                                 // largest first
  double kernels = 0;                                               // per step
  double mean_kernel_ns = 0, mean_queue_ns = 0, launch_api_ns = 0;  // launch_api_ns: per step
  double sync_ns = 0;                                               // host blocked per step
  double fp32_matmul_ns = 0;                                        // per step
  double comm_exposed_ns = 0;                                       // per step
  // Collectives paired across ranks (comm_paired): per step, the time ranks waited in them for
  // the last rank and the time they moved data; of comm_exposed_ns, the waiting part.
  bool comm_paired = false;
  double comm_wait_ns = 0, comm_transfer_ns = 0, comm_exposed_wait_ns = 0;
  std::optional<join::StepStory::LateRank> late;   // the rank that arrives last most often
  int ranks = 0;                                   // processes in the profile
  int world_size = 0;                              // the job's ranks, as recorded (0: not)
  double triton_kernels = 0;                       // per step: generated by torch.compile
  bool compiled = false;                           // a tenth of the kernels or more come from torch.compile
  bool graphs = false;                             // CUDA graphs replay in the steps (cudaGraphLaunch)
  double graph_replays = 0, outside_launches = 0;  // per step: graph launches, and launches outside them
  std::vector<join::PlacedLine> outside_lines;     // those outside, most first (ns: their count over the steady steps)
  double triton_ns = 0;                            // per step: time of torch.compile's kernels
  double compiled_share = 0;                       // of the steady steps' GPU time
  std::vector<join::PlacedLine> compiled_lines;    // where it landed (ns: totals over the steady steps)
  join::StepStory::Generated generated;            // whether the generated code put it on model lines
  std::vector<VerdictChange> changes;              // two or three, most helpful first
  int64_t oneoff_gpu_ns = 0, oneoff_idle_ns = 0;
  std::vector<join::StepStory::OneOffStep> oneoff_steps;
  std::vector<join::PlacedLine> oneoff_lines;
  bool all_counted = false;                             // every step counted as steady (setting, or a capture range)
  std::vector<join::CompiledFunctionSummary> compiles;  // torch.compile's compilations (TORCH_TRACE)
  join::CompileLogs compile_logs;                       // the TORCH_TRACE logs read and set aside
  int64_t oneoff_compile_ns = 0;                        // GPU idle outside steady steps while compiling
  std::optional<LoaderSettings> loader;                 // the training script's DataLoader calls (StepStory::loaders)
  bool no_loader = false;                               // that script makes no DataLoader at all
  CaptureCost capture;                                  // the profiler's own cost, and the step without it
  std::string steps_source;                             // how the steps were found
  std::string timing_from;                              // a light capture the figures come from, else ""
  UnprofiledStep unprofiled;                            // the step without the profiler: its source, range, bound
  std::string script;  // the training script's file name, for advice that names it (set by the caller; "" unknown)
  // The causes and changes are the capture's, its host slowed by the profiler: the step without
  // it was not measured (unprofiled has no point).
  bool as_captured = false;
};

// What a cause of idle time is called ("host launch overhead").
std::string causeName(Bound b);
// The figure a cause was fitted from, where it differs (by a tenth or more) from the one told:
// captured_ns where the causes were fitted to a measured or replayed step, else nullopt.
std::optional<double> capturedFigure(const StepVerdict& v, const VerdictCause& c);
// Extra work per step below this is not told as a rank's or a line's (0.5 ms).
inline constexpr double kMeasurableNs = 500e3;
// Whether the rank that arrives last at more than half the collectives does measurably more GPU work than the
// others (at least kMeasurableNs per step, and half the others' wait): only then is it named as
// the straggler and its work advised on; waits its work does not explain come from its host
// (or from a profiler that slowed the ranks unevenly).
bool lateRankExplains(const StepVerdict& v);
// A change's stable name for JSON ("torch-compile", "fewer-syncs", ...).
const char* changeName(Change c);
// A change that would help, as a sentence with its figure (for diagnostics, which carry text).
std::string changeText(const VerdictChange& c, const StepVerdict& v);

// Why a compiled function recompiles, and the cure, from its most frequent failed guard (named
// in the text unless `name_guard` is false); "" when no cure is known.
std::string recompileCure(const join::CompiledFunctionSummary::Reason& r, bool name_guard = true);

// The verdict of a profile's steady steps, or nullopt when it knows no steps.
std::optional<StepVerdict> stepVerdict(const join::StepStory* story);

}  // namespace sightline::features
