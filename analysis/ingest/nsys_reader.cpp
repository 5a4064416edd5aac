// The nsys SQLite reader. One pass per table into the model; joins happen in memory
// (attribution), never in SQL: nsys creates no indexes.
#include "analysis/ingest/nsys_reader.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "analysis/ingest/cuda_api.h"
#include "analysis/ingest/nsys_activities.h"
#include "analysis/ingest/nsys_api_calls.h"
#include "analysis/ingest/nsys_nvtx.h"
#include "analysis/ingest/nsys_rows.h"
#include "analysis/ingest/nsys_sql.h"
#include "analysis/ingest/sqlite.h"
#include "analysis/ingest/stream_captures.h"
#include "analysis/model/sorted_runs.h"

namespace sightline::ingest {
namespace {

using nsys::ActivityTables;
using nsys::DomainRow;
using nsys::kBacktraceDomain;
using nsys::kSamplingDomain;
using nsys::NvtxContext;
using nsys::NvtxDomain;
using nsys::NvtxPass;
using nsys::pidOf;
using nsys::RankFields;
using nsys::Reader;
using nsys::readUnsigned;
using nsys::tidOf;

using model::ActivityKind;
using model::CopyKind;
using model::MemoryKind;
using model::SyncKind;

// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass: a driver call, and --cudabacktrace's twin row.

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

// Everything else, on the caller's thread: metadata, names, API calls, NVTX; it runs the
// activity reader on a second connection meanwhile ("readers may use both cores").

class ProfileReader : Reader {
 public:
  ProfileReader(Database& db, const std::string& path, model::Profile& profile, const LoadProgress& progress,
                const NamesRead& names_read)
      : Reader(db, profile.info.warnings, string_ids_),
        path_(path),
        p_(profile),
        progress_(progress),
        names_read_(names_read) {}

  void run() {
    readMetadata();
    readStrings();
    if (names_read_) names_read_(p_.strings);
    report(std::to_string(string_ids_.size()) + " names read; reading GPU activities and CUDA API calls", 10);
    std::array<model::StringId, 6> copy_names{};
    for (auto k : {CopyKind::Unknown, CopyKind::HostToDevice, CopyKind::DeviceToHost, CopyKind::DeviceToDevice,
                   CopyKind::HostToHost, CopyKind::PeerToPeer})
      copy_names[static_cast<size_t>(k)] = p_.strings.intern(copyName(k));
    model::StringId memset_name = p_.strings.intern("[memset]");
    std::array<model::StringId, 2> generic_kernels = {p_.strings.intern("Kernel"), p_.strings.intern("Kernel2")};

    ActivityTables tables;
    std::vector<uint64_t> launched;  // (pid, correlation) of the GPU activities, sorted
    std::string error;
    auto second = Database::openReadOnly(path_, error);
    std::thread worker;
    if (second) {
      worker = std::thread([&] {
        nsys::readActivityTables(*second, tables, string_ids_, copy_names, memset_name, generic_kernels);
        launched = launchedKeys(tables.activities);
      });
    }
    // The NVTX domains take a scan of the whole NVTX table: on a third connection and thread, which
    // fills whatever the other two leave of both cores.
    std::vector<std::string> domain_warnings;
    std::optional<Database> third = second ? Database::openReadOnly(path_, error) : std::nullopt;
    std::jthread domains;
    if (third)
      domains = std::jthread([&] { nsys::readNvtxDomainRows(*third, domain_rows_, domain_warnings, string_ids_); });
    readApiCalls();
    readMemoryUsage();
    orderCallsByCorrelation();
    if (worker.joinable()) {
      worker.join();
    } else {
      nsys::readActivityTables(db_, tables, string_ids_, copy_names, memset_name, generic_kernels);
      launched = launchedKeys(tables.activities);
    }
    if (domains.joinable())
      domains.join();
    else
      nsys::readNvtxDomainRows(db_, domain_rows_, domain_warnings, string_ids_);
    p_.activities = std::move(tables.activities);
    p_.launch_configs = std::move(tables.launch_configs);
    for (auto& w : tables.warnings) warn(std::move(w));
    for (auto& w : domain_warnings) warn(std::move(w));
    for (const auto& [index, graph] : tables.graphs)
      p_.activities[index].name = p_.strings.intern("[CUDA graph " + std::to_string(graph) + "]");
    if (db_.hasTable("CUPTI_ACTIVITY_KIND_GRAPH_TRACE")) p_.info.capabilities.push_back("cuda-graphs");
    // Graphs traced whole (nsys's default): what a replay ran is one record on the line that
    // launched it; the lines of its kernels are not in the capture.
    if (!tables.graphs.empty())
      warn(std::to_string(tables.graphs.size()) +
           " CUDA graph replays were traced as whole graphs (nsys's default --cuda-graph-trace=graph): each "
           "replay's GPU time is on the line that launched it, not on the lines of its kernels, and which kernels "
           "it ran is not known; profile with --cuda-graph-trace=node (sightline capture does) to put each kernel "
           "on its line");

    report(std::to_string(p_.activities.size()) + " GPU activities, " + std::to_string(p_.api_calls.size()) +
               " CUDA API calls read; reading NVTX ranges",
           40);
    keepCostlyApiCalls(launched);
    readNvtx();
    report(std::to_string(p_.ranges.size()) + " NVTX ranges, " + std::to_string(p_.marks.size()) +
               " Python backtraces and samples read",
           60);
    // The ranges (the most rows) sort on a second thread while the other tables do here.
    std::thread ranges([&] {
      p_.sortRanges();
      computeRangeDepths();
    });
    readProcesses();
    p_.sortRows();
    ranges.join();
  }

