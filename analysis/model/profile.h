// The format-neutral profile model that every reader fills (nsys SQLite now, Kineto JSON
// next) and attribution consumes. Invariants:
//  - every time is integer nanoseconds on one session clock (`*_ns`), end >= start;
//  - names are interned: `StringId` indexes Profile::strings (0 is the empty string);
//  - processes and threads are plain OS ids as the profile recorded them (pid, tid, 32-bit);
//  - a GPU activity's `correlation` joins it to the API call with the same (pid, correlation);
//  - Python frames are stored once in `frames`; a mark points at [first_frame, +frame_count),
//    innermost frame first; lines are 1-based, as Python reports them.
//  - PythonCall::parent indices stay valid: readers sort `calls` themselves (sortAll leaves them).
// It holds no file handles and no format-specific ids beyond what attribution needs.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model/memory.h"

namespace sightline::model {

// end - start in ns, never negative and never overflowing: a corrupt export can hold any
// integers, and a span of garbage counts as nothing rather than as a huge or negative time.
inline int64_t spanNs(int64_t start_ns, int64_t end_ns) {
  int64_t d = 0;
  if (__builtin_sub_overflow(end_ns, start_ns, &d) || d < 0) return 0;
  return d;
}

using StringId = uint32_t;

class StringTable {
 public:
  StringTable() { intern(""); }
  StringTable(const StringTable& other) : values_(other.values_) { reindex(); }
  StringTable& operator=(const StringTable& other) {
    if (this != &other) values_ = other.values_, reindex();
    return *this;
  }
  StringTable(StringTable&&) noexcept = default;  // a moved deque keeps its elements' addresses
  StringTable& operator=(StringTable&&) noexcept = default;
  StringId intern(std::string_view s);
  const std::string& operator[](StringId id) const { return values_[id]; }
  size_t size() const { return values_.size(); }

 private:
  void reindex();
  std::deque<std::string> values_;  // stable addresses: ids_ views into them
  std::unordered_map<std::string_view, StringId> ids_;
};

enum class ActivityKind : uint8_t { Kernel, Memcpy, Memset, Graph };
enum class CopyKind : uint8_t { Unknown, HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, PeerToPeer };
enum class MemoryKind : uint8_t { Unknown, Pageable, Pinned, Device, Managed, Other };

// A kernel's launch shape, interned in Profile::launch_configs (index 0: unknown).
struct LaunchConfig {
  std::array<uint32_t, 3> grid{};
  std::array<uint32_t, 3> block{};
  bool operator==(const LaunchConfig&) const = default;
};

// Fields are ordered so the struct packs into 56 bytes: profiles hold millions of these.
struct GpuActivity {
  int64_t start_ns = 0;  // session clock
  int64_t end_ns = 0;
  int64_t correlation = -1;  // -1: none recorded
  uint64_t bytes = 0;        // memcpy / memset size in bytes
  uint32_t pid = 0;
  StringId name = 0;  // kernel short name; "[memcpy HtoD]" etc. for copies
  uint32_t device = 0;
  uint32_t stream = 0;
  uint32_t launch_config = 0;  // kernels: index into Profile::launch_configs
  ActivityKind kind = ActivityKind::Kernel;
  CopyKind copy = CopyKind::Unknown;
  MemoryKind src = MemoryKind::Unknown;
  MemoryKind dst = MemoryKind::Unknown;
  int64_t duration() const { return spanNs(start_ns, end_ns); }
};

enum class SyncKind : uint8_t { None, Device, Stream, Event, BlockingMemcpy, Other };

// Readers keep the calls that launched GPU work (by name, or because an activity points at
// them) and the synchronizing ones; the rest (cudaGetDevice, ...) carry no cost to charge.
struct ApiCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t correlation = -1;
  uint32_t pid = 0;
  uint32_t tid = 0;
  StringId name = 0;  // without the `_vNNNN` suffix
  SyncKind sync = SyncKind::None;
  bool launches = false;  // launches GPU work (kernel launch, graph launch, async copy, memset)
};

// A range with a duration (push/pop or start/end), on one thread. Readers may leave out
// autograd ranges without a `seq` that enclose no kept API call: nothing is charged through
// them, and a long run has millions.
struct NvtxRange {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  StringId text = 0;    // the range's text; for autograd ranges only the op name (as `op`)
  StringId domain = 0;  // domain name; 0 for the default domain
  // PyTorch autograd ranges (`aten::mm, seq = 12, op_id = 40, ...`): parsed fields.
  StringId op = 0;     // "aten::mm", "MmBackward0"; 0 when not an autograd range
  int32_t seq = -1;    // -1 when absent
  int32_t op_id = -1;  // -1 when absent
  uint16_t depth = 0;  // nesting depth on its thread (0 = outermost)
};

