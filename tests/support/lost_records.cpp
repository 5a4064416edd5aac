#include "tests/support/lost_records.h"

#include <sqlite3.h>

#include <filesystem>

#include "tests/support/test_paths.h"

namespace sightline::testing {

namespace fs = std::filesystem;

std::string craftLostBackwardCapture(const std::string& dir, std::string& error) {
  fs::create_directories(dir);
  fs::path capture = fs::path(dir) / "lost.sqlite";
  fs::copy_file(repoProfile("tests/data/capture/runs/resnet_nsys.sqlite.xz"), capture,
                fs::copy_options::overwrite_existing);
  fs::copy_file(sourcePath("tests/data/capture/runs/resnet_nsys.steps.json"), fs::path(dir) / "lost.steps.json",
                fs::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  if (sqlite3_open(capture.c_str(), &db) != SQLITE_OK) {
    error = "cannot open " + capture.string();
    sqlite3_close(db);
    return "";
  }
  // Thread ...371 is the autograd engine's (its launches are the backward pass's): 2240 of its
  // 2375 launches keep no kernel.
  const char* lose =
      "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IN (SELECT correlationId FROM "
      "CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid = 281494589277371) AND correlationId NOT IN (SELECT correlationId "
      "FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid <> 281494589277371)";
  bool ok = sqlite3_exec(db, lose, nullptr, nullptr, nullptr) == SQLITE_OK && sqlite3_changes(db) > 2000;
  if (!ok) error = std::string("deleting the thread's kernels: ") + sqlite3_errmsg(db);
  sqlite3_close(db);
  return ok ? capture.string() : "";
}

}  // namespace sightline::testing
