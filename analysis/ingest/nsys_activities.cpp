// The GPU-activity tables of an nsys export.
#include "analysis/ingest/nsys_activities.h"

#include "analysis/ingest/nsys_rows.h"
#include "analysis/ingest/nsys_sql.h"

namespace sightline::ingest::nsys {
namespace {

using model::ActivityKind;
using model::CopyKind;
using model::MemoryKind;

CopyKind copyKindOf(int64_t k) {
  switch (k) {
    case 1:
    case 3:
    case 11:
      return CopyKind::HostToDevice;
    case 2:
    case 4:
    case 12:
      return CopyKind::DeviceToHost;
    case 5:
    case 6:
    case 7:
    case 8:
    case 13:
      return CopyKind::DeviceToDevice;
    case 9:
      return CopyKind::HostToHost;
    case 10:
      return CopyKind::PeerToPeer;
    default:
      return CopyKind::Unknown;
  }
}

MemoryKind memoryKindOf(int64_t k) {
  switch (k) {
    case 0:
      return MemoryKind::Pageable;
    case 1:
      return MemoryKind::Pinned;
    case 2:
    case 3:
    case 5:
      return MemoryKind::Device;
    case 4:
    case 6:
      return MemoryKind::Managed;
    default:
      return MemoryKind::Unknown;
  }
}

// Kernels, copies, memsets and graph launches.
class ActivityReader : Reader {
 public:
  ActivityReader(Database& db, ActivityTables& out, const std::unordered_map<int64_t, model::StringId>& strings,
                 const std::array<model::StringId, 6>& copy_names, model::StringId memset_name,
                 std::array<model::StringId, 2> generic_kernels)
      : Reader(db, out.warnings, strings),
        out_(out),
        copy_names_(copy_names),
        memset_name_(memset_name),
        generic_kernels_(generic_kernels) {}

  void run() {
    readKernels();
    readCopies();
    readMemsets();
    readGraphs();
  }

 private:
  template <class Fill>
  void readActivities(const char* table, const std::vector<nsys_sql::Column>& columns, const char* what,
                      ActivityKind kind, Fill&& fill) {
    std::string missing;
    size_t untimed = 0;
    std::string sql = nsys_sql::selectColumns(db_, table, columns, "", missing);
    // Room for every row: the kernels of a whole run are millions, and a table grown by
    // doubling moves them again and again. Pages no row touches are never mapped.
    if (!sql.empty()) out_.activities.reserve(out_.activities.size() + rowsAtMost(table));
    forEachRow(sql, missing, what, false, [&](Statement& s) {
      // nsys writes integer ns: a row whose times are text or real is not from it (a damaged or
      // hand-made file); it is left out, and counted, rather than read as time 0.
      if (!s.isInteger(0) || !s.isInteger(1)) {
        ++untimed;
        return;
      }
      model::GpuActivity a;
      a.kind = kind;
      a.start_ns = s.int64(0);
      a.end_ns = s.int64(1);  // as recorded: one ending before it starts is dropped and counted later
      a.pid = static_cast<uint32_t>(pidOf(s.int64(2)));
      a.correlation = s.int64(3, -1);
      fill(s, a);
      out_.activities.push_back(a);
    });
    if (untimed > 0)
      out_.warnings.push_back(std::to_string(untimed) + " " + what + " rows of " + table +
                              " have no integer start/end times and were left out (not written by nsys?)");
  }

  uint32_t launchConfig(const Statement& s, int first) {
    model::LaunchConfig c;
    for (int i = 0; i < 3; ++i) {
      c.grid[static_cast<size_t>(i)] = static_cast<uint32_t>(s.int64(first + i));
      c.block[static_cast<size_t>(i)] = static_cast<uint32_t>(s.int64(first + 3 + i));
    }
    if (c == model::LaunchConfig{}) return 0;
    auto [it, added] = config_ids_.emplace(c, static_cast<uint32_t>(out_.launch_configs.size()));
    if (added) out_.launch_configs.push_back(c);
    return it->second;
  }