struct Frame {
  StringId function = 0;
  StringId file = 0;
  int32_t line = 0;  // 1-based
};

enum class MarkKind : uint8_t { Backtrace, Sample };

// A Python stack captured at one instant on one thread.
// Marks with the same stack share its frames.
struct PythonMark {
  int64_t time_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t first_frame = 0;
  uint32_t frame_count = 0;
  MarkKind kind = MarkKind::Backtrace;
  // Its frames were mapped from a compiled backward graph's generated code: the lines are the
  // forward lines whose gradients it computes (attribution/compiled_frames.h).
  bool backward = false;
  bool compiled = false;  // its frames were mapped from generated code (backward or not)
};

// A Python call with a duration, as the PyTorch profiler traces them (`python_function`
// events): a frame of a file, an nn.Module call, or a call into C (a builtin). Unlike a
// PythonMark it has no call-site line: `line` is where the callee's frame was when the call
// began (its `def` line, or the running line for frames already on the stack when tracing
// started); attribution resolves call sites against the source.
enum class CallKind : uint8_t { Function, Module, Builtin };

struct PythonCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  int32_t parent = -1;    // index into Profile::calls of the calling frame (may be on another thread)
  StringId file = 0;      // Function: the file as recorded ("train.py", "torch/nn/functional.py")
  StringId function = 0;  // Function: its name; Module: the class ("Conv2d"); Builtin: "item", "len"
  int32_t line = 0;       // Function: 1-based line of the frame when the call began
  CallKind kind = CallKind::Function;
};

// A process the profile names. A report of `torchrun` holds one per rank (and the launcher,
// DataLoader or compile workers); `rank` is the distributed rank where the profile records it
// (an NCCL communicator's init payload, the trace's distributedInfo), else -1.
struct ProcessInfo {
  uint32_t pid = 0;
  std::string name;
  int32_t rank = -1;
  int32_t world_size = -1;
  std::string host;         // the machine it ran on, where the profile says ("" unknown)
  std::string rank_source;  // where `rank` came from: "distributedInfo", "NCCL", "file name"
  std::string gpu_uuid;     // of its one GPU, where the profile records it
};

// What the profiler itself did on the host, the work it adds to the program it measures: the
// events it recorded that cost host time, by kind (attribution/capture_overhead.h holds the
// cost of each). Counted per process in 1 ms bins (16-bit counts, saturating), so a long
// capture of millions of calls and ranges costs a few bytes per millisecond.
enum class CaptureEvent : uint8_t {
  RuntimeCall,      // nsys: a CUDA runtime API call traced by CUPTI
  DriverCall,       // nsys: a CUDA driver API call traced by CUPTI
  NativeBacktrace,  // nsys --cudabacktrace: a native stack unwound at a CUDA call
  PythonBacktrace,  // nsys --python-backtrace: a Python stack taken at a CUDA call
  AutogradRange,    // nsys --pytorch=autograd-nvtx: an NVTX range per autograd op
  ShapesRange,      // of those, with input shapes formatted (autograd-shapes-nvtx)
  TraceOp,          // PyTorch profiler: an operator event
  TraceShapes,      // of those, with input shapes (record_shapes)
  TracePython,      // PyTorch profiler with_stack: a Python function event
  TraceApi,         // PyTorch profiler: a CUDA runtime or driver event
};
inline constexpr size_t kCaptureEventKinds = 10;
const char* captureEventName(CaptureEvent e);

class CaptureEvents {
 public:
  static constexpr int64_t kBinNs = 1'000'000;
  void add(uint32_t pid, int64_t t_ns, CaptureEvent kind, uint32_t count = 1);
  // Events of `kind` of process `pid` in [a_ns, b_ns), prorated within the bins at the ends.
  double count(uint32_t pid, CaptureEvent kind, int64_t a_ns, int64_t b_ns) const;
  uint64_t total(CaptureEvent kind) const;
  bool empty() const { return processes_.empty(); }
  // The process's bins of one kind from the bin holding `from_ns` (one count per kBinNs), for a
  // caller that walks them in order; `first_ns` is that first bin's start.
  struct Bins {
    int64_t first_ns = 0;
    const std::vector<uint16_t>* counts = nullptr;  // null: no event of that kind
  };
  Bins bins(uint32_t pid, CaptureEvent kind) const;
  // Adds another reader's events (a trace read in two halves, a report of another rank), its
  // pids renamed by `pid_of`.
  template <class PidOf>
  void addAll(const CaptureEvents& other, PidOf&& pid_of) {
    for (const auto& [pid, proc] : other.processes_) addProcess(pid_of(pid), proc);
  }

