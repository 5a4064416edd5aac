// Attribution: charges every GPU activity of a profile to a (file, line) of the user's Python
// code, with the method that found it, and rolls costs up per line. Pure: it reads the model
// and returns plain structs; files are the profile's paths (mapping them onto the workspace
// is path_mapping.h's job). Methods, in the order tried:
//   stack     the launching call's own Python backtrace (innermost user frame)
//   op        same forward autograd op range as a call with a backtrace
//   backward  autograd-thread op `XBackward0, seq = N` -> forward op range with seq N -> its line
//   inferred  the nearest backtraces before and after the call on its thread agree, or are two
//             launches of one torch.compile wrapper (the call takes the sites between them)
//   sample    the nearest periodic Python sample on the call's thread
//   nvtx      an enclosing user NVTX range whose text a source site opens (nvtx_sites.h)
// Traces of Python calls (Kineto `python_function`) name frames by callee, not by call site:
//   aligned   the innermost user frame's child on the path to the launch, aligned with the calls
//             of that function's body (call_sites.h); inside a traced `call()` of a
//             torch.compile wrapper, the wrapper's launch by kernel name and order (its user lines)
//   function  no call matched: the user function's `def` line
// Calls on threads without Python frames (the autograd engine's, which runs DDP's all-reduce):
//   caller    the line the process's Python thread was in: its last backtrace before the call
//             (`loss.backward()` while the engine runs the backward pass)
// Backward work takes the line of its forward op (seq) with any method.
// What stays unattributed is counted, never hidden.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/call_sites.h"
#include "analysis/model/profile.h"
#include "analysis/source/task_runner.h"

