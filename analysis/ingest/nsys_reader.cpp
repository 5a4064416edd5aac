// The nsys SQLite reader. One pass per table into the model; joins happen in memory
// (attribution), never in SQL: nsys creates no indexes.
#include "analysis/ingest/nsys_reader.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "analysis/ingest/nsys_sql.h"
#include "analysis/ingest/sqlite.h"

namespace sightline::ingest {
namespace {

using model::ActivityKind;
using model::CopyKind;
using model::MemoryKind;
using model::SyncKind;

constexpr int64_t kNvtxMark = 34;
constexpr const char* kBacktraceDomain = "Python Backtrace on CUDA";
constexpr const char* kSamplingDomain = "Python Periodic Sampling";

int64_t pidOf(int64_t global) { return (global >> 24) & 0xFFFFFF; }
int64_t tidOf(int64_t global) { return global & 0xFFFFFF; }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string_view stripVersion(std::string_view name) {
  auto v = name.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

SyncKind syncKindOf(std::string_view n) {
  if (n == "cudaDeviceSynchronize" || n == "cuCtxSynchronize") return SyncKind::Device;
  if (n == "cudaStreamSynchronize" || n == "cuStreamSynchronize") return SyncKind::Stream;
  if (n == "cudaEventSynchronize" || n == "cuEventSynchronize") return SyncKind::Event;
  if (n == "cudaMemcpy" || n == "cudaMemcpy2D" || n == "cudaMemcpy3D" || n == "cuMemcpyHtoD" || n == "cuMemcpyDtoH" ||
      n == "cuMemcpy" || n == "cudaMemcpyToSymbol" || n == "cudaMemcpyFromSymbol")
    return SyncKind::BlockingMemcpy;
  return SyncKind::None;
}

bool launchesWork(std::string_view n) {
  return n.find("Launch") != std::string_view::npos || n.find("Memcpy") != std::string_view::npos ||
         n.find("Memset") != std::string_view::npos;
}

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

const char* copyName(CopyKind k) {
  switch (k) {
    case CopyKind::HostToDevice:
      return "[memcpy HtoD]";
    case CopyKind::DeviceToHost:
      return "[memcpy DtoH]";
    case CopyKind::DeviceToDevice:
      return "[memcpy DtoD]";
    case CopyKind::HostToHost:
      return "[memcpy HtoH]";
    case CopyKind::PeerToPeer:
      return "[memcpy PtoP]";
    default:
      return "[memcpy]";
  }
}

uint32_t scalarSize(int64_t type) {
  switch (type) {
    case 1:
    case 2:
    case 11:
    case 12:
      return 1;
    case 3:
    case 4:
    case 13:
    case 14:
      return 2;
    case 5:
    case 6:
    case 15:
    case 16:
      return 4;
    default:
      return 8;  // long, long long, (u)int64, string handles, pointers
  }
}

uint64_t readUnsigned(std::string_view blob, size_t offset, uint32_t size) {
  uint64_t v = 0;
  std::memcpy(&v, blob.data() + offset, size);  // little-endian targets only, as nsys itself
  return v;
}

// Parses "aten::mm, seq = 12, op_id = 40, sizes = [...]" into op / seq / op_id.
void parseAutogradText(std::string_view text, model::NvtxRange& r, model::StringTable& strings) {
  auto comma = text.find(", ");
  bool has_fields = text.find("seq = ") != std::string_view::npos || text.find("op_id = ") != std::string_view::npos;
  if (!has_fields) return;
  r.op = strings.intern(text.substr(0, comma));
  auto number = [&](std::string_view key) -> int64_t {
    auto at = text.find(key);
    if (at == std::string_view::npos) return -1;
    int64_t v = 0;
    bool any = false;
    for (size_t i = at + key.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      v = v * 10 + (text[i] - '0');
      any = true;
    }
    return any ? v : -1;
  };
  r.seq = number(", seq = ");
  r.op_id = number("op_id = ");
}

class Reader {
 public:
  Reader(Database& db, model::Profile& profile) : db_(db), p_(profile) {}

  void run() {
    readMetadata();
    readStrings();
    readApiCalls();
    readKernels();
    readCopies();
    readMemsets();
    readGraphs();
    readNvtx();
    p_.sortAll();
    computeRangeDepths();
  }

 private:
  void warn(std::string w) { p_.info.warnings.push_back(std::move(w)); }

  // Runs `sql` (empty: skipped, `missing` says why) and calls `row` per row.
  template <class F>
  void forEachRow(const std::string& sql, const std::string& missing, const char* what, bool expected, F&& row) {
    if (sql.empty()) {
      if (expected) warn("no " + std::string(what) + " (" + missing + " is absent)");
      return;
    }
    std::string error;
    auto stmt = db_.prepare(sql, error);
    if (!stmt) {
      warn("cannot read " + std::string(what) + ": " + error);
      return;
    }
    for (;;) {
      auto s = stmt->step();
      if (s == Statement::Step::Done) return;
      if (s == Statement::Step::Error) {
        warn("stopped reading " + std::string(what) + " early: " + stmt->error());
        return;
      }
      row(*stmt);
    }
  }

  void readMetadata() {
    p_.info.format = "nsys-sqlite";
    std::string table = db_.hasTable("META_DATA_EXPORT") ? "META_DATA_EXPORT" : "EXPORT_META_DATA";
    auto value = [&](const char* name) -> std::string {
      if (!db_.hasTable(table)) return {};
      return db_.queryText(nsys_sql::metaValue(table, name)).value_or("");
    };
    p_.info.tool_version = value("EXPORT_PRODUCT_VERSION");
    p_.info.schema_version = value("EXPORT_SCHEMA_VERSION");
    p_.info.platform = value("EXPORT_PLATFORM");
    if (db_.hasTable("TARGET_INFO_GPU") && db_.hasColumn("TARGET_INFO_GPU", "name")) {
      std::string error;
      if (auto s = db_.prepare(nsys_sql::kGpuNames, error))
        while (s->step() == Statement::Step::Row) p_.info.gpus.emplace_back(s->text(0));
    }
  }

  void readStrings() {
    std::string missing;
    forEachRow(nsys_sql::selectColumns(db_, "StringIds", nsys_sql::kStringIds, "", missing), missing, "names", true,
               [&](Statement& s) { strings_[s.int64(0)] = p_.strings.intern(s.text(1)); });
  }

  model::StringId str(const Statement& s, int col) const {
    if (s.isNull(col)) return 0;
    auto it = strings_.find(s.int64(col));
    return it == strings_.end() ? 0 : it->second;
  }

  void readApiCalls() {
    // --cudabacktrace writes each backtraced call twice under one correlation id (an outer
    // unversioned row and the CUPTI row inside it): keep one call spanning both, named without
    // the version suffix; its start is the outer row's, which is where the Python mark sits.
    std::map<std::pair<int64_t, int64_t>, size_t> by_correlation;  // (pid, correlation) -> index
    for (const char* table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
      std::string missing;
      bool expected = std::strcmp(table, "CUPTI_ACTIVITY_KIND_RUNTIME") == 0;
      forEachRow(nsys_sql::selectColumns(db_, table, nsys_sql::kRuntime, "", missing), missing, "CUDA API calls",
                 expected, [&](Statement& s) {
                   model::ApiCall c;
                   c.start_ns = s.int64(0);
                   c.end_ns = std::max(c.start_ns, s.int64(1));
                   int64_t g = s.int64(2);
                   c.pid = pidOf(g);
                   c.tid = tidOf(g);
                   c.correlation = s.int64(3, -1);
                   std::string_view raw = p_.strings[str(s, 4)];
                   std::string_view name = stripVersion(raw);
                   c.name = p_.strings.intern(name);
                   c.sync = syncKindOf(name);
                   c.launches = launchesWork(name);
                   if (c.correlation > 0) {
                     auto key = std::make_pair(c.pid, c.correlation);
                     auto it = by_correlation.find(key);
                     if (it != by_correlation.end()) {
                       auto& kept = p_.api_calls[it->second];
                       kept.start_ns = std::min(kept.start_ns, c.start_ns);
                       kept.end_ns = std::max(kept.end_ns, c.end_ns);
                       return;
                     }
                     by_correlation[key] = p_.api_calls.size();
                   }
                   p_.api_calls.push_back(c);
                 });
    }
  }

  template <class Fill>
  void readActivities(const char* table, const std::vector<nsys_sql::Column>& columns, const char* what,
                      ActivityKind kind, Fill&& fill) {
    std::string missing;
    forEachRow(nsys_sql::selectColumns(db_, table, columns, "", missing), missing, what, false, [&](Statement& s) {
      model::GpuActivity a;
      a.kind = kind;
      a.start_ns = s.int64(0);
      a.end_ns = std::max(a.start_ns, s.int64(1));
      a.pid = pidOf(s.int64(2));
      a.correlation = s.int64(3, -1);
      fill(s, a);
      p_.activities.push_back(a);
    });
  }

  void readKernels() {
    readActivities("CUPTI_ACTIVITY_KIND_KERNEL", nsys_sql::kKernel, "kernels", ActivityKind::Kernel,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.name = s.isNull(4) ? str(s, 5) : str(s, 4);
                     a.device = static_cast<uint32_t>(s.int64(6));
                     a.stream = static_cast<uint32_t>(s.int64(7));
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
                     a.name = p_.strings.intern(copyName(a.copy));
                   });
  }

  void readMemsets() {
    readActivities("CUPTI_ACTIVITY_KIND_MEMSET", nsys_sql::kMemset, "memsets", ActivityKind::Memset,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.device = static_cast<uint32_t>(s.int64(4));
                     a.stream = static_cast<uint32_t>(s.int64(5));
                     a.bytes = static_cast<uint64_t>(s.int64(6));
                     a.name = p_.strings.intern("[memset]");
                   });
  }

