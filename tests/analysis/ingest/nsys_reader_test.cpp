// The nsys reader on every shared export (nsys 2022.1 .. 2026.2, Windows, windowed, CUDA
// graphs, 2-process torchrun) and on our H200 captures; checked against SQL run on the files.
#include "analysis/ingest/nsys_reader.h"
#include "analysis/ingest/profile_loader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "analysis/ingest/sqlite.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

int64_t sqlValue(const std::string& path, const std::string& sql) {
  std::string error;
  auto db = Database::openReadOnly(path, error);
  EXPECT_TRUE(db) << error;
  auto s = db->prepare(sql, error);
  EXPECT_TRUE(s) << error;
  EXPECT_EQ(s->step(), Statement::Step::Row);
  return s->int64(0);
}

// A copy of a repo export in a folder of its own (removed with it), for a test to change.
class ExportCopy {
 public:
  ExportCopy(const std::string& name, const std::string& export_path = "examples/train_small_naive.sqlite.xz")
      : dir_(std::filesystem::temp_directory_path() / ("sightline-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    std::filesystem::copy_file(testing::repoProfile(export_path), path(),
                               std::filesystem::copy_options::overwrite_existing);
  }
  ~ExportCopy() { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / (dir_.filename().string() + ".sqlite")).string(); }
  // Runs `sql` on the copy: the rows it changed, or -1 (the test fails, saying why).
  int exec(const std::string& sql) const {
    sqlite3* db = nullptr;
    int changed = -1;
    if (sqlite3_open(path().c_str(), &db) == SQLITE_OK &&
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK)
      changed = sqlite3_changes(db);
    else
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return changed;
  }

 private:
  std::filesystem::path dir_;
};

std::string sumIfPresent(const std::string& path, const char* table) {
  std::string error;
  auto db = Database::openReadOnly(path, error);
  return db->hasTable(table) ? std::string("(SELECT COALESCE(SUM(\"end\" - start), 0) FROM ") + table + ")" : "0";
}

