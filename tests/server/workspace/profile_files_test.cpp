// `.nsys-rep` reports through `nsys export`: a private cache, validated exports, one export per
// report at a time. A fake `nsys` on PATH stands in for the real one.
#include "server/workspace/profile_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

// A fake `nsys export`: MODE junk writes text where the export goes, copy copies SOURCE there
// (after SLEEP seconds); every run adds a line to COUNT.
constexpr const char* kFakeNsys = R"(#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
echo run >> "$FAKE_NSYS_COUNT"
sleep "${FAKE_NSYS_SLEEP:-0}"
if [ "$FAKE_NSYS_MODE" = junk ]; then echo "not an export" > "$out"; else cp "$FAKE_NSYS_SOURCE" "$out"; fi
exit 0
)";

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sightline_export_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "nsys") << kFakeNsys;
    fs::permissions(dir_ / "bin" / "nsys", fs::perms::owner_all);
    std::ofstream(dir_ / "run.nsys-rep") << "a report";
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", ((dir_ / "bin").string() + ":" + old_path_).c_str(), 1);
    ::setenv("FAKE_NSYS_COUNT", (dir_ / "count").c_str(), 1);
    ::setenv("FAKE_NSYS_SOURCE", testing::repoProfile("examples/train_small_naive.sqlite.xz").c_str(), 1);
    ::setenv("FAKE_NSYS_MODE", "copy", 1);
    ::setenv("FAKE_NSYS_SLEEP", "0", 1);
    options_.cache_dir = (dir_ / "cache").string();
    options_.model_cache = false;  // the export cache alone (ReopenCache tests the model's)
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    fs::remove_all(dir_);
  }
  int runs() const {
    std::ifstream in(dir_ / "count");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  std::vector<fs::path> cached() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "cache")) out.push_back(e.path());
    return out;
  }
  std::string report() const { return (dir_ / "run.nsys-rep").string(); }
  fs::path dir_;
  std::string old_path_;
  OpenProfileOptions options_;
};

TEST_F(Export, ExportsOnceIntoAPrivateCache) {
  auto first = openProfile(report(), options_);
  ASSERT_TRUE(first.profile) << first.error;
  auto again = openProfile(report(), options_);
  ASSERT_TRUE(again.profile) << again.error;
  EXPECT_EQ(runs(), 1);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "cache").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(cached().size(), 1u) << "no temporary or log file left";
}

TEST_F(Export, AnExportOfJunkIsAnErrorAndNotCached) {
  // It exited 0 having written junk: once cached, and every later load failed until deleted.
  ::setenv("FAKE_NSYS_MODE", "junk", 1);
  auto bad = openProfile(report(), options_);
  EXPECT_FALSE(bad.profile);
  EXPECT_NE(bad.error.find("wrote no readable export"), std::string::npos) << bad.error;
  EXPECT_TRUE(cached().empty());
  ::setenv("FAKE_NSYS_MODE", "copy", 1);
  auto good = openProfile(report(), options_);
  EXPECT_TRUE(good.profile) << good.error;
}

TEST_F(Export, ACachedExportThatIsNoLongerOneIsMadeAgain) {
  ASSERT_TRUE(openProfile(report(), options_).profile);
  ASSERT_EQ(cached().size(), 1u);
  std::ofstream(cached()[0], std::ios::trunc) << "planted";
  auto again = openProfile(report(), options_);
  EXPECT_TRUE(again.profile) << again.error;
  EXPECT_EQ(runs(), 2);
}

TEST_F(Export, OneExportPerReportAtATime) {
  // A reload while the export runs waits for it (two exports once wrote one `.tmp`).
  ::setenv("FAKE_NSYS_SLEEP", "0.5", 1);
  ingest::LoadResult a, b;
  std::thread t([&] { a = openProfile(report(), options_); });
  b = openProfile(report(), options_);
  t.join();
  EXPECT_TRUE(a.profile) << a.error;
  EXPECT_TRUE(b.profile) << b.error;
  EXPECT_EQ(runs(), 1);
}

// The warnings of a loaded profile, one string.
std::string warningsOf(const ingest::LoadResult& r) {
  std::string all;
  if (r.profile)
    for (const auto& w : r.profile->info.warnings) all += w + "\n";
  return all;
}