  void readGraphs() {
    readActivities("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", nsys_sql::kGraph, "CUDA graph launches", ActivityKind::Graph,
                   [&](Statement& s, model::GpuActivity& a) {
                     a.device = static_cast<uint32_t>(s.int64(4));
                     a.stream = static_cast<uint32_t>(s.int64(5));
                     a.name = p_.strings.intern("[CUDA graph " + std::to_string(s.int64(6)) + "]");
                   });
    if (db_.hasTable("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")) p_.info.capabilities.push_back("cuda-graphs");
  }

  // Layouts of the Python payload schemas, read from NVTX_PAYLOAD_SCHEMA(_ENTRIE)S.
  std::map<std::string, PayloadLayout> readPayloadLayouts() {
    std::map<std::string, PayloadLayout> layouts;
    struct Entry {
      int64_t idx, type, offset;
      std::string name;
    };
    std::map<std::pair<int64_t, int64_t>, std::vector<Entry>> entries;               // (domain, schema)
    std::map<std::pair<int64_t, int64_t>, std::pair<std::string, int64_t>> schemas;  // -> name, size
    std::string missing;
    forEachRow(nsys_sql::selectColumns(db_, "NVTX_PAYLOAD_SCHEMAS", nsys_sql::kSchemas, "", missing), missing,
               "payload schemas", false, [&](Statement& s) {
                 schemas[{s.int64(0), s.int64(1)}] = {std::string(s.text(2)), s.int64(3)};
               });
    forEachRow(
        nsys_sql::selectColumns(db_, "NVTX_PAYLOAD_SCHEMA_ENTRIES", nsys_sql::kSchemaEntries, "", missing), missing,
        "payload schema entries", false, [&](Statement& s) {
          entries[{s.int64(0), s.int64(1)}].push_back({s.int64(2), s.int64(3), s.int64(5), std::string(s.text(4))});
        });
    for (const auto& [key, schema] : schemas) {
      if (schema.first != kBacktraceDomain && schema.first != kSamplingDomain) continue;
      PayloadLayout layout;
      bool count = false, frames = false;
      int64_t frame_schema = -1;
      for (const auto& e : entries[key]) {
        if (e.name == "Frames count") {
          layout.count_offset = static_cast<uint32_t>(e.offset);
          layout.count_size = scalarSize(e.type);
          count = true;
        } else if (e.name == "Frames") {
          layout.frames_offset = static_cast<uint32_t>(e.offset);
          frame_schema = e.type;
          frames = true;
        }
      }
      auto frame_key = std::make_pair(key.first, frame_schema);
      if (!count || !frames || !schemas.count(frame_key)) continue;
      layout.frame_size = static_cast<uint32_t>(schemas[frame_key].second);
      int found = 0;
      for (const auto& e : entries[frame_key]) {
        if (e.name == "Function")
          layout.function_offset = static_cast<uint32_t>(e.offset), layout.function_size = scalarSize(e.type), ++found;
        if (e.name == "File")
          layout.file_offset = static_cast<uint32_t>(e.offset), layout.file_size = scalarSize(e.type), ++found;
        if (e.name == "Line")
          layout.line_offset = static_cast<uint32_t>(e.offset), layout.line_size = scalarSize(e.type), ++found;
      }
      if (found == 3 && layout.frame_size > 0) layouts[schema.first] = layout;
    }
    return layouts;
  }