TEST(NsysReader, EveryExportLoadsAndItsGpuTimeEqualsTheSqlSum) {
  auto exports = testing::sharedNsysExports();
  if (exports.empty()) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles");
  EXPECT_GE(exports.size(), 14u);
  for (const auto& rel : exports) {
    SCOPED_TRACE(rel);
    std::string path = *testing::sharedProfile(rel);
    auto loaded = loadNsysSqlite(path);
    ASSERT_TRUE(loaded.profile) << loaded.error;
    const auto& p = *loaded.profile;
    std::string sql = "SELECT " + sumIfPresent(path, "CUPTI_ACTIVITY_KIND_KERNEL") + " + " +
                      sumIfPresent(path, "CUPTI_ACTIVITY_KIND_MEMCPY") + " + " +
                      sumIfPresent(path, "CUPTI_ACTIVITY_KIND_MEMSET") + " + " +
                      sumIfPresent(path, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
    EXPECT_EQ(p.totalGpuNs(), sqlValue(path, sql));
    EXPECT_FALSE(p.info.tool_version.empty());
    EXPECT_FALSE(p.info.schema_version.empty());
    // Each costly CUDA API call once: the --cudabacktrace twins share (process, correlation
    // id); kept are the calls that launch work (by name, or named by an activity) and syncs.
    std::string launched;
    for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                              "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"}) {
      if (sumIfPresent(path, table) == "0") continue;
      launched += std::string(launched.empty() ? "" : " UNION ") +
                  "SELECT (globalPid >> 24) & 16777215 AS pid, correlationId AS corr FROM " + table;
    }
    if (launched.empty()) launched = "SELECT 0 AS pid, 0 AS corr WHERE 0";
    int64_t calls =
        sqlValue(path,
                 "WITH r AS (SELECT (globalTid >> 24) & 16777215 AS pid, correlationId AS corr, s.value AS name FROM "
                 "CUPTI_ACTIVITY_KIND_RUNTIME JOIN StringIds s ON s.id = nameId), a AS (" +
                     launched +
                     "), costly AS (SELECT * FROM r WHERE name GLOB '*Launch*' OR name GLOB '*Memcpy*' OR name GLOB "
                     "'*Memset*' OR name GLOB '*Synchronize*' OR (corr > 0 AND EXISTS (SELECT 1 FROM a WHERE a.pid = "
                     "r.pid AND a.corr = r.corr))) SELECT (SELECT COUNT(*) FROM (SELECT DISTINCT pid, corr FROM costly "
                     "WHERE corr > 0)) + (SELECT COUNT(*) FROM costly WHERE corr IS NULL OR corr <= 0)");
    EXPECT_EQ(static_cast<int64_t>(p.api_calls.size()), calls);
    EXPECT_TRUE(std::is_sorted(p.activities.begin(), p.activities.end(),
                               [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
    for (const auto& c : p.api_calls) {
      const std::string& name = p.strings[c.name];
      auto v = name.rfind("_v");
      bool versioned = v != std::string::npos && v + 2 < name.size() &&
                       name.find_first_not_of("0123456789", v + 2) == std::string::npos && name.size() - v > 4;
      ASSERT_FALSE(versioned) << name;
    }
  }
}

TEST(NsysReader, VersionsAndPlatforms) {
  SIGHTLINE_REQUIRE_PROFILE(old_path, "dlprof_nsys_2022_1.sqlite.xz");
  auto old = loadNsysSqlite(old_path);
  ASSERT_TRUE(old.profile);
  EXPECT_EQ(old.profile->info.tool_version, "2022.1.3.3");
  EXPECT_EQ(old.profile->info.schema_version, "2.9.1");
  SIGHTLINE_REQUIRE_PROFILE(win_path, "cs336_athrun0109_result_windows.sqlite.xz");
  auto win = loadNsysSqlite(win_path);
  ASSERT_TRUE(win.profile);
  EXPECT_EQ(win.profile->info.platform, "windows-desktop");
  SIGHTLINE_REQUIRE_PROFILE(graphs_path, "cs336_zx3xyy_result_2_7B_compile_ro.sqlite.xz");
  auto graphs = loadNsysSqlite(graphs_path);
  ASSERT_TRUE(graphs.profile);
  size_t graph_launches = 0;
  for (const auto& a : graphs.profile->activities) graph_launches += a.kind == model::ActivityKind::Graph;
  EXPECT_EQ(graph_launches, 10u);
}

TEST(NsysReader, DecodesPythonBacktracesThroughThePayloadSchema) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto loaded = loadNsysSqlite(path);
  ASSERT_TRUE(loaded.profile);
  const auto& p = *loaded.profile;
  EXPECT_EQ(p.marks.size(), 271u);
  ASSERT_FALSE(p.marks.empty());
  const auto& first = p.marks.front();
  ASSERT_EQ(first.frame_count, 2u);
  const auto& inner = p.frames[first.first_frame];
  EXPECT_EQ(p.strings[inner.function], "main");
  EXPECT_NE(p.strings[inner.file].find("train_small.py"), std::string::npos);
  EXPECT_EQ(inner.line, 102);
  EXPECT_EQ(p.strings[p.frames[first.first_frame + 1].function], "<module>") << "XML entities are decoded";
  EXPECT_NE(std::find(p.info.capabilities.begin(), p.info.capabilities.end(), "autograd-nvtx"),
            p.info.capabilities.end());
  // Autograd ranges are parsed.
  bool conv = false;
  for (const auto& r : p.ranges)
    if (p.strings[r.op] == "aten::conv2d" && r.seq >= 0 && r.op_id >= 0) conv = true;
  EXPECT_TRUE(conv);
}

TEST(NsysReader, HandsOverItsNamesBeforeReadingTheRest) {
  // Once, with the file of every frame through generated code already there (the compiled run's
  // modules: the generated code is read meanwhile, server/workspace/compiled_code.h).
  auto moduleFile = [](const std::string& path) {
    size_t slash = path.rfind('/');
    return path.ends_with(".py") && slash != std::string::npos && path.compare(slash + 1, 1, "c") == 0 &&
                   path.size() - slash > 40
               ? path.substr(slash + 1)
               : std::string();
  };
  int calls = 0;
  std::set<std::string> early;
  auto loaded =
      loadNsysSqlite(testing::dataProfile("compile/compiled_prov.sqlite.xz"), {}, [&](const model::StringTable& table) {
        ++calls;
        for (model::StringId id = 0; id < table.size(); ++id)
          if (auto m = moduleFile(table[id]); !m.empty()) early.insert(m);
      });
  ASSERT_TRUE(loaded.profile);
  EXPECT_EQ(calls, 1);
  std::set<std::string> ran;
  for (const auto& f : loaded.profile->frames)
    if (auto m = moduleFile(loaded.profile->strings[f.file]); !m.empty()) ran.insert(m);
  EXPECT_EQ(ran.size(), 2u);
  EXPECT_TRUE(std::includes(early.begin(), early.end(), ran.begin(), ran.end()));
}

TEST(NsysReader, KernelsKeepTheirLaunchShape) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto loaded = loadNsysSqlite(path);
  ASSERT_TRUE(loaded.profile);
  const auto& p = *loaded.profile;
  int64_t sum = 0;
  size_t kernels = 0;
  for (const auto& a : p.activities) {
    if (a.kind != model::ActivityKind::Kernel) continue;
    ++kernels;
    ASSERT_LT(a.launch_config, p.launch_configs.size());
    const auto& c = p.launch_configs[a.launch_config];
    ASSERT_GT(c.grid[0] * c.block[0], 0u);
    sum += int64_t{c.grid[0]} + 3 * c.grid[1] + 5 * c.grid[2] + 7 * c.block[0] + 11 * c.block[1] + 13 * c.block[2];
  }
  EXPECT_EQ(kernels, 570u);
  EXPECT_EQ(sum, sqlValue(path,
                          "SELECT SUM(gridX + 3 * gridY + 5 * gridZ + 7 * blockX + 11 * blockY + 13 * blockZ) FROM "
                          "CUPTI_ACTIVITY_KIND_KERNEL"));
  EXPECT_LT(p.launch_configs.size(), kernels) << "shapes are interned";
}