 private:
  void report(const std::string& message, int percent) {
    if (progress_) progress_(message, percent);
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
    // nsys's own diagnostics: whether a cudaProfilerApi range started the capture.
    if (db_.hasTable("DIAGNOSTIC_EVENT") && db_.hasColumn("DIAGNOSTIC_EVENT", "text")) {
      std::string error;
      if (auto s =
              db_.prepare("SELECT text FROM DIAGNOSTIC_EVENT WHERE text LIKE '%cudaProfilerStart%invoked%'", error))
        if (s->step() == Statement::Step::Row) p_.info.capabilities.push_back("capture-range");
    }
    // The wall clock at the session's start: the export's times count from it.
    if (db_.hasTable("TARGET_INFO_SESSION_START_TIME") &&
        db_.hasColumn("TARGET_INFO_SESSION_START_TIME", "utcEpochNs")) {
      std::string error;
      if (auto s = db_.prepare("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", error))
        if (s->step() == Statement::Step::Row) p_.info.utc_start_ns = std::max<int64_t>(0, s->int64(0));
    }
    if (db_.hasTable("TARGET_INFO_GPU") && db_.hasColumn("TARGET_INFO_GPU", "name")) {
      std::string error;
      if (auto s = db_.prepare(nsys_sql::kGpuNames, error))
        while (s->step() == Statement::Step::Row) p_.info.gpus.emplace_back(s->text(0));
      if (db_.hasColumn("TARGET_INFO_GPU", "uuid"))
        if (auto s = db_.prepare(nsys_sql::kGpuUuids, error))
          while (s->step() == Statement::Step::Row) p_.info.gpu_uuids.emplace_back(s->text(0));
    }
    // The machine's name, which tells the same GPU number on two nodes apart.
    if (db_.hasTable("TARGET_INFO_SYSTEM_ENV") && db_.hasColumn("TARGET_INFO_SYSTEM_ENV", "name") &&
        db_.hasColumn("TARGET_INFO_SYSTEM_ENV", "value")) {
      std::string error;
      if (auto s = db_.prepare(nsys_sql::kHostName, error))
        if (s->step() == Statement::Step::Row) p_.info.host = s->text(0);
    }
  }

  void readStrings() {
    std::string missing;
    forEachRow(nsys_sql::selectColumns(db_, "StringIds", nsys_sql::kStringIds, "", missing), missing, "names", true,
               [&](Statement& s) { string_ids_[s.int64(0)] = p_.strings.intern(s.text(1)); });
  }

  // All rows first; --cudabacktrace twins and the filter are resolved afterwards.
  void readApiCalls() { nsys::readApiCalls(db_, path_, p_, string_ids_); }