  void readNvtx() {
    if (!db_.hasTable("NVTX_EVENTS")) return;
    std::map<int64_t, std::string> domains;
    std::string missing;
    std::string sql = nsys_sql::selectColumns(db_, "NVTX_EVENTS", nsys_sql::kNvtx, "", missing);
    // Domains first (eventType 75 rows may come after the events that use them).
    forEachRow(sql.empty() ? "" : sql + nsys_sql::kNvtxDomainRows, missing, "NVTX domains", false, [&](Statement& s) {
      std::string name(s.text(4));
      if (name.empty()) name = p_.strings[str(s, 5)];
      domains[s.int64(6)] = name;
    });
    auto layouts = readPayloadLayouts();
    size_t marks_without_blob = 0, undecodable = 0, python_marks = 0;
    std::vector<RawFrame> raw;
    forEachRow(sql.empty() ? "" : sql + nsys_sql::kNvtxEventRows, missing, "NVTX events", false, [&](Statement& s) {
      int64_t type = s.int64(2);
      int64_t g = s.int64(3);
      auto domain_it = domains.find(s.int64(6));
      const std::string domain = domain_it == domains.end() ? "" : domain_it->second;
      if (type == kNvtxMark) {
        if (domain != kBacktraceDomain && domain != kSamplingDomain) return;
        ++python_marks;
        std::string_view blob = s.blob(7);
        if (blob.empty()) {
          ++marks_without_blob;
          return;
        }
        auto layout = layouts.find(domain);
        if (layout == layouts.end() || !decodeBacktracePayload(blob, layout->second, raw)) {
          ++undecodable;
          return;
        }
        model::PythonMark m;
        m.time_ns = s.int64(0);
        m.pid = pidOf(g);
        m.tid = tidOf(g);
        m.kind = domain == kSamplingDomain ? model::MarkKind::Sample : model::MarkKind::Backtrace;
        m.first_frame = static_cast<uint32_t>(p_.frames.size());
        m.frame_count = static_cast<uint32_t>(raw.size());
        for (const auto& f : raw) p_.frames.push_back({functionName(f.function_id), stringFor(f.file_id), f.line});
        p_.marks.push_back(m);
        return;
      }
      if (s.isNull(1)) return;  // an unfinished range
      model::NvtxRange r;
      r.start_ns = s.int64(0);
      r.end_ns = std::max(r.start_ns, s.int64(1));
      r.pid = pidOf(g);
      r.tid = tidOf(g);
      std::string_view text = s.text(4);
      r.text = text.empty() ? str(s, 5) : p_.strings.intern(text);
      r.domain = p_.strings.intern(domain);
      parseAutogradText(p_.strings[r.text], r, p_.strings);
      p_.ranges.push_back(r);
    });
    if (python_marks > 0) {
      p_.info.capabilities.push_back("python-backtraces");
      if (marks_without_blob == python_marks) {
        p_.info.has_blobs = false;
        warn(
            "the export has Python backtrace marks but no payloads, so no frames: export again with "
            "`nsys export --type sqlite --include-blobs=true -o run.sqlite run.nsys-rep`");
      } else if (marks_without_blob + undecodable > 0) {
        warn(std::to_string(marks_without_blob + undecodable) + " of " + std::to_string(python_marks) +
             " Python backtrace marks could not be decoded");
      }
    }
    bool autograd = std::any_of(p_.ranges.begin(), p_.ranges.end(), [](const auto& r) { return r.seq >= 0; });
    if (autograd) p_.info.capabilities.push_back("autograd-nvtx");
  }