  void readKernels() {
    // CUTLASS kernels (cuDNN's convolutions, cuBLAS's GEMMs) are all "Kernel" or "Kernel2" by
    // their short name: their demangled name says which ("cutlass__5x_cudnn::Kernel<cutlass_
    // tensorop_bf16_s16816fprop_...>").
    readActivities("CUPTI_ACTIVITY_KIND_KERNEL", nsys_sql::kKernel, "kernels", ActivityKind::Kernel,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.name = s.isNull(4) ? str(s, 5) : str(s, 4);
                     if ((a.name == generic_kernels_[0] || a.name == generic_kernels_[1]) && !s.isNull(5))
                       a.name = str(s, 5);
                     a.device = static_cast<uint32_t>(s.int64(6));
                     a.stream = static_cast<uint32_t>(s.int64(7));
                     a.launch_config = launchConfig(s, 8);
                   });
  }

  void readCopies() {
    readActivities("CUPTI_ACTIVITY_KIND_MEMCPY", nsys_sql::kMemcpy, "memory copies", ActivityKind::Memcpy,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.device = static_cast<uint32_t>(s.int64(4));
                     a.stream = static_cast<uint32_t>(s.int64(5));
                     a.bytes = static_cast<uint64_t>(s.int64(6));
                     a.copy = copyKindOf(s.int64(7));
                     a.src = s.isNull(8) ? MemoryKind::Unknown : memoryKindOf(s.int64(8));
                     a.dst = s.isNull(9) ? MemoryKind::Unknown : memoryKindOf(s.int64(9));
                     a.name = copy_names_[static_cast<size_t>(a.copy)];
                   });
  }

  void readMemsets() {
    readActivities("CUPTI_ACTIVITY_KIND_MEMSET", nsys_sql::kMemset, "memsets", ActivityKind::Memset,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.device = static_cast<uint32_t>(s.int64(4));
                     a.stream = static_cast<uint32_t>(s.int64(5));
                     a.bytes = static_cast<uint64_t>(s.int64(6));
                     a.name = memset_name_;
                   });
  }

  void readGraphs() {
    readActivities("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", nsys_sql::kGraph, "CUDA graph launches", ActivityKind::Graph,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.device = static_cast<uint32_t>(s.int64(4));
                     a.stream = static_cast<uint32_t>(s.int64(5));
                     out_.graphs.emplace_back(out_.activities.size(), s.int64(6));
                   });
  }

  struct ConfigHash {
    size_t operator()(const model::LaunchConfig& c) const {
      size_t h = 0;
      for (uint32_t v : c.grid) h = h * 1000003u ^ v;
      for (uint32_t v : c.block) h = h * 1000003u ^ v;
      return h;
    }
  };

  ActivityTables& out_;
  std::array<model::StringId, 6> copy_names_;
  model::StringId memset_name_;
  std::array<model::StringId, 2> generic_kernels_;  // "Kernel", "Kernel2"
  std::unordered_map<model::LaunchConfig, uint32_t, ConfigHash> config_ids_;
};

// The NVTX domains' rows.
class DomainReader : Reader {
 public:
  DomainReader(Database& db, std::vector<DomainRow>& out, std::vector<std::string>& warnings,
               const std::unordered_map<int64_t, model::StringId>& strings)
      : Reader(db, warnings, strings), out_(out) {}

  void run() {
    std::string missing;
    std::string sql = nsys_sql::selectColumns(db_, "NVTX_EVENTS", nsys_sql::kNvtx, "", missing);
    if (sql.empty()) return;
    forEachRow(sql + nsys_sql::kNvtxDomainRows, missing, "NVTX domains", false, [&](Statement& s) {
      out_.push_back({s.isNull(3) ? -1 : pidOf(s.int64(3)), s.int64(6), std::string(s.text(4)), str(s, 5)});
    });
  }

 private:
  std::vector<DomainRow>& out_;
};

}  // namespace

void readNvtxDomainRows(Database& db, std::vector<DomainRow>& out, std::vector<std::string>& warnings,
                        const std::unordered_map<int64_t, model::StringId>& strings) {
  DomainReader(db, out, warnings, strings).run();
}

void readActivityTables(Database& db, ActivityTables& out, const std::unordered_map<int64_t, model::StringId>& strings,
                        const std::array<model::StringId, 6>& copy_names, model::StringId memset_name,
                        std::array<model::StringId, 2> generic_kernels) {
  ActivityReader(db, out, strings, copy_names, memset_name, generic_kernels).run();
}

}  // namespace sightline::ingest::nsys