mode_t modeOf(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST_F(Export, ACacheFolderThatIsALinkIsLeftAsItIsAndNotUsed) {
  // The link's target was chmod-ed to 0700 (a shared 2775 folder lost its setgid bit and its
  // group), then refused. Now neither is changed; the export is made in a temporary folder.
  fs::create_directories(dir_ / "shared");
  ASSERT_EQ(::chmod((dir_ / "shared").c_str(), 02775), 0);
  fs::create_directory_symlink(dir_ / "shared", dir_ / "linked");
  options_.cache_dir = (dir_ / "linked").string();
  fs::create_directories(dir_ / "tmp");
  const char* tmpdir = std::getenv("TMPDIR");
  std::string saved = tmpdir ? tmpdir : "";
  ::setenv("TMPDIR", (dir_ / "tmp").c_str(), 1);
  auto linked = openProfile(report(), options_);
  tmpdir ? ::setenv("TMPDIR", saved.c_str(), 1) : ::unsetenv("TMPDIR");
  EXPECT_EQ(modeOf(dir_ / "shared"), 02775u);
  EXPECT_TRUE(fs::is_empty(dir_ / "shared"));
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp")) << "the temporary export folder is removed after the load";
  ASSERT_TRUE(linked.profile) << linked.error;
  EXPECT_NE(warningsOf(linked).find("is a symbolic link"), std::string::npos) << warningsOf(linked);
  EXPECT_EQ(runs(), 1);
}

TEST_F(Export, ACacheFolderTheUserMadeIsNeverChmodded) {
  // A folder the user made read-only (0500) was reset to 0700; one open to the group (0750) too.
  for (mode_t mode : {0500, 0750}) {
    fs::path folder = dir_ / ("mine" + std::to_string(mode));
    fs::create_directories(folder);
    ASSERT_EQ(::chmod(folder.c_str(), mode), 0);
    options_.cache_dir = folder.string();
    auto r = openProfile(report(), options_);
    EXPECT_EQ(modeOf(folder), mode);
    EXPECT_TRUE(fs::is_empty(folder));
    ASSERT_TRUE(r.profile) << r.error;
    EXPECT_NE(warningsOf(r).find("not used"), std::string::npos) << warningsOf(r);
  }
}

TEST_F(Export, ACacheFolderOfAnotherUserIsNotUsed) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  fs::create_directories(dir_ / "theirs");
  ASSERT_EQ(::chmod((dir_ / "theirs").c_str(), 0700), 0);
  ASSERT_EQ(::chown((dir_ / "theirs").c_str(), 65534, 65534), 0);
  options_.cache_dir = (dir_ / "theirs").string();
  auto theirs = openProfile(report(), options_);
  EXPECT_TRUE(fs::is_empty(dir_ / "theirs"));
  ASSERT_TRUE(theirs.profile) << theirs.error;
  EXPECT_NE(warningsOf(theirs).find("another user"), std::string::npos) << warningsOf(theirs);
}

TEST_F(Export, AMissingCacheFolderIsMadePrivate) {
  options_.cache_dir = (dir_ / "new" / "sightline").string();
  ASSERT_TRUE(openProfile(report(), options_).profile);
  EXPECT_EQ(modeOf(dir_ / "new" / "sightline"), 0700u);
  EXPECT_EQ(runs(), 1);
}

TEST_F(Export, ATimeLimitEndsAStuckExport) {
  ::setenv("FAKE_NSYS_SLEEP", "30", 1);
  options_.export_timeout_s = 0.3;
  auto r = openProfile(report(), options_);
  EXPECT_FALSE(r.profile);
  EXPECT_NE(r.error.find("stopped after"), std::string::npos) << r.error;
}

// The reopen cache: a profile's model kept after a load, read back next time while the profile
// and the binary are the same, and never trusted otherwise.
class ReopenCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sightline_reopen_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(testing::repoProfile("examples/train_small_naive.sqlite.xz"), profile());
    options_.cache_dir = (dir_ / "cache").string();
    options_.model_cache_min_s = 0;
    options_.progress = [this](const std::string& message, int) { messages_.push_back(message); };
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string profile() const { return (dir_ / "run.sqlite").string(); }
  std::vector<fs::path> models() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "cache"))
      if (e.path().filename().string().rfind("model-", 0) == 0) out.push_back(e.path());
    return out;
  }
  // Opens the profile; whether it came from the cache.
  bool openedFromCache(ingest::LoadResult* out = nullptr) {
    messages_.clear();
    auto loaded = openProfile(profile(), options_);
    EXPECT_TRUE(loaded.profile) << loaded.error;
    bool cached = std::find(messages_.begin(), messages_.end(), "read from the reopen cache") != messages_.end();
    if (out) *out = std::move(loaded);
    return cached;
  }
  fs::path dir_;
  OpenProfileOptions options_;
  std::vector<std::string> messages_;
};

