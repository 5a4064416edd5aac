// Scales a real nsys SQLite export N times for benchmarks: every kernel, copy, memset, CUDA
// API row and NVTX event (marks with their Python payloads, autograd ranges) is replicated
// with timestamps shifted past the previous copy and fresh correlation ids, so the scaled file
// has the real capture's structure N times over.
//   scale_nsys_profile INPUT.sqlite OUTPUT.sqlite N
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace {

bool exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::fprintf(stderr, "scale_nsys_profile: %s\n  in: %.200s\n", error ? error : "?", sql.c_str());
    sqlite3_free(error);
    return false;
  }
  return true;
}

long long scalar(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  long long v = 0;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

std::vector<std::string> columnsOf(sqlite3* db, const std::string& table) {
  std::vector<std::string> out;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, ("PRAGMA table_info(" + table + ")").c_str(), -1, &s, nullptr) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)));
  sqlite3_finalize(s);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: scale_nsys_profile INPUT.sqlite OUTPUT.sqlite N\n");
    return 2;
  }
  std::string input = argv[1], output = argv[2];
  int copies = std::stoi(argv[3]);
  std::error_code ec;
  std::filesystem::copy_file(input, output, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::fprintf(stderr, "scale_nsys_profile: cannot copy %s: %s\n", input.c_str(), ec.message().c_str());
    return 1;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(output.c_str(), &db) != SQLITE_OK) return 1;
  exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
  const std::vector<std::pair<std::string, std::string>> tables = {{"CUPTI_ACTIVITY_KIND_KERNEL", ""},
                                                                   {"CUPTI_ACTIVITY_KIND_MEMCPY", ""},
                                                                   {"CUPTI_ACTIVITY_KIND_MEMSET", ""},
                                                                   {"CUPTI_ACTIVITY_KIND_RUNTIME", ""},
                                                                   {"NVTX_EVENTS", " AND eventType IN (34, 59, 60)"}};
  long long span = scalar(db, "SELECT MAX(\"end\") - MIN(start) + 1000000 FROM CUPTI_ACTIVITY_KIND_RUNTIME");
  long long corr_span = scalar(db, "SELECT MAX(correlationId) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME");
  exec(db, "BEGIN");
  for (const auto& [table, filter] : tables) {
    auto cols = columnsOf(db, table);
    if (cols.empty()) continue;
    long long last = scalar(db, "SELECT MAX(rowid) FROM " + table);
    for (int k = 1; k < copies; ++k) {
      std::string names, values;
      for (const auto& c : cols) {
        if (!names.empty()) names += ", ", values += ", ";
        names += "\"" + c + "\"";
        if (c == "start" || c == "end")
          values += "\"" + c + "\" + " + std::to_string(span * k);
        else if (c == "correlationId")
          values += "CASE WHEN correlationId > 0 THEN correlationId + " + std::to_string(corr_span * k) +
                    " ELSE correlationId END";
        else
          values += "\"" + c + "\"";
      }
      if (!exec(db, "INSERT INTO " + table + " (" + names + ") SELECT " + values + " FROM " + table +
                        " WHERE rowid <= " + std::to_string(last) + filter))
        return 1;
    }
  }
  exec(db, "COMMIT");
  std::printf("%s: %d copies, %lld kernels, %lld API rows, %lld NVTX events\n", output.c_str(), copies,
              scalar(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
              scalar(db, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
              scalar(db, "SELECT COUNT(*) FROM NVTX_EVENTS"));
  sqlite3_close(db);
  return 0;
}
