// A thin RAII layer over SQLite3 for the readers: a read-only database, prepared statements,
// a step that returns a status, typed column reads by position, and schema probing.
// It never throws; errors come back as messages naming the statement.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace sightline::ingest {

class Statement {
 public:
  Statement() = default;
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  enum class Step { Row, Done, Error };
  Step step();
  bool isNull(int column) const;
  bool isInteger(int column) const;  // the value's storage class (not the declared type)
  int64_t int64(int column, int64_t if_null = 0) const;
  std::string_view text(int column) const;  // valid until the next step
  std::string_view blob(int column) const;  // valid until the next step
  const std::string& error() const { return error_; }

 private:
  friend class Database;
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
  std::string error_;
};

class Database {
 public:
  // Opens read-only; nullopt with `error` set when the file cannot be opened as SQLite.
  static std::optional<Database> openReadOnly(const std::string& path, std::string& error);
  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  ~Database();

  // nullopt with `error` set when the SQL does not compile (a missing table or column).
  std::optional<Statement> prepare(std::string_view sql, std::string& error) const;
  bool hasTable(const std::string& table) const;
  const std::set<std::string>& columns(const std::string& table) const;  // empty if absent
  bool hasColumn(const std::string& table, const std::string& column) const;
  // The text of the first column of the first row, or nullopt.
  std::optional<std::string> queryText(std::string_view sql) const;

 private:
  Database() = default;
  sqlite3* db_ = nullptr;
  std::set<std::string> tables_;
  mutable std::unique_ptr<std::map<std::string, std::set<std::string>>> columns_;
};

}  // namespace sightline::ingest
