// Cuts an nsys export down to a fuzzing seed: the first ROWS rows of every table (the start of
// the capture, so launches and their kernels mostly stay together), then VACUUM.
// usage: nsys_seed EXPORT.sqlite OUT.sqlite ROWS
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: nsys_seed EXPORT.sqlite OUT.sqlite ROWS\n");
    return 2;
  }
  std::error_code ec;
  std::filesystem::copy_file(argv[1], argv[2], std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::fprintf(stderr, "nsys_seed: %s\n", ec.message().c_str());
    return 1;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(argv[2], &db) != SQLITE_OK) {
    std::fprintf(stderr, "nsys_seed: cannot open %s\n", argv[2]);
    return 1;
  }
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  std::string rows = std::to_string(std::stoi(argv[3]));
  for (const auto& t : tables) {
    std::string sql = "DELETE FROM \"" + t + "\" WHERE rowid NOT IN (SELECT rowid FROM \"" + t +
                      "\" ORDER BY rowid LIMIT " + rows + ")";
    sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);  // tables without rowid stay whole
  }
  // Small pages: an export has ~100 tables, each at least one page.
  sqlite3_exec(db, "PRAGMA page_size = 512", nullptr, nullptr, nullptr);
  int rc = sqlite3_exec(db, "VACUUM", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return rc == SQLITE_OK ? 0 : 1;
}
