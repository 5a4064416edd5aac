// The format-neutral profile model that every reader fills (nsys SQLite now, Kineto JSON
// next) and attribution consumes. Invariants:
//  - every time is integer nanoseconds on one session clock (`*_ns`), end >= start;
//  - names are interned: `StringId` indexes Profile::strings (0 is the empty string);
//  - processes and threads are plain OS ids as the profile recorded them (pid, tid);
//  - a GPU activity's `correlation` joins it to the API call with the same (pid, correlation);
//  - Python frames are stored once in `frames`; a mark points at [first_frame, +frame_count),
//    innermost frame first; lines are 1-based, as Python reports them.
// It holds no file handles and no format-specific ids beyond what attribution needs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sightline::model {

using StringId = uint32_t;

class StringTable {
 public:
  StringTable() { intern(""); }
  StringId intern(std::string_view s);
  const std::string& operator[](StringId id) const { return values_[id]; }
  size_t size() const { return values_.size(); }

 private:
  std::vector<std::string> values_;
  std::unordered_map<std::string, StringId> ids_;
};

enum class ActivityKind : uint8_t { Kernel, Memcpy, Memset, Graph };
enum class CopyKind : uint8_t { Unknown, HostToDevice, DeviceToHost, DeviceToDevice, HostToHost, PeerToPeer };
enum class MemoryKind : uint8_t { Unknown, Pageable, Pinned, Device, Managed, Other };

struct GpuActivity {
  ActivityKind kind = ActivityKind::Kernel;
  int64_t start_ns = 0;  // session clock
  int64_t end_ns = 0;
  int64_t pid = 0;
  int64_t correlation = -1;  // -1: none recorded
  StringId name = 0;         // kernel short name; "memcpy HtoD" etc. for copies
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t bytes = 0;  // memcpy / memset size in bytes
  CopyKind copy = CopyKind::Unknown;
  MemoryKind src = MemoryKind::Unknown;
  MemoryKind dst = MemoryKind::Unknown;
  int64_t duration() const { return end_ns - start_ns; }
};

enum class SyncKind : uint8_t { None, Device, Stream, Event, BlockingMemcpy, Other };

struct ApiCall {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  int64_t correlation = -1;
  StringId name = 0;  // without the `_vNNNN` suffix
  SyncKind sync = SyncKind::None;
  bool launches = false;  // launches GPU work (kernel launch, graph launch, async copy, memset)
};

// A range with a duration (push/pop or start/end), on one thread.
struct NvtxRange {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  StringId text = 0;
  StringId domain = 0;  // domain name; 0 for the default domain
  // PyTorch autograd ranges (`aten::mm, seq = 12, op_id = 40, ...`): parsed fields.
  StringId op = 0;   // "aten::mm", "MmBackward0"; 0 when not an autograd range
  int64_t seq = -1;  // -1 when absent
  int64_t op_id = -1;
  uint16_t depth = 0;  // nesting depth on its thread (0 = outermost)
};

struct Frame {
  StringId function = 0;
  StringId file = 0;
  int32_t line = 0;  // 1-based
};

enum class MarkKind : uint8_t { Backtrace, Sample };

// A Python stack captured at one instant on one thread.
struct PythonMark {
  int64_t time_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  MarkKind kind = MarkKind::Backtrace;
  uint32_t first_frame = 0;
  uint32_t frame_count = 0;
};

struct ProfileInfo {
  std::string format;        // "nsys-sqlite", "kineto-json"
  std::string tool_version;  // e.g. "2025.3.2.0"
  std::string schema_version;
  std::string platform;
  std::vector<std::string> gpus;
  std::vector<std::string> warnings;      // what could not be read, and what it costs the user
  std::vector<std::string> capabilities;  // what was found: "python-backtraces", "autograd-nvtx", ...
  bool has_blobs = true;                  // nsys: --include-blobs was used (or nothing needed it)
};

struct Profile {
  ProfileInfo info;
  StringTable strings;
  std::vector<GpuActivity> activities;  // sorted by start_ns
  std::vector<ApiCall> api_calls;       // sorted by start_ns
  std::vector<NvtxRange> ranges;        // sorted by (pid, tid, start_ns)
  std::vector<PythonMark> marks;        // sorted by (pid, tid, time_ns)
  std::vector<Frame> frames;

  int64_t totalGpuNs() const;
  void sortAll();
};

}  // namespace sightline::model
