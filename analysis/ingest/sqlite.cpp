// SQLite3 RAII wrapper. Databases open with mode=ro (never immutable: a profile may still be
// written by an exporter).
#include "analysis/ingest/sqlite.h"

#include <sqlite3.h>

#include <map>

namespace sightline::ingest {

Statement::Statement(Statement&& o) noexcept : stmt_(o.stmt_), db_(o.db_), error_(std::move(o.error_)) {
  o.stmt_ = nullptr;
}
Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    db_ = o.db_;
    error_ = std::move(o.error_);
    o.stmt_ = nullptr;
  }
  return *this;
}
Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement::Step Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return Step::Row;
  if (rc == SQLITE_DONE) return Step::Done;
  error_ = sqlite3_errmsg(db_);
  return Step::Error;
}

bool Statement::isNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
bool Statement::isInteger(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_INTEGER; }
int64_t Statement::int64(int column, int64_t if_null) const {
  // SQLite reads NULL as 0: the type is asked only where NULL reads as something else (a call
  // per column of a million rows).
  if (if_null == 0) return sqlite3_column_int64(stmt_, column);
  return isNull(column) ? if_null : sqlite3_column_int64(stmt_, column);
}
std::string_view Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  if (!p) return {};
  return {reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}
std::string_view Statement::blob(int column) const {
  const void* p = sqlite3_column_blob(stmt_, column);
  if (!p) return {};
  return {static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::optional<Database> Database::openReadOnly(const std::string& path, std::string& error) {
  Database db;
  // A URI: '%', '?' and '#' in the path are percent-encoded (else `run#1.sqlite` fails to open
  // and `run%41.sqlite` opens `runA.sqlite`).
  std::string uri = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xF];
      uri += kHex[static_cast<unsigned char>(c) & 0xF];
    } else {
      uri += c;
    }
  }
  // Immutable: no lock, no `-wal`/`-shm` made beside the file, and none found there applied (an
  // export is finished when it is read; one planted beside it must not change what is read).
  uri += "?mode=ro&immutable=1";
  // No mutex: a connection is used by one thread at a time (a reader's second thread opens its
  // own), and serialized mode locked and unlocked one for every column read (15% of a load).
  int rc = sqlite3_open_v2(uri.c_str(), &db.db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    error = db.db_ ? sqlite3_errmsg(db.db_) : "cannot open";
    return std::nullopt;
  }
  std::string prepare_error;
  auto tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')", prepare_error);
  if (!tables) {
    error = "not an SQLite database (" + prepare_error + ")";
    return std::nullopt;
  }
  for (;;) {
    auto s = tables->step();
    if (s == Statement::Step::Error) {
      error = "cannot list tables: " + tables->error();
      return std::nullopt;
    }
    if (s == Statement::Step::Done) break;
    db.tables_.insert(std::string(tables->text(0)));
  }
  return db;
}

Database::Database(Database&& o) noexcept : db_(o.db_), tables_(std::move(o.tables_)), columns_(std::move(o.columns_)) {
  o.db_ = nullptr;
}
Database& Database::operator=(Database&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close_v2(db_);
    db_ = o.db_;
    tables_ = std::move(o.tables_);
    columns_ = std::move(o.columns_);
    o.db_ = nullptr;
  }
  return *this;
}
Database::~Database() {
  if (db_) sqlite3_close_v2(db_);
}

std::optional<Statement> Database::prepare(std::string_view sql, std::string& error) const {
  Statement s;
  s.db_ = db_;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s.stmt_, nullptr) != SQLITE_OK) {
    error = std::string(sqlite3_errmsg(db_)) + " in: " + std::string(sql.substr(0, 120));
    return std::nullopt;
  }
  return s;
}

bool Database::hasTable(const std::string& table) const { return tables_.count(table) > 0; }

const std::set<std::string>& Database::columns(const std::string& table) const {
  if (!columns_) columns_ = std::make_unique<std::map<std::string, std::set<std::string>>>();
  auto it = columns_->find(table);
  if (it != columns_->end()) return it->second;
  auto& cols = (*columns_)[table];
  if (!hasTable(table)) return cols;
  std::string error;
  // Table names come from sqlite_master, never from input text.
  if (auto s = prepare("PRAGMA table_info(\"" + table + "\")", error)) {
    while (s->step() == Statement::Step::Row) cols.insert(std::string(s->text(1)));
  }
  return cols;
}

bool Database::hasColumn(const std::string& table, const std::string& column) const {
  return columns(table).count(column) > 0;
}

std::optional<std::string> Database::queryText(std::string_view sql) const {
  std::string error;
  auto s = prepare(sql, error);
  if (!s || s->step() != Statement::Step::Row || s->isNull(0)) return std::nullopt;
  return std::string(s->text(0));
}

}  // namespace sightline::ingest