  // --cudabacktrace writes each backtraced call twice under one correlation id (an outer
  // unversioned row and the CUPTI row inside it): keep one call spanning both, starting where
  // the outer row (and the Python mark) starts. Then keep only calls with a cost to charge:
  // those that launch GPU work (by name, or because an activity names them) and syncs.
  // Device memory the CUDA driver gave out and took back (--cuda-memory-usage=true): for
  // PyTorch, the caching allocator's pool growing (cudaMalloc) and shrinking (cudaFree). Their
  // CUDA calls are kept for their lines.
  void readMemoryUsage() {
    const char* table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
    if (!db_.hasTable(table)) return;
    for (const char* column :
         {"start", "globalPid", "deviceId", "address", "bytes", "memKind", "memoryOperationType", "correlationId"})
      if (!db_.hasColumn(table, column)) return warn(std::string(table) + " lacks its " + column + " column: not read");
    std::string error;
    auto st = db_.prepare(
        "SELECT start, globalPid, deviceId, address, bytes, memoryOperationType, correlationId FROM "
        "CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind = 2 ORDER BY start",
        error);
    if (!st) return warn("CUDA_GPU_MEMORY_USAGE_EVENTS: " + error);
    while (st->step() == Statement::Step::Row) {
      int64_t bytes = st->int64(4), op = st->int64(5), device = st->int64(2);
      if (bytes <= 0 || bytes > (int64_t{1} << 44) || (op != 0 && op != 1) || device < 0 || device >= 1024) continue;
      model::MemoryUse u;
      u.time_ns = st->int64(0);
      u.pid = static_cast<uint32_t>(pidOf(st->int64(1)));
      u.device = static_cast<int32_t>(device);
      u.addr = static_cast<uint64_t>(st->int64(3));
      u.bytes = op == 0 ? bytes : -bytes;
      u.segment = true;
      u.correlation = st->isNull(6) ? -1 : st->int64(6);
      if (u.correlation > 0) allocating_.push_back(model::correlationKey(u.pid, u.correlation));
      p_.memory_uses.push_back(u);
    }
    std::sort(allocating_.begin(), allocating_.end());
    if (!p_.memory_uses.empty()) p_.info.capabilities.push_back("cuda-memory-usage");
  }

  static std::vector<uint64_t> launchedKeys(const std::vector<model::GpuActivity>& activities) {
    std::vector<uint64_t> out;
    out.reserve(activities.size());
    for (const auto& a : activities)
      if (a.correlation > 0) out.push_back(model::correlationKey(a.pid, a.correlation));
    std::sort(out.begin(), out.end());
    return out;
  }

  // The calls with a correlation id by (process, id), the others first in their order: the
  // records of one call (nsys may split one) come together. Many calls: each half sorted on its
  // own core, then merged (stable, as one sort of the whole would be).
  void orderCallsByCorrelation() {
    auto less = [](const model::ApiCall& a, const model::ApiCall& b) {
      bool ca = a.correlation > 0, cb = b.correlation > 0;
      if (ca != cb) return ca < cb;
      if (!ca) return false;
      return std::tie(a.pid, a.correlation) < std::tie(b.pid, b.correlation);
    };
    auto& calls = p_.api_calls;
    if (calls.size() < 100'000) return model::stableSortRuns(calls.begin(), calls.end(), less);
    auto middle = calls.begin() + static_cast<std::ptrdiff_t>(calls.size() / 2);
    std::jthread second([&] { model::stableSortRuns(middle, calls.end(), less); });
    model::stableSortRuns(calls.begin(), middle, less);
    second.join();
    std::inplace_merge(calls.begin(), middle, calls.end(), less);
  }

  // The calls that launched GPU work (`launched`, sorted), synchronized or allocated, each one
  // record; the calls in orderCallsByCorrelation's order.
  void keepCostlyApiCalls(const std::vector<uint64_t>& launched) {
    auto& calls = p_.api_calls;
    StreamCaptures captures(calls, p_.strings);
    size_t out = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      model::ApiCall c = calls[i];
      if (c.correlation > 0) {
        while (i + 1 < calls.size() && calls[i + 1].pid == c.pid && calls[i + 1].correlation == c.correlation) {
          ++i;
          c.start_ns = std::min(c.start_ns, calls[i].start_ns);
          c.end_ns = std::max(c.end_ns, calls[i].end_ns);
        }
        if (std::binary_search(launched.begin(), launched.end(), model::correlationKey(c.pid, c.correlation)))
          c.launches = true;
        else if (c.launches && captures.inside(c))
          c.launches = false;  // recorded into a graph: its work runs when the graph is launched
      }
      bool allocates = c.correlation > 0 && std::binary_search(allocating_.begin(), allocating_.end(),
                                                               model::correlationKey(c.pid, c.correlation));
      if (c.launches || c.sync != SyncKind::None || allocates) calls[out++] = c;
    }
    calls.resize(out);
    calls.shrink_to_fit();
  }