TEST(NsysReader, SamplingMarksAreSamples) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_gpt_sampling.sqlite.xz");
  auto loaded = loadNsysSqlite(path);
  ASSERT_TRUE(loaded.profile);
  size_t samples = 0, backtraces = 0;
  for (const auto& m : loaded.profile->marks) (m.kind == model::MarkKind::Sample ? samples : backtraces)++;
  EXPECT_EQ(samples, 226u);
  EXPECT_EQ(backtraces, 1057u);
}

TEST(NsysReader, SaysWhichExportFlagKeepsTheFrames) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive_noblobs.sqlite.xz");
  auto loaded = loadNsysSqlite(path);
  ASSERT_TRUE(loaded.profile);
  EXPECT_TRUE(loaded.profile->marks.empty());
  EXPECT_FALSE(loaded.profile->info.has_blobs);
  ASSERT_FALSE(loaded.profile->info.warnings.empty());
  EXPECT_NE(loaded.profile->info.warnings[0].find("--include-blobs=true"), std::string::npos);
  SIGHTLINE_REQUIRE_PROFILE(nobt, "h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz");
  auto plain = loadNsysSqlite(nobt);
  ASSERT_TRUE(plain.profile);
  EXPECT_TRUE(plain.profile->marks.empty());
  EXPECT_EQ(
      std::find(plain.profile->info.capabilities.begin(), plain.profile->info.capabilities.end(), "python-backtraces"),
      plain.profile->info.capabilities.end());
}

