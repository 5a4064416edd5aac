// Attribution: charges every GPU activity of a profile to a (file, line) of the user's Python
// code, with the method that found it, and rolls costs up per line. Pure: it reads the model
// and returns plain structs; files are the profile's paths (mapping them onto the workspace
// is path_mapping.h's job). Methods, in the order tried:
//   stack     the launching call's own Python backtrace (innermost user frame)
//   op        same forward autograd op range as a call with a backtrace
//   backward  autograd-thread op `XBackward0, seq = N` -> forward op range with seq N -> its line
//   inferred  the nearest backtraces before and after the call on its thread agree
//   sample    the nearest periodic Python sample on the call's thread
//   nvtx      an enclosing user NVTX range whose text a source site opens (nvtx_sites.h)
// Traces of Python calls (Kineto `python_function`) name frames by callee, not by call site:
//   aligned   the innermost user frame's child on the path to the launch, aligned with the calls
//             of that function's body (call_sites.h)
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
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/call_sites.h"
#include "analysis/model/profile.h"

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
  int64_t sync_ns = 0;  // host time blocked in synchronizing calls
  uint32_t syncs = 0;
  std::map<model::StringId, uint32_t> sync_apis;
  std::map<model::StringId, uint32_t> autograd_ops;  // forward op names seen for this line
  std::vector<int64_t> rank_ns;                      // gpu_ns per rank (Attribution::ranks), when there are several
  int64_t comm_ns = 0;                               // of gpu_ns: communication kernels (NCCL)
  int64_t comm_exposed_ns = 0;                       // of comm_ns: while no other kernel ran on that GPU
  uint32_t lost_launches = 0;                        // launches whose GPU records are missing from the profile
};

// A process with GPU work: one rank of a distributed run (or the one process of a plain run).
struct RankInfo {
  uint32_t pid = 0;
  int32_t rank = -1;    // as the profile records it, else -1
  std::string label;    // "rank 1", else "GPU 1", else "pid 4242"
  std::string process;  // its name ("python3"), when known
  std::vector<uint32_t> devices;
  int64_t gpu_ns = 0;   // sum of its activities
  int64_t busy_ns = 0;  // time at least one of its activities ran
  int64_t span_ns = 0;  // from its first activity's start to its last one's end
  int64_t comm_ns = 0;
  int64_t comm_exposed_ns = 0;
  int steps = 0;
  int64_t median_step_ns = 0;
  uint32_t launches = 0;
  uint32_t lost_launches = 0;
};

// Launches on one thread whose GPU records are missing (an app ended before CUPTI flushed).
struct LostRecords {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t launches = 0;
  uint32_t lost = 0;
};

struct LineRef {
  model::StringId file = 0;  // 0: unattributed
  int32_t line = 0;
  Method method = Method::Stack;
  bool backward = false;
};

// A place in the source that opens an NVTX range: `with torch.cuda.nvtx.range("fwd"):`,
// `torch.cuda.nvtx.range_push("fwd")`, `@nvtx.annotate("fwd")`.
struct NvtxSite {
  std::string text;          // the range's text, as the profile records it
  model::StringId file = 0;  // the file, as a string of the profile being attributed
  int32_t line = 0;          // 1-based line of the call that opens the range
  bool per_step = false;     // opened once per training step (in the training loop or below it)
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
  uint32_t methods = ~0u;  // bit (1 << Method) enables a method; tests isolate one with it
  // GPU idle gaps at least this long (no kernel, copy or memset on any stream of a device) are
  // charged to the line the host was on when the gap began.
  int64_t idle_gap_ns = 1'000'000;
};

struct IdleGap {
  int64_t start_ns = 0;  // the end of the last GPU work before it
  int64_t end_ns = 0;    // the start of the next
  uint32_t device = 0;
  LineRef line;  // file 0: no host line found
};

struct Attribution {
  int64_t total_gpu_ns = 0;
  int64_t attributed_gpu_ns = 0;
  int64_t unattributed_gpu_ns = 0;
  std::array<int64_t, kMethodCount> by_method{};
  std::map<model::StringId, std::map<int32_t, LineCost>> files;  // profile path -> line -> cost
  std::vector<LineRef> activity_lines;                           // parallel to Profile::activities
  std::vector<IdleGap> idle_gaps;                                // by device, then time
  int steps = 0;                                                 // iterations detected (0: unknown)
  std::string steps_source;                                      // how they were found
  struct ProcessSteps {
    int count = 0;
    int64_t median_ns = 0;  // median step length (0: unknown)
  };
  std::map<uint32_t, ProcessSteps> process_steps;  // per pid, where steps were found
  std::vector<RankInfo> ranks;                     // processes with GPU work
  int64_t comm_ns = 0, comm_exposed_ns = 0;
  std::vector<LostRecords> lost;  // threads with lost launches
  uint32_t processes = 0;         // processes with CUDA calls or GPU work
  uint32_t launches = 0, lost_launches = 0;
};

// Adds `from` into `into` (two profile paths that map to one local file).
void addCost(LineCost& into, const LineCost& from);

bool isDefaultUserFile(std::string_view path);
Attribution attribute(const model::Profile& profile, const Options& options = {});

}  // namespace sightline::attribution
