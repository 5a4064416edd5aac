// Reading an nsys export's rows (internal to analysis/ingest: nsys_reader, nsys_activities):
// the global thread id's parts, and a reader's base that runs a query and warns of what it
// could not read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/ingest/sqlite.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::nsys {

inline int64_t pidOf(int64_t global) { return (global >> 24) & 0xFFFFFF; }
inline int64_t tidOf(int64_t global) { return global & 0xFFFFFF; }

// A side pass's string ids as `into`'s: its first `shared` strings are a copy of `into`'s; those
// it interned after are interned into `into`.
inline std::vector<model::StringId> idsOfPart(model::StringTable& into, const model::Profile& part, size_t shared) {
  std::vector<model::StringId> ids(part.strings.size());
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = i < shared ? static_cast<model::StringId>(i) : into.intern(part.strings[static_cast<model::StringId>(i)]);
  return ids;
}

class Reader {
 public:
  Reader(Database& db, std::vector<std::string>& warnings, const std::unordered_map<int64_t, model::StringId>& strings)
      : db_(db), warnings_(warnings), strings_(strings) {}

 protected:
  void warn(std::string w) { warnings_.push_back(std::move(w)); }

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

  // How many rows `table` can hold, for a vector's room: its largest rowid, bounded by the
  // file's size (a row takes 8 bytes or more), since a rowid is any number a file gives; 0
  // where either cannot be read.
  size_t rowsAtMost(const std::string& table) const {
    auto one = [&](const std::string& sql) -> int64_t {
      std::string error;
      auto st = db_.prepare(sql, error);
      return st && st->step() == Statement::Step::Row ? st->int64(0, 0) : 0;
    };
    int64_t rows = one("SELECT max(rowid) FROM " + table);
    if (rows <= 0) return 0;
    int64_t pages = one("PRAGMA page_count"), page_size = one("PRAGMA page_size");
    if (pages <= 0 || page_size <= 0 || pages > (int64_t{1} << 40) / page_size) return 0;
    return static_cast<size_t>(std::min(rows, pages * page_size / 8));
  }

  model::StringId str(const Statement& s, int col) const {
    if (s.isNull(col)) return 0;
    auto it = strings_.find(s.int64(col));
    return it == strings_.end() ? 0 : it->second;
  }

  Database& db_;
  std::vector<std::string>& warnings_;
  const std::unordered_map<int64_t, model::StringId>& strings_;
};

}  // namespace sightline::ingest::nsys