  // Function names arrive XML-escaped (`&lt;module&gt;`).
  model::StringId functionName(uint64_t id) {
    model::StringId raw = stringFor(id);
    const std::string& text = p_.strings[raw];
    if (text.find('&') == std::string::npos) return raw;
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      auto try_entity = [&](const char* entity, char c) {
        size_t n = std::strlen(entity);
        if (text.compare(i, n, entity) != 0) return false;
        out += c;
        i += n - 1;
        return true;
      };
      if (!try_entity("&lt;", '<') && !try_entity("&gt;", '>') && !try_entity("&amp;", '&') &&
          !try_entity("&quot;", '"') && !try_entity("&apos;", '\''))
        out += text[i];
    }
    return p_.strings.intern(out);
  }

  model::StringId stringFor(uint64_t id) {
    auto it = strings_.find(static_cast<int64_t>(id));
    return it == strings_.end() ? p_.strings.intern("<string " + std::to_string(id) + ">") : it->second;
  }

  // Nesting depth of each range among the ranges of its thread (input sorted by pid, tid, start).
  void computeRangeDepths() {
    std::vector<int64_t> open_ends;
    int64_t pid = -1, tid = -1;
    for (auto& r : p_.ranges) {
      if (r.pid != pid || r.tid != tid) {
        open_ends.clear();
        pid = r.pid;
        tid = r.tid;
      }
      while (!open_ends.empty() && open_ends.back() <= r.start_ns) open_ends.pop_back();
      r.depth = static_cast<uint16_t>(std::min<size_t>(open_ends.size(), 65535));
      open_ends.push_back(r.end_ns);
    }
  }

