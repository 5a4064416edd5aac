// Hostile inputs, round four (issue 54), for `sightline capture`: where its files go (a folder,
// one that takes no file, a name nsys would rewrite, the command's own files), the private
// folder under a TMPDIR that is relative, holds a ':' or is no folder, parts crafted by what runs
// under the capture (values past int64, more steps than the window, large, many), and nsys's log
// relayed to the terminal. The stand-ins of capture_test.cpp; the signals are there.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/e2e/capture_fixture.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HostileCapture : public Capture {
 protected:
  // The stand-in training script copied into the test's folder, as the user's own script is.
  std::string ownScript() {
    fs::copy_file(capturePath("fake_train.py"), dir_ / "train.py", fs::copy_options::overwrite_existing);
    return readFile((dir_ / "train.py").string());
  }
  // `python3 crafted_parts.py ARGS`, then the training script: crafted parts beside a real window.
  std::string craftedThenTrain(const std::string& args) const {
    return "sh -c \"python3 '" + capturePath("crafted_parts.py") + "' " + args + " && " + kTrain + "\"";
  }
};

TEST_F(HostileCapture, TheCommandsFilesAreInputs) {
  // NAME.steps.json a link to the script: capture once wrote the steps over the script.
  std::string script = ownScript();
  fs::create_symlink("train.py", dir_ / "sightline-capture.steps.json");
  auto run = capture("--profiler none -- python3 train.py");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("is the input train.py: not written over"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("trained"), std::string::npos) << "refused before the command runs\n" << run.out;
  EXPECT_EQ(readFile((dir_ / "train.py").string()), script);
  fs::remove(dir_ / "sightline-capture.steps.json");
  // The PyTorch profiler's traces are written in the private folder and moved after the run: a
  // link to the script in their place is refused (rank 0's before the run, the others' after it).
  fs::create_symlink("train.py", dir_ / "ddp.rank1.pt.trace.json.gz");
  run = capture("--profiler torch -o ddp -- python3 '" + capturePath("fake_torchrun.py") + "' --nproc 2 train.py");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("ddp.rank1.pt.trace.json.gz is the input train.py: not written over"), std::string::npos)
      << run.out;
  EXPECT_EQ(readFile((dir_ / "train.py").string()), script) << "the trace went over the script";
  EXPECT_EQ(steps("ddp")["profiles"], json({"ddp.rank0.pt.trace.json.gz"}));
  fs::create_symlink("train.py", dir_ / "t.rank0.pt.trace.json.gz");
  run = capture("--profiler torch -o t -- python3 train.py");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_EQ(run.out.find("trained"), std::string::npos) << run.out;
  EXPECT_EQ(readFile((dir_ / "train.py").string()), script);
}

TEST_F(HostileCapture, AFolderGetsSightlineCaptureInIt) {
  // `-o .` once wrote `.steps.json`, a hidden file of no name.
  fs::create_directories(dir_ / "runs");
  for (std::string output : {".", "runs/", "runs"}) {
    auto run = capture("--profiler none -o " + output + " -- " + kTrain);
    ASSERT_EQ(run.code, 0) << output << "\n" << run.out;
    std::string folder = output == "." ? "" : "runs/";
    EXPECT_TRUE(fs::exists(dir_ / (folder + "sightline-capture.steps.json"))) << output << "\n" << run.out;
    EXPECT_NE(run.out.find("wrote " + folder + "sightline-capture.steps.json"), std::string::npos) << run.out;
    EXPECT_FALSE(fs::exists(dir_ / ".steps.json"));
    EXPECT_FALSE(fs::exists(dir_ / "runs/.steps.json"));
  }
}

TEST_F(HostileCapture, AFolderThatTakesNoFileIsFoundBeforeTheRun) {
  // Found after the whole run once, its measured steps lost. /proc takes no new file, even from root.
  auto run = capture("--profiler none -o /proc/run -- " + kTrain);
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("cannot write into /proc"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("trained"), std::string::npos) << "refused before the command runs\n" << run.out;
}

