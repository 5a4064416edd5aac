// `.nsys-rep` reports through `nsys export`: a private cache, validated exports, one export per
// report at a time. A fake `nsys` on PATH stands in for the real one.
#include "server/profile_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST_F(Export, ACacheFolderOfAnotherUserOrALinkIsNotUsed) {
  fs::create_directories(dir_ / "elsewhere");
  fs::create_directory_symlink(dir_ / "elsewhere", dir_ / "linked");
  options_.cache_dir = (dir_ / "linked").string();
  auto linked = openProfile(report(), options_);
  EXPECT_FALSE(linked.profile);
  EXPECT_NE(linked.error.find("not a private folder"), std::string::npos) << linked.error;
  if (::geteuid() != 0) GTEST_SKIP() << "giving a folder to another user needs root";
  fs::create_directories(dir_ / "theirs");
  ASSERT_EQ(::chown((dir_ / "theirs").c_str(), 65534, 65534), 0);
  options_.cache_dir = (dir_ / "theirs").string();
  auto theirs = openProfile(report(), options_);
  EXPECT_FALSE(theirs.profile);
  EXPECT_EQ(runs(), 0);
}

TEST_F(Export, ATimeLimitEndsAStuckExport) {
  ::setenv("FAKE_NSYS_SLEEP", "30", 1);
  options_.export_timeout_s = 0.3;
  auto r = openProfile(report(), options_);
  EXPECT_FALSE(r.profile);
  EXPECT_NE(r.error.find("stopped after"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace sightline::server
