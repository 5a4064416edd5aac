// Load + attribution of an nsys export, timed against a plain SQLite scan of the same columns
// (what `sqlite3` itself needs to read them), with peak RSS. Prints figures; asserts nothing.
//   profile_bench PROFILE.sqlite [RUNS]
//   profile_bench --scan PROFILE.sqlite   (the scan alone: its seconds)
#include <sqlite3.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/ingest/nsys_reader.h"
#include "server/platform/allocator.h"

namespace {

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Reads every column the reader reads, row by row, and does nothing with them.
double sqliteScan(const std::string& path) {
  sqlite3* db = nullptr;
  // As the reader opens it (no mutex: one thread per connection), so the floor is as low as it goes.
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  const char* queries[] = {
      "SELECT id, value FROM StringIds",
      "SELECT start, \"end\", globalTid, correlationId, nameId, eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME",
      "SELECT start, \"end\", globalPid, correlationId, shortName, demangledName, deviceId, streamId FROM "
      "CUPTI_ACTIVITY_KIND_KERNEL",
      "SELECT start, \"end\", globalPid, correlationId, deviceId, streamId, bytes, copyKind, srcKind, dstKind FROM "
      "CUPTI_ACTIVITY_KIND_MEMCPY",
      "SELECT start, \"end\", globalPid, correlationId, deviceId, streamId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET",
      "SELECT start, \"end\", eventType, globalTid, text, textId, domainId, binaryData FROM NVTX_EVENTS"};
  auto t0 = std::chrono::steady_clock::now();
  long long sink = 0;
  for (const char* q : queries) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, q, -1, &s, nullptr) != SQLITE_OK) continue;
    int n = sqlite3_column_count(s);
    while (sqlite3_step(s) == SQLITE_ROW)
      for (int c = 0; c < n; ++c)
        sink += sqlite3_column_type(s, c) == SQLITE_BLOB ? sqlite3_column_bytes(s, c) : sqlite3_column_int64(s, c);
    sqlite3_finalize(s);
  }
  auto t1 = std::chrono::steady_clock::now();
  sqlite3_close(db);
  if (sink == 42) std::puts("");
  return seconds(t0, t1);
}

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator(argv);  // as the sightline binary does
  // The scan alone, for bench/speed_bench.py's baseline: its seconds on one line.
  if (argc == 3 && std::string(argv[1]) == "--scan") {
    std::printf("%.6f\n", sqliteScan(argv[2]));
    return 0;
  }
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: profile_bench PROFILE.sqlite [RUNS] | profile_bench --scan PROFILE.sqlite\n");
    return 2;
  }
  std::string path = argv[1];
  int runs = argc == 3 ? std::max(1, std::atoi(argv[2])) : 1;
  std::vector<double> ratios;
  double scan = sqliteScan(path);
  auto t0 = std::chrono::steady_clock::now();
  // The reader's phases as they end (seconds since the load began).
  auto phase = [&](const std::string& message, int) {
    std::printf("  %6.3f s  %s\n", seconds(t0, std::chrono::steady_clock::now()), message.c_str());
  };
  auto loaded = std::make_unique<sightline::ingest::LoadResult>(sightline::ingest::loadNsysSqlite(path, phase));
  auto t1 = std::chrono::steady_clock::now();
  if (!loaded->profile) {
    std::fprintf(stderr, "%s\n", loaded->error.c_str());
    return 1;
  }
  auto attr = sightline::attribution::attribute(*loaded->profile);
  auto t2 = std::chrono::steady_clock::now();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto& p = *loaded->profile;
  size_t activities = p.activities.size();
  size_t retained =
      activities * sizeof(sightline::model::GpuActivity) + p.api_calls.size() * sizeof(sightline::model::ApiCall) +
      p.ranges.size() * sizeof(sightline::model::NvtxRange) + p.marks.size() * sizeof(sightline::model::PythonMark) +
      p.frames.size() * sizeof(sightline::model::Frame);
  std::printf("profile        %s\n", path.c_str());
  std::printf("rows           %zu GPU activities, %zu API calls, %zu NVTX ranges, %zu Python marks\n", activities,
              p.api_calls.size(), p.ranges.size(), p.marks.size());
  std::printf("sqlite scan    %.3f s (same columns, no work)\n", scan);
  std::printf("load           %.3f s\n", seconds(t0, t1));
  std::printf("attribution    %.3f s\n", seconds(t1, t2));
  std::printf("load+attr      %.3f s = %.2fx the scan, %.0f ns per GPU activity\n", seconds(t0, t2),
              seconds(t0, t2) / scan, 1e9 * seconds(t0, t2) / static_cast<double>(std::max<size_t>(1, activities)));
  std::printf("retained       %.1f bytes of model per GPU activity (all tables / activities)\n",
              static_cast<double>(retained) / static_cast<double>(std::max<size_t>(1, activities)));
  std::printf("peak RSS       %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("attributed     %.2f%% of %.3f s GPU time\n",
              100.0 * static_cast<double>(attr.attributed_gpu_ns) /
                  static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns)),
              static_cast<double>(attr.steady_gpu_ns) / 1e9);
  ratios.push_back(seconds(t0, t2) / scan);
  // More pairs, each scan right before its load, the VM's neighbours move both alike: the
  // median ratio is the figure (docs: bench/README.md).
  loaded.reset();
  sightline::server::releaseFreeMemory();
  for (int run = 1; run < runs; ++run) {
    double again = sqliteScan(path);
    auto a = std::chrono::steady_clock::now();
    auto result = sightline::ingest::loadNsysSqlite(path, nullptr);
    if (!result.profile) return 1;
    auto attributed = sightline::attribution::attribute(*result.profile);
    auto b = std::chrono::steady_clock::now();
    std::printf("run %d          scan %.3f s, load+attr %.3f s = %.2fx\n", run + 1, again, seconds(a, b),
                seconds(a, b) / again);
    ratios.push_back(seconds(a, b) / again);
    if (attributed.steps < 0) std::puts("");
    result = {};
    sightline::server::releaseFreeMemory();
  }
  if (ratios.size() > 1) {
    std::sort(ratios.begin(), ratios.end());
    std::printf("median ratio   %.2fx of %zu runs (%.2f-%.2f)\n", ratios[ratios.size() / 2], ratios.size(),
                ratios.front(), ratios.back());
  }
  return 0;
}