// --pytorch=autograd-nvtx names every op's range with its op_id, and a seq only where the op
// records for backward: a capture of ops without one (no_grad) still used the option, and the
// advice does not ask for it again.
TEST(NsysReader, AutogradRangesWithoutSeqStillTellTheOption) {
  SIGHTLINE_REQUIRE_PROFILE(path, "nsysai_h100_2gpu_1s.sqlite.xz");
  auto loaded = loadNsysSqlite(path);
  ASSERT_TRUE(loaded.profile);
  const auto& info = loaded.profile->info;
  EXPECT_NE(std::find(info.capabilities.begin(), info.capabilities.end(), "autograd-nvtx"), info.capabilities.end());
  EXPECT_EQ(ingest::captureAdvice(info).find("--pytorch=autograd-nvtx"), std::string::npos)
      << ingest::captureAdvice(info);
}

// The right tables with values of the wrong type (text where nsys writes integer ns): those
// rows are left out and counted, never read as time 0 (which printed "-0.00 ms" reports).
// The rank each process records in NCCL's communicator-init payload (schema entries "Rank",
// "No. of ranks"), added to our 2-rank DDP report (its capture range opened after the init):
// ranks swapped against the devices, so the names must come from the payload.
TEST(NsysReader, ReadsRanksFromNcclInitPayloads) {
  ExportCopy copy("ranks", "tests/data/multi/ddp/ddp_one.sqlite.xz");
  // Header {version, schema 16777227 = 0x0100000B, payload size 24, offset 32}, then
  // {communicator id u64, no. of ranks i32 = 2, rank i32, device i32, pad}.
  auto blob = [](int rank) {
    return "X'0000000000000000"
           "0B00000100000000"
           "1800000000000000"
           "2000000000000000"  // header
           "1111111111111111"
           "02000000"
           "0" +
           std::to_string(rank) +
           "000000"
           "00000000"
           "00000000'";
  };
  std::string sql;
  int rank = 1;
  for (const char* pid_filter : {"(globalTid >> 24) & 16777215 = (SELECT MIN((globalTid >> 24) & 16777215) FROM "
                                 "NVTX_EVENTS WHERE domainId = 2)",
                                 "(globalTid >> 24) & 16777215 = (SELECT MAX((globalTid >> 24) & 16777215) FROM "
                                 "NVTX_EVENTS WHERE domainId = 2)"}) {
    sql +=
        "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, globalTid, domainId, text, binaryData) SELECT MIN(start) "
        "- 10, MIN(start) - 5, 59, globalTid, 2, 'ncclCommInitRank', " +
        blob(rank) + " FROM NVTX_EVENTS WHERE domainId = 2 AND " + pid_filter + ";";
    rank = 0;
  }
  ASSERT_GE(copy.exec(sql), 0);
  auto loaded = loadNsysSqlite(copy.path());
  ASSERT_TRUE(loaded.profile) << loaded.error;
  std::map<uint32_t, int32_t> ranks;
  for (const auto& p : loaded.profile->info.processes)
    if (p.rank >= 0) ranks[p.pid] = p.rank;
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks.begin()->second, 1) << "the lower pid was given rank 1";
  EXPECT_EQ(ranks.rbegin()->second, 0);
  for (const auto& p : loaded.profile->info.processes) {
    if (p.rank >= 0) {
      EXPECT_EQ(p.world_size, 2);
    }
  }
}

TEST(NsysReader, RowsWithoutIntegerTimesAreLeftOutAndCounted) {
  ExportCopy copy("types");
  auto before = loadNsysSqlite(copy.path());
  ASSERT_TRUE(before.profile) << before.error;
  int changed = copy.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'x' WHERE rowid % 2 = 0");
  ASSERT_GT(changed, 0);
  auto after = loadNsysSqlite(copy.path());
  ASSERT_TRUE(after.profile) << after.error;
  EXPECT_EQ(after.profile->activities.size() + static_cast<size_t>(changed), before.profile->activities.size());
  bool warned = false;
  for (const auto& w : after.profile->info.warnings)
    warned =
        warned || (w.find(std::to_string(changed) + " kernels rows") == 0 && w.find("integer") != std::string::npos);
  EXPECT_TRUE(warned) << "warnings: " << ::testing::PrintToString(after.profile->info.warnings);
}

