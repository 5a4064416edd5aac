// Which profiles the server finds in a workspace on its own.
#include "server/workspace/profiles.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

class Discovery : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sightline_discovery_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ws");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string touch(const std::string& name) {
    std::ofstream(dir_ / name) << "{}";
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(Discovery, FindsTheWorkspacesProfiles) {
  std::string mine = touch("ws/run.pt.trace.json");
  EXPECT_EQ(discoverProfiles((dir_ / "ws").string()), std::vector<std::string>{mine});
}

// A glob in the profiles setting ("runs/*") matches the profiles, not what lies beside them:
// sightline capture's steps file (it once loaded as a trace: 'no "traceEvents"'), logs, scripts.
TEST_F(Discovery, AGlobLoadsTheProfilesBesideTheStepsFile) {
  fs::create_directories(dir_ / "ws/runs");
  std::string profile = touch("ws/runs/run.sqlite");
  std::string trace = touch("ws/runs/rank0.json");
  touch("ws/runs/run.steps.json");
  touch("ws/runs/run.log");
  touch("ws/runs/train.py");
  auto found = expandProfileSetting((dir_ / "ws").string(), "runs/*");
  std::sort(found.begin(), found.end());
  std::vector<std::string> want{trace, profile};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(found, want);
}

TEST_F(Discovery, TheRootFolderIsNoWorkspace) {
  // Its walk once reached the newest trace of any user under /tmp.
  EXPECT_TRUE(discoverProfiles("/").empty());
  EXPECT_TRUE(discoverProfiles("//").empty());
}

TEST_F(Discovery, LinksLeadingOutAreNotFollowed) {
  std::string outside = touch("elsewhere.pt.trace.json");
  fs::create_symlink(outside, dir_ / "ws" / "linked.pt.trace.json");
  EXPECT_TRUE(discoverProfiles((dir_ / "ws").string()).empty());
}

TEST_F(Discovery, FilesOthersPutInAWorldWritableFolderAreSkipped) {
  // A shared folder like /tmp: a trace another user planted there is not loaded on its own.
  fs::create_directories(dir_ / "ws" / "shared");
  ::chmod((dir_ / "ws" / "shared").c_str(), 01777);
  std::string mine = touch("ws/shared/mine.pt.trace.json");
  std::string planted = touch("ws/shared/planted.pt.trace.json");
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);
  EXPECT_EQ(discoverProfiles((dir_ / "ws").string()), std::vector<std::string>{mine});
}

}  // namespace
}  // namespace sightline::server