TEST_F(ReopenCache, TheSecondOpenReadsTheSameProfileFromTheCache) {
  ingest::LoadResult fresh, again;
  EXPECT_FALSE(openedFromCache(&fresh));
  ASSERT_EQ(models().size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(models()[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(openedFromCache(&again));
  ASSERT_TRUE(fresh.profile && again.profile);
  const auto& a = *fresh.profile;
  const auto& b = *again.profile;
  EXPECT_EQ(a.activities.size(), b.activities.size());
  EXPECT_EQ(a.ranges.size(), b.ranges.size());
  EXPECT_EQ(a.marks.size(), b.marks.size());
  EXPECT_EQ(a.info.capabilities, b.info.capabilities);
  EXPECT_EQ(a.totalGpuNs(), b.totalGpuNs());
  ASSERT_FALSE(b.activities.empty());
  EXPECT_EQ(a.strings[a.activities[7].name], b.strings[b.activities[7].name]);
}

// Written on a thread beside the caller (OpenProfileOptions::store_beside): the entry is there
// once the store is waited for, and reads back as the same profile while the first is joined.
TEST_F(ReopenCache, AModelStoredBesideTheJoinIsTheSameProfile) {
  ingest::LoadResult fresh;
  std::unique_ptr<join::ProfileJoin> joined;
  {
    ModelStoreBeside store;
    options_.store_beside = &store;
    fresh = openProfile(profile(), options_);
    ASSERT_TRUE(fresh.profile) << fresh.error;
    join::JoinOptions options;
    options.before_tables_change = [&store] { store.wait(); };
    joined = std::make_unique<join::ProfileJoin>(std::move(*fresh.profile), join::JoinEnvironment{}, options);
    store.wait();
    ASSERT_EQ(models().size(), 1u);
  }
  options_.store_beside = nullptr;
  ingest::LoadResult again;
  EXPECT_TRUE(openedFromCache(&again));
  ASSERT_TRUE(again.profile);
  const auto& a = joined->profile();
  const auto& b = *again.profile;
  EXPECT_EQ(a.activities.size(), b.activities.size());
  EXPECT_EQ(a.marks.size(), b.marks.size());
  EXPECT_EQ(a.totalGpuNs(), b.totalGpuNs());
  ASSERT_FALSE(b.activities.empty());
  EXPECT_EQ(a.strings[a.activities[7].name], b.strings[b.activities[7].name]);
}

// A job of several reports is kept as its merged model (written beside the join, read back
// with each report's part), not as its parts; a part's own entry, where one exists, is read.
TEST_F(ReopenCache, AJobIsKeptAsItsMergedModel) {
  std::string second = (dir_ / "run2.sqlite").string();
  fs::copy_file(profile(), second);
  auto openJob = [&](ingest::LoadResult& out) {
    messages_.clear();
    ModelStoreBeside store;
    options_.store_beside = &store;
    out = openProfiles({profile(), second}, options_);
    store.wait();
    options_.store_beside = nullptr;
    EXPECT_TRUE(out.profile) << out.error;
    return std::count(messages_.begin(), messages_.end(), "read from the reopen cache");
  };
  ingest::LoadResult fresh, again;
  EXPECT_EQ(openJob(fresh), 0);
  ASSERT_EQ(models().size(), 1u) << "the job's model alone";
  EXPECT_EQ(openJob(again), 1) << "the job's model, read once";
  ASSERT_TRUE(fresh.profile && again.profile);
  const auto& a = *fresh.profile;
  const auto& b = *again.profile;
  EXPECT_EQ(a.activities.size(), b.activities.size());
  EXPECT_EQ(a.info.processes.size(), b.info.processes.size());
  ASSERT_EQ(b.info.parts.size(), 2u);
  EXPECT_EQ(b.info.parts[1].name, "run2.sqlite");
  EXPECT_EQ(b.info.parts[1].pids, a.info.parts[1].pids);
  EXPECT_NE(b.info.parts[0].pids, b.info.parts[1].pids) << "the second report's pid renumbered";
  EXPECT_FALSE(openedFromCache()) << "no part was kept on its own";
  // A report changed: the job is read again, its unchanged part from that part's own entry.
  fs::last_write_time(second, fs::last_write_time(second) + std::chrono::seconds(5));
  EXPECT_EQ(openJob(again), 1);
  EXPECT_EQ(models().size(), 3u);
  EXPECT_EQ(openJob(again), 1);
}

TEST_F(ReopenCache, AFolderOpenToOthersIsNeitherChangedNorUsed) {
  fs::create_directories(dir_ / "cache");
  ASSERT_EQ(::chmod((dir_ / "cache").c_str(), 0755), 0);
  ingest::LoadResult loaded;
  EXPECT_FALSE(openedFromCache(&loaded));
  EXPECT_FALSE(openedFromCache());
  EXPECT_EQ(modeOf(dir_ / "cache"), 0755u);
  EXPECT_TRUE(fs::is_empty(dir_ / "cache"));
  ASSERT_TRUE(loaded.profile);
  EXPECT_NE(warningsOf(loaded).find("open to others"), std::string::npos) << warningsOf(loaded);
}

TEST_F(ReopenCache, AChangedProfileIsReadAgain) {
  EXPECT_FALSE(openedFromCache());
  fs::last_write_time(profile(), fs::last_write_time(profile()) + std::chrono::seconds(5));
  EXPECT_FALSE(openedFromCache()) << "the profile's mtime is part of the key";
  EXPECT_TRUE(openedFromCache());
}

TEST_F(ReopenCache, ADamagedOrPlantedEntryIsReadAgainAndReplaced) {
  EXPECT_FALSE(openedFromCache());
  fs::path model = models().at(0);
  auto size = fs::file_size(model);
  {  // one byte changed in the middle of the tables
    std::fstream f(model, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(size / 2));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  EXPECT_FALSE(openedFromCache());
  EXPECT_TRUE(openedFromCache()) << "rewritten after the damaged one was dropped";
  fs::resize_file(model, size - 100);  // cut short
  EXPECT_FALSE(openedFromCache());
  std::ofstream(model, std::ios::trunc) << "planted";
  EXPECT_FALSE(openedFromCache());
  EXPECT_TRUE(openedFromCache());
}

TEST_F(ReopenCache, OldEntriesArePrunedPastTheLimit) {
  EXPECT_FALSE(openedFromCache());
  auto one = fs::file_size(models().at(0));
  fs::copy_file(profile(), dir_ / "other.sqlite");
  options_.model_cache_limit = one + one / 2;  // room for one
  ASSERT_TRUE(openProfile((dir_ / "other.sqlite").string(), options_).profile);
  ASSERT_EQ(models().size(), 1u);
  EXPECT_FALSE(openedFromCache()) << "the older entry went";
}

TEST_F(ReopenCache, ProfilesReadFastAreNotKept) {
  options_.model_cache_min_s = 3600;
  EXPECT_FALSE(openedFromCache());
  EXPECT_TRUE(models().empty());
}

// The attribution beside the model: kept 0600 through the store the join is given, found
// again by a second join of the same profile, pruned with the models, off with the cache.
TEST_F(ReopenCache, TheAttributionIsKeptBesideTheModel) {
  auto join = [&] {
    auto loaded = openProfile(profile(), options_);
    EXPECT_TRUE(loaded.profile) << loaded.error;
    join::JoinOptions options;
    options.attribution_store = attributionStore({profile()}, options_);
    return std::make_unique<join::ProfileJoin>(std::move(*loaded.profile), join::JoinEnvironment{}, options);
  };
  auto attrs = [&] {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "cache"))
      if (e.path().filename().string().rfind("attr-", 0) == 0) out.push_back(e.path());
    return out;
  };
  auto first = join();
  EXPECT_FALSE(first->attributionReused());
  ASSERT_EQ(attrs().size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(attrs()[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = join();
  EXPECT_TRUE(second->attributionReused());
  EXPECT_EQ(second->attribution().steady_gpu_ns, first->attribution().steady_gpu_ns);
  std::ofstream(attrs()[0], std::ios::trunc) << "planted";
  EXPECT_FALSE(join()->attributionReused());
  EXPECT_TRUE(join()->attributionReused()) << "stored again";
  // A changed profile has another key.
  fs::last_write_time(profile(), fs::last_write_time(profile()) + std::chrono::seconds(5));
  EXPECT_FALSE(join()->attributionReused());
  // Pruned with the models: a limit that holds nothing keeps nothing.
  options_.model_cache_limit = 1;
  join();
  EXPECT_TRUE(attrs().empty());
  options_.model_cache_limit = uint64_t{2} << 30;
  options_.model_cache = false;
  auto store = attributionStore({profile()}, options_);
  EXPECT_FALSE(store.load || store.store);
}

}  // namespace
}  // namespace sightline::server