TEST_F(HostileCapture, NsysWouldRewriteAPercentInTheName) {
  // nsys expands %p, %q{RANK}, %h in its output name: the report would not be where sightline looks.
  auto run = capture("-o run_%p -- " + kTrain, withFakeNsys());
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("nsys expands `%` patterns"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("trained"), std::string::npos) << run.out;
  // Without nsys the name is only a name.
  run = capture("--profiler none -o run_%p -- " + kTrain);
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_TRUE(fs::exists(dir_ / "run_%p.steps.json"));
}

TEST_F(HostileCapture, ATmpdirThatWouldDisableTheHook) {
  // A relative TMPDIR put a relative folder on PYTHONPATH: a command that changes its directory
  // before Python starts ran without the hook, and the message blamed `python -I`/`-S`.
  fs::create_directories(dir_ / "sub");
  std::string in_sub = "sh -c \"cd sub && " + kTrain + "\"";
  auto run = capture("--profiler none -- " + in_sub, "TMPDIR=tmp");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(steps()["ranks"][0]["timed"].size(), 20u) << run.out;
  // A ':' would split PYTHONPATH: /tmp instead, and the message says why.
  fs::create_directories(dir_ / "a:b");
  run = capture("--profiler none -- " + kTrain, "TMPDIR='" + (dir_ / "a:b").string() + "'");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("holds a ':', which would split PYTHONPATH"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("under /tmp instead"), std::string::npos) << run.out;
  EXPECT_TRUE(fs::is_empty(dir_ / "a:b"));
  // A TMPDIR that is a file, not a folder.
  std::ofstream(dir_ / "not-a-folder") << "x";
  run = capture("--profiler none -- " + kTrain, "TMPDIR='" + (dir_ / "not-a-folder").string() + "'");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("is not a folder"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("-I or -S"), std::string::npos) << run.out;
}

TEST_F(HostileCapture, CraftedPartsAreRangeCheckedAndBounded) {
  // A rank whose times are 2^62 ns: their median and the hook's share once overflowed ("median
  // -0.00 ms", "(0.000%)"). Refused whole; the real rank's window is kept.
  auto run = capture("--profiler none -- " + craftedThenTrain("overflow"));
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_NE(run.out.find("rank.7.json: not a rank's steps"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("median -"), std::string::npos) << run.out;
  ASSERT_EQ(steps()["ranks"].size(), 1u) << run.out;
  EXPECT_EQ(steps()["ranks"][0]["rank"], 0);
  // More steps than the window holds, and a part of megabytes: refused.
  run = capture("--profiler none -- " + craftedThenTrain("steps"));
  EXPECT_NE(run.out.find("rank.8.json: not a rank's steps: 25 timed steps, more than the window's 20"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(steps()["ranks"].size(), 1u);
  run = capture("--profiler none -- " + craftedThenTrain("large"));
  EXPECT_NE(run.out.find("rank.9.json: larger than the"), std::string::npos) << run.out;
  EXPECT_EQ(steps()["ranks"].size(), 1u);
  // Many bad parts: 20 warnings, and a count of the rest.
  run = capture("--profiler none -- " + craftedThenTrain("many 30"));
  EXPECT_EQ(run.code, 0) << run.out;
  size_t warnings = 0;
  for (size_t at = run.out.find(": not a JSON object"); at != std::string::npos;
       at = run.out.find(": not a JSON object", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 20u) << run.out;
  EXPECT_NE(run.out.find("... and 10 more warnings of the parts"), std::string::npos) << run.out;
}

TEST_F(HostileCapture, NsyssLogReachesTheTerminalEscaped) {
  auto run = capture("-- " + kTrain,
                     withFakeNsys() + " FAKE_NSYS_EXPORT_FAILS=1 FAKE_NSYS_EXPORT_MESSAGE='failed \\e]0;pwned'");
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_NE(run.out.find("failed \\x1b]0;pwned"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << run.out;
  // The report is named in the steps file, with the command that exports it.
  EXPECT_EQ(steps()["profiles"], json({"sightline-capture.nsys-rep"})) << run.out;
  EXPECT_NE(run.out.find("export it later with:"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace sightline::testing