  // A process's bins as stored (the model cache writes them and sets them back).
  struct Process {
    int64_t first_bin = 0;  // index of bins[k][0], in kBinNs since time 0 (may be negative)
    std::array<std::vector<uint16_t>, kCaptureEventKinds> bins;
  };
  const std::unordered_map<uint32_t, Process>& processes() const { return processes_; }
  void setProcess(uint32_t pid, Process p) { processes_[pid] = std::move(p); }

 private:
  void addProcess(uint32_t pid, const Process& from);
  std::unordered_map<uint32_t, Process> processes_;
};

// A report merged into a profile of several (mergeProfiles), as it read alone: what a summary of
// its ranks names (the file, its own pids, GPUs and warnings).
struct ProfilePart {
  std::string name;  // the report's file name
  std::string format, tool_version;
  std::vector<std::string> gpus, warnings, capabilities;
  std::vector<std::pair<uint32_t, uint32_t>> pids;  // (its own pid, the merged profile's), by own pid
};

struct ProfileInfo {
  std::string format;        // "nsys-sqlite", "kineto-json"
  std::string tool_version;  // e.g. "2025.3.2.0"
  std::string schema_version;
  std::string platform;
  std::vector<std::string> gpus;
  std::vector<std::string> gpu_uuids;     // beside gpus, where the profile records them ("" unknown)
  std::string host;                       // the machine the profile was taken on ("" unknown)
  std::vector<std::string> warnings;      // what could not be read, and what it costs the user
  std::vector<std::string> capabilities;  // what was found: "python-backtraces", "autograd-nvtx", ...
  bool has_blobs = true;                  // nsys: --include-blobs was used (or nothing needed it)
  int64_t utc_start_ns = 0;               // wall clock (ns since the Unix epoch) at the profile's time 0; 0: unknown
  std::vector<ProcessInfo> processes;     // any order; may be empty (the reader knew none)
  std::vector<ProfilePart> parts;         // the reports merged into it; empty for one report's

  // The merged report that holds process `pid`, and its pid there; nullptr in one report's.
  const ProfilePart* partOf(uint32_t pid, uint32_t* own_pid = nullptr) const;
};

// Keys for joining the model's rows in memory: a thread, and an API call's correlation id within
// its process (nsys and CUPTI ids stay far below 2^40).
inline uint64_t threadKey(uint32_t pid, uint32_t tid) { return (static_cast<uint64_t>(pid) << 32) | tid; }
inline uint64_t correlationKey(uint32_t pid, int64_t correlation) {
  return (static_cast<uint64_t>(pid) << 40) ^ static_cast<uint64_t>(correlation);
}

struct Profile {
  ProfileInfo info;
  StringTable strings;
  std::vector<GpuActivity> activities;  // sorted by start_ns
  std::vector<ApiCall> api_calls;       // sorted by start_ns
  std::vector<NvtxRange> ranges;        // sorted by (pid, tid, start_ns)
  std::vector<PythonMark> marks;        // sorted by (pid, tid, time_ns)
  std::vector<Frame> frames;
  std::vector<PythonCall> calls;  // sorted by (pid, tid, start_ns, longest first); parents point into it
  std::vector<LaunchConfig> launch_configs{LaunchConfig{}};
  CaptureEvents capture;               // the profiler's own work on the host (capture_overhead.h)
  MemorySnapshot memory;               // a memory snapshot's trace and blocks (empty for other profiles)
  std::vector<MemoryUse> memory_uses;  // GPU allocations and frees a trace recorded, by time

  int64_t totalGpuNs() const;
  void sortAll();   // sortRows() and sortRanges()
  void sortRows();  // activities, API calls, marks
  void sortRanges();
  // Two runs of rows, each sorted as sortRows() (sortRanges()) sorts them, the second from
  // `at` on, merged: the rows of one stable sort of both (a trace parsed in two halves).
  struct RowRuns {
    size_t activities = 0, api_calls = 0, marks = 0;
  };
  void mergeSortedRuns(const RowRuns& at);
  void mergeSortedRanges(size_t at);
};

// One profile of several: one report per rank (`nsys profile -o run_%q{RANK}` under torchrun)
// read as one multi-process profile. Strings are re-interned, a pid that two parts share is
// renumbered in the later part, and every time stays on its own report's clock: ranks are
// compared step by step (per process), never by clock. `names` label the parts' warnings.
Profile mergeProfiles(std::vector<Profile> parts, const std::vector<std::string>& names);

}  // namespace sightline::model