  // Layouts of the Python payload schemas, read from NVTX_PAYLOAD_SCHEMA(_ENTRIE)S, by domain
  // name. Every process of a report writes its own rows of these tables (and the tables have no
  // process column): identical definitions are read once; where processes differ, each distinct
  // layout is kept and a process's marks are decoded with the one that fits them. NCCL's
  // payload fields that name a rank go to `rank_fields`.
  std::map<std::string, std::vector<PayloadLayout>> readPayloadLayouts(
      std::map<std::pair<int64_t, int64_t>, RankFields>& rank_fields) {
    struct Entry {
      int64_t idx, type, offset;
      std::string name;
    };
    using Key = std::pair<int64_t, int64_t>;  // (domain, schema)
    using Definition = std::vector<Entry>;
    std::map<Key, std::vector<Definition>> definitions;  // distinct ones, in the order seen
    std::map<Key, std::string> names;
    std::map<Key, std::vector<int64_t>> sizes;  // distinct payload sizes
    std::string missing;
    forEachRow(nsys_sql::selectColumns(db_, "NVTX_PAYLOAD_SCHEMAS", nsys_sql::kSchemas, "", missing), missing,
               "payload schemas", false, [&](Statement& s) {
                 Key key{s.int64(0), s.int64(1)};
                 if (!s.text(2).empty()) names[key] = std::string(s.text(2));
                 auto& v = sizes[key];
                 if (std::find(v.begin(), v.end(), s.int64(3)) == v.end()) v.push_back(s.int64(3));
               });
    std::map<Key, Definition> open;  // the definition being read per key; a new one starts when idx restarts
    auto close = [&](const Key& key) {
      auto& d = open[key];
      if (d.empty()) return;
      auto& all = definitions[key];
      auto same = [&](const Definition& o) {
        return o.size() == d.size() && std::equal(o.begin(), o.end(), d.begin(), [](const Entry& a, const Entry& b) {
                 return a.idx == b.idx && a.type == b.type && a.offset == b.offset && a.name == b.name;
               });
      };
      if (std::none_of(all.begin(), all.end(), same)) all.push_back(d);
      d.clear();
    };
    forEachRow(nsys_sql::selectColumns(db_, "NVTX_PAYLOAD_SCHEMA_ENTRIES", nsys_sql::kSchemaEntries, "", missing),
               missing, "payload schema entries", false, [&](Statement& s) {
                 Key key{s.int64(0), s.int64(1)};
                 Entry e{s.int64(2), s.int64(3), s.int64(5), std::string(s.text(4))};
                 auto& d = open[key];
                 if (!d.empty() && e.idx <= d.back().idx) close(key);
                 d.push_back(std::move(e));
               });
    for (auto& [key, d] : open) close(key);
    // NCCL's communicator-init payloads carry "Rank" and "No. of ranks".
    for (const auto& [key, defs] : definitions)
      for (const auto& d : defs) {
        RankFields f;
        for (const auto& e : d) {
          if (e.name == "Rank") f.rank_offset = e.offset, f.rank_size = scalarSize(e.type);
          if (e.name == "No. of ranks") f.size_offset = e.offset, f.size_size = scalarSize(e.type);
        }
        if (f.rank_offset >= 0) rank_fields[key] = f;
      }

    std::map<std::string, std::vector<PayloadLayout>> layouts;
    for (const auto& [key, name] : names) {
      if (name != kBacktraceDomain && name != kSamplingDomain) continue;
      for (const auto& outer : definitions[key]) {
        PayloadLayout base;
        bool count = false, frames = false;
        int64_t frame_schema = -1;
        for (const auto& e : outer) {
          if (e.name == "Frames count") {
            base.count_offset = static_cast<uint32_t>(e.offset);
            base.count_size = scalarSize(e.type);
            count = true;
          } else if (e.name == "Frames") {
            base.frames_offset = static_cast<uint32_t>(e.offset);
            frame_schema = e.type;
            frames = true;
          }
        }
        Key frame_key{key.first, frame_schema};
        if (!count || !frames) continue;
        for (const auto& inner : definitions[frame_key]) {
          PayloadLayout layout = base;
          int found = 0;
          for (const auto& e : inner) {
            if (e.name == "Function")
              layout.function_offset = static_cast<uint32_t>(e.offset), layout.function_size = scalarSize(e.type),
              ++found;
            if (e.name == "File")
              layout.file_offset = static_cast<uint32_t>(e.offset), layout.file_size = scalarSize(e.type), ++found;
            if (e.name == "Line")
              layout.line_offset = static_cast<uint32_t>(e.offset), layout.line_size = scalarSize(e.type), ++found;
          }
          if (found != 3) continue;
          for (int64_t size : sizes[frame_key]) {
            if (size <= 0) continue;
            layout.frame_size = static_cast<uint32_t>(size);
            auto& v = layouts[name];
            if (std::find(v.begin(), v.end(), layout) == v.end()) v.push_back(layout);
          }
        }
      }
    }
    return layouts;
  }