// The reader makes room for a table's rows by its largest rowid: a file's rowid can be any
// number, and one near 2^63 must not ask for that much memory (the room is bounded by the
// file's size). The rows read are the same.
TEST(NsysReader, AHugeRowidAsksForNoHugeRoom) {
  ExportCopy copy("rowid");
  auto before = loadNsysSqlite(copy.path());
  ASSERT_TRUE(before.profile) << before.error;
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"}) {
    std::string sql = std::string("UPDATE ") + table +
                      " SET rowid = 9223372036854775000 WHERE rowid = (SELECT max(rowid) FROM " + table + ")";
    EXPECT_EQ(copy.exec(sql), 1) << table;
  }
  auto after = loadNsysSqlite(copy.path());
  ASSERT_TRUE(after.profile) << after.error;
  EXPECT_EQ(after.profile->activities.size(), before.profile->activities.size());
  EXPECT_EQ(after.profile->api_calls.size(), before.profile->api_calls.size());
  EXPECT_LT(after.profile->activities.capacity(), uint64_t{1} << 32);
  EXPECT_EQ(after.profile->totalGpuNs(), before.profile->totalGpuNs());
}

// NVTX_EVENTS without a column the reader needs: its events are not read, quietly (the table
// is read in two halves, and neither may run a query built on a missing column list).
TEST(NsysReader, AnNvtxTableWithoutItsColumnsIsLeftOut) {
  ExportCopy copy("nvtxcols");
  ASSERT_GE(copy.exec("ALTER TABLE NVTX_EVENTS DROP COLUMN eventType"), 0);
  auto loaded = loadNsysSqlite(copy.path());
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_TRUE(loaded.profile->ranges.empty());
  EXPECT_TRUE(loaded.profile->marks.empty());
  EXPECT_FALSE(loaded.profile->activities.empty());
  for (const auto& w : loaded.profile->info.warnings) EXPECT_EQ(w.find("cannot read NVTX"), std::string::npos) << w;
}