namespace sightline::attribution {

enum class Method : uint8_t { Stack, Op, Backward, Inferred, Sample, Nvtx, Aligned, Function, Caller };
inline constexpr size_t kMethodCount = 9;
const char* methodName(Method m);

struct KernelStat {
  uint32_t count = 0;
  int64_t ns = 0;
};

struct LineCost {
  int64_t gpu_ns = 0;  // kernels + copies + memsets + graphs launched from this line
  int64_t forward_ns = 0;
  int64_t backward_ns = 0;
  std::array<int64_t, kMethodCount> by_method{};
  uint32_t kernels = 0;
  uint32_t launches = 0;                          // API calls that launched GPU work
  std::map<model::StringId, KernelStat> by_name;  // kernels, copies, memsets by name
  uint64_t memcpy_bytes = 0;
  uint64_t pageable_bytes = 0;  // of memcpy_bytes, from or to pageable host memory
  int64_t memcpy_ns = 0;
  std::array<uint64_t, 6> memcpy_bytes_by_kind{};  // indexed by model::CopyKind
  int64_t memset_ns = 0;
  uint32_t memsets = 0;
  uint64_t sync_memcpy_bytes = 0;  // copied by synchronous memcpy calls (cudaMemcpy, not ...Async),
  int64_t sync_memcpy_ns = 0;      // HtoD copies under 64 KiB left out (the driver returns early
  uint32_t sync_memcpys = 0;       // for those)
  int64_t idle_ns = 0;             // GPU idle gaps that began while the host was on this line
  uint32_t idle_gaps = 0;
  int64_t compile_idle_ns = 0;  // of idle_ns, while torch.compile compiled what the line calls
  int64_t sync_ns = 0;          // host time blocked in synchronizing calls
  uint32_t syncs = 0;
  std::map<model::StringId, uint32_t> sync_apis;
  std::map<model::StringId, uint32_t> autograd_ops;  // forward op names seen for this line
  std::vector<int64_t> rank_ns;                      // gpu_ns per rank (Attribution::ranks), when there are several
  std::vector<int64_t> rank_wait_ns;  // of rank_ns, waiting in collectives for another rank (same size, or empty)
  std::vector<uint32_t> rank_syncs;   // syncs per rank, when there are several and the line has some
  std::vector<int64_t> rank_sync_ns;  // sync_ns per rank (same size as rank_syncs)
  int64_t comm_ns = 0;                // of gpu_ns: communication kernels (NCCL)
  int64_t comm_exposed_ns = 0;        // of comm_ns: while no other kernel ran on that GPU
  int64_t comm_wait_ns = 0;    // of comm_ns: waiting for another rank to arrive (collectives paired across ranks)
  uint32_t lost_launches = 0;  // launches whose GPU records are missing from the profile
  // Outside the steady steps (start-up, warm-up, evaluation passes, ...; see Attribution::steps):
  // never divided into per-step figures, and counted in none of the fields above.
  int64_t oneoff_ns = 0;       // GPU time launched from the line
  int64_t oneoff_idle_ns = 0;  // GPU idle gaps charged to the line
  // One-off GPU time that ran beneath the line (itself or any line it called: `losses =
  // estimate_loss()` holds the evaluation's), as inclusive_ns is for the steady steps.
  int64_t oneoff_inclusive_ns = 0;
  // torch.compile fused this line's work with these lines' into kernels charged here
  // (Options::fused_lines).
  std::vector<std::pair<model::StringId, int32_t>> fused_with;
  // GPU memory (a memory snapshot, attribution/memory_replay.h): bytes this line allocated that
  // were still alive at the peak.
  int64_t memory_peak_bytes = 0;
  std::array<int64_t, 3> memory_peak_by_phase{};  // of those, allocated in forward, backward, optimizer
  // Of those, by the operator that allocated them, most first (traces with operator ranges).
  std::vector<std::pair<model::StringId, int64_t>> memory_peak_ops;
  // Allocated by this line per steady step of the memory trace (bytes, allocations).
  int64_t memory_step_bytes = 0;
  int64_t memory_step_allocations = 0;
  // The caching allocator's pool grown by this line's cudaMalloc calls (nsys --cuda-memory-usage).
  int64_t memory_reserved_bytes = 0;
  // Allocations of this line never freed over a memory snapshot's trace, made step after step
  // (attribution/memory_replay.h MemoryKept).
  int32_t memory_kept_count = 0;
  int64_t memory_kept_bytes = 0;
  int32_t memory_kept_steps = 0;  // the steps they were made in
};

// A rank's own work on a line: its GPU time less the time it waited in collectives for others.
// Of one collective's waiting for the last rank, the part nothing else covered on its GPU. Within
// a collective the wait comes first and the data moves last, and what compute leaves uncovered
// is its end: the exposed time is the transfer up to the transfer's length, waiting beyond it.
// One rule for the verdict, the job and its modules.
inline int64_t exposedWaitNs(int64_t duration_ns, int64_t wait_ns, int64_t exposed_ns) {
  if (wait_ns <= 0) return 0;
  int64_t beyond = exposed_ns - (duration_ns - wait_ns);
  return beyond <= 0 ? 0 : beyond < wait_ns ? beyond : wait_ns;
}

inline int64_t rankWorkNs(const LineCost& c, size_t rank) {
  int64_t wait = rank < c.rank_wait_ns.size() ? c.rank_wait_ns[rank] : 0;
  return rank < c.rank_ns.size() ? c.rank_ns[rank] - wait : 0;
}

// A process with GPU work: one rank of a distributed run (or the one process of a plain run).
struct RankInfo {
  uint32_t pid = 0;
  int32_t rank = -1;    // as the profile records it (or its file's name), else -1
  std::string label;    // "rank 1 (node3, GPU 1)", else "GPU 1", else "pid 4242"
  std::string process;  // its name ("python3"), when known
  std::string host;     // the machine, when known
  std::string gpu_uuid;
  std::string rank_source;  // "distributedInfo", "NCCL", "file name"; "" without a rank
  std::vector<uint32_t> devices;
  int64_t gpu_ns = 0;   // sum of its activities, over the whole profile
  int64_t busy_ns = 0;  // time at least one of its activities ran, over the whole profile
  int64_t span_ns = 0;  // from its first activity's start to its last one's end
  int64_t comm_ns = 0;  // NCCL kernels, over the whole profile
  int64_t comm_exposed_ns = 0;
  int steps = 0;  // steps found in it, steady or not
  int64_t median_step_ns = 0;
  uint32_t launches = 0;
  uint32_t lost_launches = 0;
  // Its steady steps (every per-step figure of the rank table divides these by steady_steps).
  int steady_steps = 0;
  int64_t steady_gpu_ns = 0;
  int64_t steady_wall_ns = 0;  // the steps' walls, summed (GPU side, as StepSummary::wall_ns)
  int64_t steady_busy_ns = 0;  // of that wall, GPU busy
  double busy_share = 0;       // steady_busy_ns / steady_wall_ns: busy over the wall of its steady steps
  int64_t steady_comm_ns = 0, steady_comm_exposed_ns = 0;
  // Collectives paired across ranks (pairCollectives): of comm_ns, waiting for the last rank to
  // arrive and moving data; how many it took part in and arrived last at; the same over the
  // steady steps, with the other ranks' waits its late arrivals caused.
  int64_t comm_wait_ns = 0, comm_transfer_ns = 0;
  uint32_t paired_collectives = 0, late_collectives = 0;
  int64_t steady_comm_wait_ns = 0, steady_comm_transfer_ns = 0, steady_caused_wait_ns = 0;
  uint32_t steady_late_collectives = 0, steady_paired_collectives = 0;
};

// Launches on one thread whose GPU records are missing (an app ended before CUPTI flushed).
struct LostRecords {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t launches = 0;
  uint32_t lost = 0;
};

// A thread that lost the records of nine tenths or more of its launches (a hundred at least):
// it lost them in every step, not only where a capture ended before the GPU delivered them.
inline bool wholeThreadLost(uint32_t launches, uint32_t lost) {
  return launches >= 100 && 10 * static_cast<uint64_t>(lost) >= 9 * static_cast<uint64_t>(launches);
}

struct LineRef {
  model::StringId file = 0;  // 0: unattributed
  int32_t line = 0;
  Method method = Method::Stack;
  bool backward = false;
  bool input = false;    // the host was fetching data (a DataLoader or batch function on the stack)
  uint32_t context = 0;  // the user lines it ran beneath (Attribution::contexts); 0: this line only
};

// One user line in a context: a frame of a Python stack in the user's code.
struct FrameLine {
  model::StringId file = 0;
  int32_t line = 0;
  auto operator<=>(const FrameLine&) const = default;
};

// Inclusive time: GPU time whose launch ran beneath a set of user lines (every user frame of its
// stack: `logits, loss = model(X, Y)` in the loop, `x = block(x)` in the model, the line that
// launched it; for backward work the forward stack and the line that ran the backward pass).
struct ContextCost {
  uint32_t context = 0;  // index into Attribution::contexts
  LineRef self;          // the line the work is charged to itself
  int64_t gpu_ns = 0, forward_ns = 0, backward_ns = 0;
};

// A place in the source that opens an NVTX range: `with torch.cuda.nvtx.range("fwd"):`,
// `torch.cuda.nvtx.range_push("fwd")`, `@nvtx.annotate("fwd")`.
struct NvtxSite {
  std::string text;          // the range's text, as the profile records it
  model::StringId file = 0;  // the file, as a string of the profile being attributed
  int32_t line = 0;          // 1-based line of the call that opens the range
  bool per_step = false;     // opened once per training step (in the training loop or below it)
};

struct CompiledMapping;  // compiled_frames.h

// Host time one profiler event of each kind (model::CaptureEvent) costs the program, in ns.
using CaptureCosts = std::array<double, model::kCaptureEventKinds>;

// A torch.compile compilation on the profile's clock (join/compile_summary.h), charged to the
// user's line that called the compiled function.
struct CompileWindow {
  int64_t start_ns = 0, end_ns = 0;
  uint32_t pid = 0;  // the process that compiled; 0: any
  model::StringId file = 0;
  int32_t line = 0;
};

struct Options {
  // Whether a frame's file is the user's code. Default: not site-packages, dist-packages,
  // the Python stdlib, or `<frozen ...>`-style pseudo files.
  std::function<bool(std::string_view path)> is_user_file;
  std::vector<NvtxSite> nvtx_sites;
  // The user's files as call-site tables, for traces of Python calls: the table of a profile
  // path, or nullptr when it is not one of the user's files. When set, it also decides which
  // frames are the user's (unless is_user_file is set).
  std::function<const CallSiteTable*(std::string_view profile_path)> call_sites;
  // Lines whose kernels torch.compile fused other lines' work into: line -> those lines
  // (attribution/compiled_frames.h); copied into LineCost::fused_with.
  const std::map<std::pair<model::StringId, int32_t>, std::vector<std::pair<model::StringId, int32_t>>>* fused_lines =
      nullptr;
  // Stacks through torch.compile's generated code as mapped onto the user's lines
  // (compiled_frames.h): launches without a backtrace between two of a wrapper's launches take
  // the wrapper's launch sites between them, in order (method inferred).
  const CompiledMapping* compiled = nullptr;
  uint32_t methods = ~0u;  // bit (1 << Method) enables a method; tests isolate one with it
  // GPU idle gaps at least this long (no kernel, copy or memset on any stream of a device) are
  // charged to the line the host was on when the gap began.
  int64_t idle_gap_ns = 1'000'000;
  // Count every step as steady (no warm-up or outlier steps): the `allSteps` setting, or a
  // capture already limited to chosen steps.
  bool all_steps = false;
  // torch.compile's compilations, by start: GPU idle inside one is waiting for the compiler.
  std::vector<CompileWindow> compile_windows;
  // The steady steps without the profiler (capture_overhead.h): estimated unless turned off,
  // with the measured costs per event unless `capture_costs` gives others (bench/ fits them).
  bool estimate_unprofiled = true;
  std::optional<CaptureCosts> capture_costs;
  // The median step the same script takes without a profiler, from its own log (0: unknown):
  // the model's costs are scaled so the replayed steps take that long.
  int64_t logged_step_ns = 0;
  // Threads the caller lends for parts that run at once (the core starts none); null: each part
  // in turn on the calling thread. The result is the same either way.
  source::TaskRunner* runner = nullptr;
};

// Steps: the steady ones give every per-step figure; warm-up steps (the first ones, and any
// far above the median at the start) and outliers (far above the median later: evaluation,
// checkpoints, recompiles) are one-off costs.
// Lost: most of its launches have no GPU record (the capture ended before CUPTI delivered
// them); its GPU figures would describe work that is missing, so it is left out like an outlier.
enum class StepKind : uint8_t { Steady, Warmup, Outlier, Lost };
const char* stepKindName(StepKind k);

// Why the GPU waits in the steady steps: GPU idle time by the host's activity at the time.
// Compile: the host was compiling (torch.compile's compilations, Options::compile_windows).
enum class Wait : uint8_t { Launch, Sync, Input, Host, Compile };
inline constexpr size_t kWaitCount = 5;
const char* waitName(Wait w);

struct Step {
  int64_t start_ns = 0, end_ns = 0;  // host time, on the process's clock
  // The GPU's side of the step: from the start of the first work launched in it to the start of
  // the next step's (a host that runs ahead of a busy GPU makes its own steps short).
  int64_t gpu_start_ns = -1, gpu_end_ns = -1;
  StepKind kind = StepKind::Steady;
  int64_t gpu_ns = 0;      // GPU time launched in it
  int64_t busy_ns = 0;     // time its process's GPUs were busy within it
  uint32_t kernels = 0;    // kernels launched in it
  LineRef top_line;        // the line that launched most of its GPU time (what an outlier ran)
  int64_t compile_ns = 0;  // of its wall time, torch.compile compiling (Options::compile_windows)
  // Its wall on the GPU's side, split: [window_start_ns, window_end_ns) is the span walked (from
  // the first work launched in it to the next step's; the host's step where it launched none).
  // Busy time is compute (kernels but NCCL's), copies and memsets while no kernel ran, and
  // communication while neither ran (NCCL exposed); of that communication, waiting for the last
  // rank to arrive (collectives paired across ranks, prorated over the step's collectives).
  // Idle time by cause; the five causes and the busy parts add up to the window.
  int64_t window_start_ns = 0, window_end_ns = 0;
  int64_t compute_ns = 0, copy_ns = 0, comm_ns = 0, comm_wait_ns = 0;
  // Of compute_ns, the most that kernels running beside a collective took over their kind's
  // fastest instance in the capture (a collective spinning while it waits for another rank takes
  // SMs from them: FSDP's GEMMs ran 2x slower beside it under nsys): the step's own work is at
  // least compute_ns less this.
  int64_t compute_slowed_ns = 0;
  std::array<int64_t, kWaitCount> wait_ns{};
  // Host time the profiler's own events in the step cost the program (capture_overhead.h; 0
  // where the capture recorded none): what the step would not spend without it.
  int64_t capture_ns = 0;
};

// An idle piece of a step on its GPU, with what the host was doing (Wait) and its line.
struct StepGap {
  int64_t start_ns = 0, end_ns = 0;
  Wait wait = Wait::Launch;
  LineRef line;  // file 0: no line found
};

struct WaitLine {
  LineRef line;
  int64_t ns = 0;
  uint32_t count = 0;
};

// Lines gathered by (file, line), costliest first.
using LineTally = std::map<std::pair<model::StringId, int32_t>, WaitLine>;
std::vector<WaitLine> costliestFirst(const LineTally& tally);

// The steady steps without the profiler: what the capture cost the host, and the steps replayed
// without that cost (capture_overhead.h). Totals over the steady steps unless said otherwise.
struct UnprofiledSteps {
  bool estimated = false;  // the capture recorded what it costs, and the steps were replayed
  std::array<int64_t, model::kCaptureEventKinds> overhead_ns{};  // the capture's host cost, by event kind
  int64_t overhead_total_ns = 0;
  double scale = 1;         // the measured costs' factor: 1, or what makes the replay match a step log
  bool calibrated = false;  // scale comes from the script's own log (Options::logged_step_ns)
  int64_t logged_step_ns = 0;
  int steps = 0;        // replayed steps with a wall (all but each process's last)
  int64_t wall_ns = 0;  // median replayed step
  int64_t wall_min_ns = 0, wall_max_ns = 0;
  double busy_share = 0;  // median over replayed steps of busy / wall
  int64_t busy_ns = 0;    // median GPU busy per replayed step
  // GPU idle left in the replayed steps, by cause: totals over all steady steps (the replayed
  // steps' mean times their number), as StepSummary::wait_ns.
  std::array<int64_t, kWaitCount> wait_ns{};
};

// The steady steps in numbers (totals over every steady step of every process; divide by
// `steady` for per-step figures, except the medians). Per-step figures are per GPU: a run of
// several ranks counts each rank's steps, so they are the mean over ranks, as the rank table's.
struct StepSummary {
  int steady = 0;                // steady steps, over all processes
  int warmup = 0, outliers = 0;  // one-off steps
  int lost = 0;                  // steps left out because their GPU records are missing (StepKind::Lost)
  // Of the steady steps, those the medians and the range stand on: each process's last, cut
  // short where its loop ends (none after it marks its end), is left out when it has over three.
  int median_steps = 0;
  int64_t wall_ns = 0;  // median steady step
  int64_t wall_min_ns = 0, wall_max_ns = 0;
  // The GPU's own work: busy time less collectives waiting for other ranks (busyOfOwnWork).
  int64_t busy_ns = 0;                 // median GPU busy time of a steady step
  double busy_share = 0;               // median over steady steps (of every rank) of busy / wall
  uint64_t lost_launches = 0;          // of `launches`: no GPU record
  std::vector<WaitLine> lost_lines;    // lines with lost launches in steady steps, most first (count)
  int64_t gpu_ns = 0;                  // GPU time launched in steady steps
  uint64_t kernels = 0, launches = 0;  // in steady steps (kernels: compute, NCCL left out)
  int64_t kernel_ns = 0;               // time of those kernels
  int64_t launch_api_ns = 0;           // host time in launch calls
  int64_t queue_ns = 0;                // summed launch-to-start delay of those kernels
  int64_t fp32_matmul_ns = 0;          // of kernel_ns: matrix multiplies in fp32 without tensor cores
  // Collectives paired across ranks, summed over every rank's steady steps: waiting for the
  // last rank, and moving data (0 both: none paired, e.g. one rank's report alone); and of the
  // waiting, the part exposed (exposedWaitNs, collective by collective).
  int64_t comm_wait_ns = 0, comm_transfer_ns = 0, comm_exposed_wait_ns = 0;
  uint64_t triton_kernels = 0;           // of kernels: generated by torch.compile (Inductor's triton_*)
  int64_t triton_ns = 0;                 // their time
  std::vector<WaitLine> compiled_lines;  // where that time landed, costliest first
  uint64_t graph_launches = 0;           // CUDA graph replays (cudaGraphLaunch), e.g. mode="reduce-overhead"
  // With graph replays: the steady steps' launches made outside the graphs, by line (ns: their
  // count), most first: what the graphs leave to the host (the optimizer, clipping, ...).
  std::vector<WaitLine> launch_lines;
  std::array<int64_t, kWaitCount> wait_ns{};                 // GPU idle by cause
  std::array<std::vector<WaitLine>, kWaitCount> wait_lines;  // by cause, costliest first
  int64_t sync_ns = 0;               // host time blocked in synchronizing calls on lines of user code
  std::vector<WaitLine> sync_lines;  // costliest first
  int64_t oneoff_gpu_ns = 0;         // outside steady steps: GPU time and idle gaps
  int64_t oneoff_idle_ns = 0;
  int64_t oneoff_compile_ns = 0;  // of those idle gaps, time torch.compile was compiling
  bool all_steps = false;         // every step counted (Options::all_steps, or a capture range without set-up steps)
  bool capture_range = false;     // the capture was limited to a range (cudaProfilerApi)
  UnprofiledSteps unprofiled;
};

// A communication kernel (NCCL) with what pairs it across ranks: its step and launching call.
struct CollectiveLaunch {
  uint32_t activity = 0;   // index into Profile::activities
  int32_t api = -1;        // the CUDA call that launched it (Profile::api_calls), -1: none recorded
  int32_t step = -1;       // its step's index in its process's ProcessSteps::list; -1: outside them
  int64_t exposed_ns = 0;  // of its time, while no other kernel ran on its GPU
};

struct IdleGap {
  int64_t start_ns = 0;  // the end of the last GPU work before it
  int64_t end_ns = 0;    // the start of the next
  uint32_t device = 0;
  LineRef line;  // file 0: no host line found
};

struct Attribution {
  int64_t total_gpu_ns = 0;         // every activity of the profile
  int64_t steady_gpu_ns = 0;        // of it, launched in steady steps (all of it when no steps are known)
  int64_t attributed_gpu_ns = 0;    // of steady_gpu_ns: on a line
  int64_t unattributed_gpu_ns = 0;  // of steady_gpu_ns: on none
  std::array<int64_t, kMethodCount> by_method{};
  std::map<model::StringId, std::map<int32_t, LineCost>> files;  // profile path -> line -> cost
  std::vector<LineRef> activity_lines;                           // parallel to Profile::activities
  // Parallel to Profile::activities: the step it was launched in (by its call's host time), as an
  // index into its process's ProcessSteps::list; -1 outside every step.
  std::vector<int32_t> activity_steps;
  std::vector<LineRef> memory_use_lines;  // parallel to Profile::memory_uses
  std::vector<int32_t> memory_use_ops;    // parallel to it: the operator range around each (Profile::ranges), or -1
  std::vector<IdleGap> idle_gaps;         // by device, then time
  // Steady steps, over every rank: the divisor of every per-step figure (0: no steps known, and
  // figures are totals). With steps known, every figure above but total_gpu_ns covers the steady
  // steps only (step_summary), and what ran outside them is LineCost::oneoff_*.
  int steps = 0;
  int steps_per_rank = 0;    // the most steady steps of one process
  int step_ranks = 0;        // processes whose steps count
  std::string steps_source;  // how they were found
  struct ProcessSteps {
    int count = 0;
    int64_t median_ns = 0;   // median step length (0: unknown)
    std::vector<Step> list;  // by time; empty when only counts are known
    // The steady step closest to the median (the one a timeline shows; -1: none), and its idle
    // pieces in time order.
    int32_t representative = -1;
    std::vector<StepGap> representative_gaps;
  };
  std::map<uint32_t, ProcessSteps> process_steps;  // per pid, where steps were found
  std::vector<RankInfo> ranks;                     // processes with GPU work
  std::vector<CollectiveLaunch> collectives;       // every communication kernel, by activity
  int64_t comm_ns = 0, comm_exposed_ns = 0;
  std::vector<LostRecords> lost;  // threads with lost launches
  uint32_t processes = 0;         // processes with CUDA calls or GPU work
  uint32_t launches = 0, lost_launches = 0;
  StepSummary step_summary;                      // steady steps; steady == 0 when no steps are known
  std::vector<std::vector<FrameLine>> contexts;  // sorted, unique user lines; [0] is empty
  std::vector<ContextCost> context_costs;        // steady window
};

// Adds `from` into `into` (two profile paths that map to one local file).
void addCost(LineCost& into, const LineCost& from);

bool isDefaultUserFile(std::string_view path);
// A C or C++ frame's file in a stack that mixes languages (a memory snapshot's stacks="all"):
// "??", a C/C++/CUDA source or header, a compiler's include folder.
bool isNativeFrameFile(std::string_view path);
// A matrix multiply (or convolution) kernel computing in plain fp32 on CUDA cores, by its name
// (cuBLAS/CUTLASS `sgemm`, `..._f32f32_f32f32_f32_..._ffma`), not TF32, fp16 or bf16.
bool isFp32MatmulKernel(std::string_view name);
Attribution attribute(const model::Profile& profile, const Options& options = {});

}  // namespace sightline::attribution