  // NVTX events: the domains (read by the activity thread) and payload layouts first, then the
  // events in two halves by rowid, on two connections at once. The second half goes into a
  // profile of its own whose strings start as a copy of ours, merged after the first half, so
  // ranges and marks keep the table's order.
  void readNvtx() {
    if (!db_.hasTable("NVTX_EVENTS")) return;
    NvtxContext context;
    for (const auto& row : domain_rows_) {
      std::string name = row.name.empty() ? p_.strings[row.text_id] : row.name;
      NvtxDomain d{p_.strings.intern(name)};
      if (name == kBacktraceDomain) d.python = NvtxDomain::Backtrace;
      if (name == kSamplingDomain) d.python = NvtxDomain::Sampling;
      context.domains[{row.pid, row.id}] = d;
    }
    context.layouts = readPayloadLayouts(context.rank_fields);
    context.call_starts.reserve(p_.api_calls.size());
    for (const auto& c : p_.api_calls) context.call_starts.emplace_back(model::threadKey(c.pid, c.tid), c.start_ns);
    std::sort(context.call_starts.begin(), context.call_starts.end());

    std::string missing;
    std::string sql = nsys_sql::selectColumns(db_, "NVTX_EVENTS", nsys_sql::kNvtx, "", missing);
    if (!sql.empty()) sql += nsys_sql::kNvtxEventRows;
    std::string error;
    int64_t last_row = 0;  // stays 0 where rowids cannot be read (a view) or columns lack: one pass
    auto st = sql.empty() ? std::nullopt : db_.prepare("SELECT max(rowid) FROM NVTX_EVENTS", error);
    if (st && st->step() == Statement::Step::Row) last_row = st->int64(0, 0);
    auto second = last_row > 1 ? Database::openReadOnly(path_, error) : std::nullopt;
    NvtxPass first(db_, p_, context, string_ids_);
    if (!second) {
      first.run(sql, missing);
      return finishNvtx({&first});
    }
    int64_t half = last_row / 2;
    model::Profile side;
    side.strings = p_.strings;
    size_t shared_strings = side.strings.size();
    NvtxPass later(*second, side, context, string_ids_);
    std::thread worker([&] { later.run(sql + " AND rowid > " + std::to_string(half), missing); });
    first.run(sql + " AND rowid <= " + std::to_string(half), missing);
    worker.join();
    mergeNvtx(side, shared_strings);
    finishNvtx({&first, &later});
  }