TEST(NsysReader, ReadsAWalExportWithoutTouchingWhatIsBesideIt) {
  // A WAL-mode export opened read-only once created `-wal` and `-shm` beside it, and a `-wal`
  // planted there would be applied to what is read. Read immutable: neither.
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("sightline-wal-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "wal.sqlite").string();
  fs::copy_file(testing::repoProfile("examples/train_small_naive.sqlite.xz"), path,
                fs::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ASSERT_FALSE(fs::exists(path + "-wal"));
  auto before = loadNsysSqlite(path);
  ASSERT_TRUE(before.profile) << before.error;
  EXPECT_FALSE(fs::exists(path + "-wal"));
  EXPECT_FALSE(fs::exists(path + "-shm"));
  // A writer deletes half the kernels in its WAL, not checkpointed; its WAL is copied beside a
  // copy of the file, as if planted there.
  std::string planted = (dir / "planted.sqlite").string();
  fs::copy_file(path, planted, fs::copy_options::overwrite_existing);
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA wal_autocheckpoint=0; DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid % 2 = 0",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_TRUE(fs::exists(path + "-wal"));
  fs::copy_file(path + "-wal", planted + "-wal", fs::copy_options::overwrite_existing);
  sqlite3_close(db);
  auto read = loadNsysSqlite(planted);
  ASSERT_TRUE(read.profile) << read.error;
  EXPECT_EQ(read.profile->activities.size(), before.profile->activities.size());
  EXPECT_FALSE(fs::exists(planted + "-shm"));
  fs::remove_all(dir);
}

TEST(NsysReader, ImplausibleTimesAreLeftOutAndCounted) {
  // One kernel ending at INT64_MAX ("GPU time 9223372036853 ms"), one ending before it starts.
  ExportCopy copy("times");
  auto before = loadProfile(copy.path());
  ASSERT_TRUE(before.profile) << before.error;
  ASSERT_GE(copy.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807 WHERE rowid = 10;"
                      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 10052272350 WHERE rowid = 20;"),
            0);
  auto after = loadProfile(copy.path());
  ASSERT_TRUE(after.profile) << after.error;
  EXPECT_EQ(after.profile->activities.size() + 2, before.profile->activities.size());
  int64_t longest = 0;
  for (const auto& a : after.profile->activities) longest = std::max(longest, a.duration());
  EXPECT_LT(longest, int64_t{1000000000});
  bool warned = false;
  for (const auto& w : after.profile->info.warnings)
    warned = warned || w.rfind("2 GPU activities with implausible", 0) == 0;
  EXPECT_TRUE(warned) << ::testing::PrintToString(after.profile->info.warnings);
}

TEST(NsysReader, BrokenFilesGiveErrorsNotCrashes) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline-reader-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  EXPECT_FALSE(loadNsysSqlite((dir / "missing.sqlite").string()).profile);
  auto garbage = loadNsysSqlite(write("garbage.sqlite", "this is not a database at all, just text"));
  EXPECT_FALSE(garbage.profile);
  EXPECT_FALSE(garbage.error.empty());
  EXPECT_FALSE(loadNsysSqlite(write("empty.sqlite", "")).profile);
  // A real SQLite file that is not an nsys export.
  sqlite3* db = nullptr;
  std::string other = (dir / "other.sqlite").string();
  sqlite3_open(other.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto not_nsys = loadNsysSqlite(other);
  EXPECT_FALSE(not_nsys.profile);
  EXPECT_NE(not_nsys.error.find("not an Nsight Systems export"), std::string::npos);
  // A truncated real export: loads what it can or says why not, never crashes.
  auto real = testing::sharedProfile("h200-captures/nsys/train_small_naive.sqlite.xz");
  if (real) {
    std::string bytes = testing::readFile(*real);
    for (size_t cut : {bytes.size() / 2, bytes.size() / 5, size_t{4096}, size_t{100}}) {
      auto result = loadNsysSqlite(write("cut.sqlite", bytes.substr(0, cut)));
      EXPECT_TRUE(result.profile || !result.error.empty()) << cut;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(NsysReader, PayloadDecodingChecksBounds) {
  PayloadLayout layout{12, 4, 16, 24, 0, 8, 8, 8, 16, 4};
  std::string blob(32 + 16 + 24, '\0');
  uint64_t header[4] = {1, 7, 16 + 24, 32};
  std::memcpy(blob.data(), header, 32);
  uint32_t count = 1;
  std::memcpy(blob.data() + 32 + 12, &count, 4);
  uint64_t function = 5, file = 6;
  int32_t line = 42;
  std::memcpy(blob.data() + 48, &function, 8);
  std::memcpy(blob.data() + 56, &file, 8);
  std::memcpy(blob.data() + 64, &line, 4);
  std::vector<RawFrame> frames;
  ASSERT_TRUE(decodeBacktracePayload(blob, layout, frames));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function_id, 5u);
  EXPECT_EQ(frames[0].file_id, 6u);
  EXPECT_EQ(frames[0].line, 42);
  count = 1000;  // more frames than bytes
  std::memcpy(blob.data() + 32 + 12, &count, 4);
  EXPECT_FALSE(decodeBacktracePayload(blob, layout, frames));
  EXPECT_FALSE(decodeBacktracePayload(blob.substr(0, 20), layout, frames));
  header[3] = 1 << 20;  // payload offset past the end
  std::memcpy(blob.data(), header, 32);
  EXPECT_FALSE(decodeBacktracePayload(blob, layout, frames));
}

}  // namespace
}  // namespace sightline::ingest
