// Hostile inputs, round four (issue 54), at the binary, for the verbs that read: escape sequences
// from a profile, a summary or a file name shown and never sent to the terminal.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "tests/support/scratch_dir.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTitle = "\x1b]0;pwned\x07";  // retitles the window
const std::string kClear = "\x1b[2J\x1b[H";     // clears the screen
const std::string kCsi =
    "\xc2\x9b"
    "31m";  // C1 CSI, in UTF-8

// No byte a terminal would act on: C0 controls other than newline and tab, DEL, C1.
void expectNoControls(const std::string& text, const std::string& what) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    bool c0 = c < 0x20 && c != '\n' && c != '\t';
    bool c1 = c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if (c0 || c == 0x7f || c1) {
      ADD_FAILURE() << what << ": byte " << static_cast<int>(c) << " at " << i << " in\n" << text.substr(0, 2000);
      return;
    }
  }
}

class HostileReport : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = dir_ / "run.sqlite";
    fs::copy_file(repoProfile("examples/train_small_naive.sqlite.xz"), profile_);
  }
  CommandOutput run(const std::string& args, int seconds = 120) { return runSightline(args, dir_.path(), seconds); }
  ScratchDir dir_{"sightline_hostile_report"};
  std::string profile_;
};

// A PyTorch profiler trace whose GPU name, Python function and file names and kernel names hold
// escape sequences, launching 20 kernels under train.py's line 5.
std::string craftedTrace() {
  json events = json::array();
  events.push_back({{"ph", "X"},
                    {"cat", "python_function"},
                    {"name", "train.py(3): main"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", 1000},
                    {"dur", 900},
                    {"args", {{"Python id", 1}, {"Python parent id", 0}}}});
  events.push_back({{"ph", "X"},
                    {"cat", "python_function"},
                    {"name", "train.py(5): f" + kTitle},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", 1001},
                    {"dur", 800},
                    {"args", {{"Python id", 2}, {"Python parent id", 1}}}});
  events.push_back({{"ph", "X"},
                    {"cat", "python_function"},
                    {"name", "evil" + kClear + ".py(2): g" + kCsi},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", 1002},
                    {"dur", 700},
                    {"args", {{"Python id", 3}, {"Python parent id", 2}}}});
  for (int i = 0; i < 20; ++i) {
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", 1100 + i * 10},
                      {"dur", 5},
                      {"args", {{"correlation", 7 + i}}}});
    events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", "k" + kTitle},
                      {"pid", 0},
                      {"tid", 7},
                      {"ts", 1110 + i * 10},
                      {"dur", 5},
                      {"args", {{"correlation", 7 + i}, {"device", 0}, {"stream", 7}}}});
  }
  json doc = {{"deviceProperties", json::array({{{"id", 0}, {"name", "H100" + kTitle}, {"totalGlobalMem", 1000}}})},
              {"traceEvents", events}};
  return doc.dump();
}

TEST_F(HostileReport, EscapeSequencesAreShownNeverSent) {
  dir_.write("t.pt.trace.json", craftedTrace());
  dir_.write("train.py", "import torch\n\ndef main():\n    x = 1\n    f()\n    y = torch.zeros(3).cuda()\n");
  // report's text: the GPU's name is there, its escape visible.
  auto report = run("report --profile t.pt.trace.json train.py");
  ASSERT_EQ(report.code, 0) << report.out.substr(0, 500);
  expectNoControls(report.out, "report");
  EXPECT_NE(report.out.find("H100\\x1b]0;pwned\\x07"), std::string::npos) << report.out.substr(0, 500);
  // check's messages name the profile's Python function.
  auto check = run("check --profile t.pt.trace.json train.py");
  expectNoControls(check.out, "check");
  EXPECT_NE(check.out.find("f\\x1b]0;pwned\\x07"), std::string::npos) << check.out;
  // --merge of a summary whose host, report name and warnings were crafted.
  ASSERT_EQ(run("report --format summary --profile t.pt.trace.json -o s.json").code, 0);
  json summary = json::parse(readFile(dir_ / "s.json"));
  summary["summaries"][0]["host"] = "node" + kTitle;
  summary["summaries"][0]["report"] = "r" + kCsi + ".sqlite";
  summary["summaries"][0]["warnings"] = json::array({kClear + "cleared"});
  dir_.write("s.json", summary.dump());
  auto merged = run("report --merge s.json");
  ASSERT_EQ(merged.code, 0) << merged.out;
  expectNoControls(merged.out, "--merge");
  EXPECT_NE(merged.out.find("\\x1b[2J\\x1b[Hcleared"), std::string::npos) << merged.out;
  // Messages on standard error quote what they were given.
  auto missing = run("report --profile 'gone" + kTitle + ".sqlite'");
  EXPECT_EQ(missing.code, 2);
  expectNoControls(missing.out, "an error");
  // JSON keeps the strings as they are (its writer escapes them its own way).
  auto as_json = run("report --format json --profile t.pt.trace.json train.py");
  EXPECT_NE(as_json.out.find("H100\\u001b]0;pwned\\u0007"), std::string::npos) << as_json.out.substr(0, 300);
}

}  // namespace
}  // namespace sightline::testing