  Database& db_;
  model::Profile& p_;
  std::unordered_map<int64_t, model::StringId> strings_;
};

}  // namespace

bool decodeBacktracePayload(std::string_view blob, const PayloadLayout& layout, std::vector<RawFrame>& frames) {
  frames.clear();
  // Header: four u64 { version, schema id, payload size, payload offset }.
  if (blob.size() < 32) return false;
  uint64_t payload_size = readUnsigned(blob, 16, 8);
  uint64_t payload_offset = readUnsigned(blob, 24, 8);
  if (payload_offset > blob.size() || payload_size > blob.size() - payload_offset) return false;
  std::string_view payload = blob.substr(payload_offset, payload_size);
  if (layout.count_offset + layout.count_size > payload.size()) return false;
  uint64_t count = readUnsigned(payload, layout.count_offset, layout.count_size);
  if (layout.frame_size == 0 ||
      count > (payload.size() - std::min<size_t>(payload.size(), layout.frames_offset)) / layout.frame_size)
    return false;
  for (uint64_t i = 0; i < count; ++i) {
    size_t base = layout.frames_offset + i * layout.frame_size;
    RawFrame f;
    f.function_id = readUnsigned(payload, base + layout.function_offset, layout.function_size);
    f.file_id = readUnsigned(payload, base + layout.file_offset, layout.file_size);
    f.line = static_cast<int32_t>(readUnsigned(payload, base + layout.line_offset, layout.line_size));
    frames.push_back(f);
  }
  return true;
}

LoadResult loadNsysSqlite(const std::string& path) {
  LoadResult result;
  std::string error;
  auto db = Database::openReadOnly(path, error);
  if (!db) {
    result.error = path + ": " + error;
    return result;
  }
  if (!db->hasTable("StringIds") || (!db->hasTable("META_DATA_EXPORT") && !db->hasTable("EXPORT_META_DATA") &&
                                     !db->hasTable("CUPTI_ACTIVITY_KIND_KERNEL"))) {
    result.error = path + ": not an Nsight Systems export (no StringIds / export metadata tables)";
    return result;
  }
  model::Profile profile;
  Reader(*db, profile).run();
  if (profile.activities.empty())
    profile.info.warnings.push_back("no GPU activity (kernels, copies, memsets, graphs) in the profile");
  result.profile = std::move(profile);
  return result;
}

}  // namespace sightline::ingest