  // Adds a pass's ranges, marks, frames and capture events (ids it interned past `shared`
  // interned again here) after ours.
  void mergeNvtx(model::Profile& part, size_t shared) {
    std::vector<model::StringId> ids = nsys::idsOfPart(p_.strings, part, shared);
    p_.ranges.reserve(p_.ranges.size() + part.ranges.size());
    for (auto r : part.ranges) {
      r.text = ids[r.text], r.op = ids[r.op], r.domain = ids[r.domain];
      p_.ranges.push_back(r);
    }
    auto frame_base = static_cast<uint32_t>(p_.frames.size());
    for (auto f : part.frames) {
      f.function = ids[f.function], f.file = ids[f.file];
      p_.frames.push_back(f);
    }
    for (auto m : part.marks) {
      m.first_frame += frame_base;
      p_.marks.push_back(m);
    }
    p_.capture.addAll(part.capture, [](uint32_t pid) { return pid; });
    for (auto& w : part.info.warnings) warn(std::move(w));
  }

  void finishNvtx(const std::vector<const NvtxPass*>& passes) {
    size_t marks_without_blob = 0, undecodable = 0, python_marks = 0;
    bool autograd = false;
    for (const auto* pass : passes) {
      marks_without_blob += pass->marks_without_blob, undecodable += pass->undecodable;
      python_marks += pass->python_marks, autograd = autograd || pass->autograd;
      for (const auto& [pid, rank] : pass->ranks) ranks_.emplace(pid, rank);
    }
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
    if (autograd) p_.info.capabilities.push_back("autograd-nvtx");
  }

  // Processes by name (PROCESSES), with the ranks NCCL recorded.
  void readProcesses() {
    std::map<uint32_t, model::ProcessInfo> by_pid;
    if (db_.hasTable("PROCESSES") && db_.hasColumn("PROCESSES", "globalPid") && db_.hasColumn("PROCESSES", "name")) {
      std::string error;
      if (auto st = db_.prepare("SELECT globalPid, name FROM PROCESSES", error))
        while (st->step() == Statement::Step::Row) {
          auto pid = static_cast<uint32_t>(pidOf(st->int64(0)));
          by_pid[pid] = {pid, std::string(st->text(1)), -1, -1};
        }
    }
    for (const auto& [pid, rank] : ranks_) {
      auto& p = by_pid[pid];
      p.pid = pid;
      std::tie(p.rank, p.world_size) = rank;
      p.rank_source = "NCCL";
    }
    for (auto& [pid, p] : by_pid) p_.info.processes.push_back(std::move(p));
  }

  // Nesting depth of each range among the ranges of its thread (input sorted by pid, tid, start).
  void computeRangeDepths() {
    std::vector<int64_t> open_ends;
    uint64_t thread = ~0ull;
    for (auto& r : p_.ranges) {
      if (model::threadKey(r.pid, r.tid) != thread) {
        open_ends.clear();
        thread = model::threadKey(r.pid, r.tid);
      }
      while (!open_ends.empty() && open_ends.back() <= r.start_ns) open_ends.pop_back();
      r.depth = static_cast<uint16_t>(std::min<size_t>(open_ends.size(), 65535));
      open_ends.push_back(r.end_ns);
    }
  }

  std::unordered_map<int64_t, model::StringId> string_ids_;  // nsys StringIds.id -> ours
  std::string path_;
  model::Profile& p_;
  const LoadProgress& progress_;
  const NamesRead& names_read_;
  std::vector<uint64_t> allocating_;    // correlation keys of CUDA calls that allocated or freed device memory
  std::vector<DomainRow> domain_rows_;  // NVTX domains, read on a thread of their own
  std::map<uint32_t, std::pair<int32_t, int32_t>> ranks_;  // pid -> (rank, world size)
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

bool isNsysExport(const std::string& path, std::string& why) {
  auto db = Database::openReadOnly(path, why);
  if (!db) return false;
  if (!db->hasTable("StringIds")) {
    why = "no StringIds table: not an Nsight Systems export";
    return false;
  }
  return true;
}

LoadResult loadNsysSqlite(const std::string& path, const LoadProgress& progress, const NamesRead& names_read) {
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
  ProfileReader(*db, path, profile, progress, names_read).run();
  if (profile.activities.empty())
    profile.info.warnings.push_back("no GPU activity (kernels, copies, memsets, graphs) in the profile");
  result.profile = std::move(profile);
  return result;
}

}  // namespace sightline::ingest
