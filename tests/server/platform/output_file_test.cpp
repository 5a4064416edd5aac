// Output files: never over an input, never through a link or a special file's name, never a
// truncated file reported as written.
#include "server/platform/output_file.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/scratch_dir.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

class OutputFile : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_ / name; }
  std::string write(const std::string& name, const std::string& text) const { return dir_.write(name, text); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The folder's entries: a write leaves nothing but its target behind.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_.path())) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  testing::ScratchDir dir_{"sightline_output"};
};

TEST_F(OutputFile, WritesANewFileAndReplacesAnOldOne) {
  std::string error;
  ASSERT_TRUE(writeOutputFile(path("r.json"), "one", {}, error)) << error;
  EXPECT_EQ(read(path("r.json")), "one");
  ASSERT_TRUE(writeOutputFile(path("r.json"), "two", {}, error)) << error;
  EXPECT_EQ(read(path("r.json")), "two");
  EXPECT_EQ(entries(), std::vector<std::string>{"r.json"});
}

TEST_F(OutputFile, NeverWritesOverAnInput) {
  std::string profile = write("run.sqlite", "profile bytes");
  std::string script = write("train.py", "print(1)\n");
  std::vector<std::string> inputs = {profile, script};
  std::string error;
  EXPECT_FALSE(writeOutputFile(profile, "report", inputs, error));
  EXPECT_NE(error.find("is the input"), std::string::npos) << error;
  EXPECT_FALSE(writeOutputFile(script, "report", inputs, error));
  // Another spelling of the same file, and a hard link to it, are the same file.
  EXPECT_FALSE(writeOutputFile((dir_.path() / "." / "run.sqlite").string(), "report", inputs, error));
  fs::create_hard_link(profile, path("hard.sqlite"));
  EXPECT_FALSE(writeOutputFile(path("hard.sqlite"), "report", inputs, error));
  // A link to the profile: the profile would be replaced through it.
  fs::create_symlink(profile, path("link.sqlite"));
  EXPECT_FALSE(writeOutputFile(path("link.sqlite"), "report", inputs, error));
  EXPECT_EQ(read(profile), "profile bytes");
  EXPECT_EQ(read(script), "print(1)\n");
  EXPECT_NE(checkOutputPath(profile, inputs), "");
  EXPECT_EQ(checkOutputPath(path("other.json"), inputs), "");
}

TEST_F(OutputFile, RefusesWhatIsNotARegularFile) {
  std::string error;
  fs::create_directories(dir_.path() / "folder");
  EXPECT_FALSE(writeOutputFile(path("folder"), "x", {}, error));
  EXPECT_NE(error.find("is a folder"), std::string::npos) << error;
  fs::create_symlink(dir_.path() / "nowhere", path("dangling"));
  EXPECT_FALSE(writeOutputFile(path("dangling"), "x", {}, error));
  EXPECT_NE(error.find("link to nothing"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir_.path() / "nowhere"));
  EXPECT_FALSE(writeOutputFile(path("missing/r.json"), "x", {}, error));
  EXPECT_NE(error.find("no folder"), std::string::npos) << error;
}

TEST_F(OutputFile, ALinkToAFileReplacesTheFileAndKeepsTheLink) {
  std::string target = write("real.json", "old");
  fs::create_symlink(target, path("link.json"));
  std::string error;
  ASSERT_TRUE(writeOutputFile(path("link.json"), "new", {}, error)) << error;
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(read(target), "new");
}

TEST_F(OutputFile, AnOldTemporaryNameIsNeitherFollowedNorDestroyed) {
  // Sightline once wrote PATH.partial and renamed it: a link there wrote through to its target,
  // and a file there was lost.
  std::string victim = write("victim.txt", "keep me");
  fs::create_symlink(victim, path("r.json.partial"));
  write("s.json.partial", "someone's file");
  std::string error;
  ASSERT_TRUE(writeOutputFile(path("r.json"), "report", {}, error)) << error;
  ASSERT_TRUE(writeOutputFile(path("s.json"), "report", {}, error)) << error;
  EXPECT_EQ(read(victim), "keep me");
  EXPECT_TRUE(fs::is_symlink(path("r.json.partial")));
  EXPECT_EQ(read(path("s.json.partial")), "someone's file");
  EXPECT_FALSE(fs::is_symlink(path("r.json")));
  EXPECT_EQ(read(path("r.json")), "report");
  EXPECT_EQ(entries(),
            (std::vector<std::string>{"r.json", "r.json.partial", "s.json", "s.json.partial", "victim.txt"}));
}

TEST_F(OutputFile, SpecialFilesAreWrittenInPlace) {
  std::string error;
  ASSERT_TRUE(writeOutputFile("/dev/null", "report", {}, error)) << error;
  struct stat st = {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A pipe: the reader gets the bytes.
  std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read(fifo); });
  ASSERT_TRUE(writeOutputFile(fifo, "through the pipe", {}, error)) << error;
  reader.join();
  EXPECT_EQ(got, "through the pipe");
}

TEST_F(OutputFile, AFailedWriteIsAnError) {
  std::string error;
  EXPECT_FALSE(writeOutputFile("/dev/full", std::string(1 << 16, 'x'), {}, error));
  EXPECT_NE(error.find("No space left"), std::string::npos) << error;
  std::ofstream full("/dev/full");
  EXPECT_FALSE(writeOutputStream(full, std::string(1 << 16, 'x'), error));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  std::ostringstream fine;
  EXPECT_TRUE(writeOutputStream(fine, "ok", error));
  EXPECT_EQ(fine.str(), "ok");
}

}  // namespace
}  // namespace sightline::server
