// The CUDA API calls of an nsys export.
#include "analysis/ingest/nsys_api_calls.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <thread>

#include "analysis/ingest/cuda_api.h"
#include "analysis/ingest/nsys_rows.h"
#include "analysis/ingest/nsys_sql.h"

namespace sightline::ingest::nsys {
namespace {

// CUPTI's event classes of a call record.
constexpr int64_t kDriverClass = 1;
constexpr int64_t kBacktraceClass = 67;

// One pass over a table of CUDA API calls (a range of its rowids) into `out`. A large table is
// read in two passes at once on two connections, each into its own profile; the second's calls
// are added after the first's (mergeApiCalls), so they keep the table's order.
class ApiPass : Reader {
 public:
  ApiPass(Database& db, model::Profile& out, const std::unordered_map<int64_t, model::StringId>& string_ids)
      : Reader(db, out.info.warnings, string_ids), p_(out) {}
  using Reader::rowsAtMost;

  // `runtime`: the runtime API's table (the driver API's otherwise).
  void run(const std::string& sql, const std::string& missing, bool runtime) {
    forEachRow(sql, missing, "CUDA API calls", runtime, [&](Statement& s) { row(s, runtime); });
  }

 private:
  void row(Statement& s, bool runtime) {
    model::ApiCall c;
    c.start_ns = s.int64(0);
    c.end_ns = std::max(c.start_ns, s.int64(1));
    int64_t g = s.int64(2);
    c.pid = static_cast<uint32_t>(pidOf(g));
    c.tid = static_cast<uint32_t>(tidOf(g));
    c.correlation = s.int64(3, -1);
    model::StringId raw = str(s, 4);
    // What the capture cost the host: each traced call, and each native stack.
    int64_t event_class = s.int64(5, 0);
    p_.capture.add(c.pid, c.start_ns,
                   event_class == kBacktraceClass            ? model::CaptureEvent::NativeBacktrace
                   : !runtime || event_class == kDriverClass ? model::CaptureEvent::DriverCall
                                                             : model::CaptureEvent::RuntimeCall);
    auto it = names_.find(raw);
    if (it == names_.end()) {
      std::string_view name = stripVersion(p_.strings[raw]);
      uint8_t flags = static_cast<uint8_t>(syncKindOf(name)) << 1 | (launchesWork(name) ? 1 : 0);
      it = names_.emplace(raw, std::make_pair(p_.strings.intern(name), flags)).first;
    }
    c.name = it->second.first;
    c.sync = static_cast<model::SyncKind>(it->second.second >> 1);
    c.launches = (it->second.second & 1) != 0;
    p_.api_calls.push_back(c);
  }

  model::Profile& p_;
  std::unordered_map<model::StringId, std::pair<model::StringId, uint8_t>> names_;  // raw -> stripped, flags
};

// Adds a pass's calls (names it interned past `shared` interned again) and capture events
// after `out`'s.
void mergeApiCalls(model::Profile& out, model::Profile& part, size_t shared) {
  std::vector<model::StringId> ids = idsOfPart(out.strings, part, shared);
  out.api_calls.reserve(out.api_calls.size() + part.api_calls.size());
  for (auto c : part.api_calls) {
    c.name = ids[c.name];
    out.api_calls.push_back(c);
  }
  out.capture.addAll(part.capture, [](uint32_t pid) { return pid; });
  for (auto& w : part.info.warnings) out.info.warnings.push_back(std::move(w));
}

}  // namespace

void readApiCalls(Database& db, const std::string& path, model::Profile& out,
                  const std::unordered_map<int64_t, model::StringId>& string_ids) {
  ApiPass first(db, out, string_ids);
  for (const char* table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
    std::string missing;
    bool runtime = std::strcmp(table, "CUPTI_ACTIVITY_KIND_RUNTIME") == 0;
    std::string sql = nsys_sql::selectColumns(db, table, nsys_sql::kRuntime, "", missing);
    std::string error;
    int64_t last_row = 0;  // stays 0 where rowids cannot be read (a view): one pass
    auto st = sql.empty() ? std::nullopt : db.prepare("SELECT max(rowid) FROM " + std::string(table), error);
    if (st && st->step() == Statement::Step::Row) last_row = st->int64(0, 0);
    auto second = last_row > 1 ? Database::openReadOnly(path, error) : std::nullopt;
    if (!second) {
      first.run(sql, missing, runtime);
      continue;
    }
    int64_t half = last_row / 2;
    // Room for every row: a table of millions grown by doubling moves its rows again and
    // again. Pages no row touches are never mapped.
    size_t rows = first.rowsAtMost(table);
    out.api_calls.reserve(out.api_calls.size() + rows);
    model::Profile side;
    side.api_calls.reserve(rows / 2 + 1);
    side.strings = out.strings;
    size_t shared_strings = side.strings.size();
    ApiPass later(*second, side, string_ids);
    std::jthread worker([&] { later.run(sql + " WHERE rowid > " + std::to_string(half), missing, runtime); });
    first.run(sql + " WHERE rowid <= " + std::to_string(half), missing, runtime);
    worker.join();
    mergeApiCalls(out, side, shared_strings);
  }
}

}  // namespace sightline::ingest::nsys
