// Hostile inputs, round four (issue 54), at the binary, for the verbs that read: escape sequences
// from a profile, a summary or a file name shown and never sent to the terminal; step logs that
// are no files, huge, in UTF-16 or with counters past int64; --compare of a time profile with a
// memory snapshot; merged rank summaries whose sums would overflow.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/measured_run.h"
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
  // The report's JSON verdict of `--step-log log`.
  json unprofiled(const std::string& log) {
    auto r = run("report --format json --step-log '" + log + "' --profile run.sqlite");
    EXPECT_EQ(r.code, 0) << r.out.substr(0, 500);
    json doc = json::parse(r.out, nullptr, false);
    return doc.is_object() ? doc["verdict"]["unprofiled"] : json();
  }
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

TEST_F(HostileReport, AStepLogMustBeARegularFile) {
  // /dev/zero once ended in std::bad_alloc (the whole "file" read into memory); a FIFO would wait
  // for a writer forever; a folder is no log.
  std::string fifo = dir_ / "log.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir_ / "logs");
  for (const std::string& log : {std::string("/dev/zero"), fifo, dir_ / "logs"}) {
    Measured m = runMeasured({"report", "--step-log", log, "--profile", "run.sqlite"}, dir_.path(), 60);
    EXPECT_FALSE(m.killed) << log;
    EXPECT_EQ(m.code, 2) << log << ": " << m.out.substr(0, 300);
    EXPECT_NE(m.out.find("not a regular file"), std::string::npos) << log << ": " << m.out.substr(0, 300);
    EXPECT_LT(m.seconds, 20) << log;
  }
}

TEST_F(HostileReport, AStepLogIsReadInPieces) {
  // 600 MB of NUL bytes (a sparse file: no line of a log), then the log: read a megabyte at a
  // time, never whole (it once took its size in memory and more, 2.6 GB for a 729 MB log).
  std::string log = dir_ / "big.log";
  {
    std::ofstream out(log, std::ios::binary);
    out.seekp((std::streamoff{600} << 20) - 1);
    out.put('\0');
    out << "\n";
    for (int i = 0; i < 40; ++i) out << "iter " << i << ": loss 4.1, time 13.30ms\n";
  }
  Measured m = runMeasured({"report", "--format", "json", "--step-log", log, "--profile", "run.sqlite"}, dir_.path(),
                           sanitizedBuild() ? 300 : 120);
  ASSERT_FALSE(m.killed);
  ASSERT_EQ(m.code, 0) << m.out.substr(0, 300);
  json u = json::parse(m.out)["verdict"]["unprofiled"];
  EXPECT_EQ(u["wall_ns"], 13'300'000) << u.dump();
  if (!sanitizedBuild()) {
    EXPECT_LT(m.max_rss_kb, 200'000) << "the log is streamed";
  }
}

TEST_F(HostileReport, Utf16StepLogsAreDecodedAndSaySo) {
  // What PowerShell's `>` writes: UTF-16LE with a byte-order mark (once "no step times found").
  std::string text;
  for (int i = 0; i < 12; ++i) text += "iter " + std::to_string(i) + ": loss 4.1, time 13.30ms\r\n";
  for (bool little : {true, false}) {
    std::string bytes = little ? "\xff\xfe" : "";
    for (char c : text) {
      bytes += little ? c : '\0';
      bytes += little ? '\0' : c;
    }
    json u = unprofiled(dir_.write("ps.log", bytes));
    EXPECT_EQ(u["wall_ns"], 13'300'000) << u.dump();
    std::string reason = u.value("reason", "");
    EXPECT_NE(reason.find(little ? "(UTF-16LE)" : "(UTF-16BE)"), std::string::npos) << reason;
  }
  // A UTF-8 byte-order mark is skipped: the first line is the first step's.
  json bom = unprofiled(dir_.write("bom.log", "\xef\xbb\xbfstep 1 loss 9.1 13.3 ms\nstep 2 loss 9 13.3 ms\n"));
  EXPECT_EQ(bom["steps"], 2) << bom.dump();
}

TEST_F(HostileReport, HugeProgressCountersAreNoCounters) {
  // A 19-digit counter once added up to "standing for -9223372036854775807 steps".
  std::string log =
      " 10%| | 1/10 [00:01<00:09, 10.00it/s]\n"
      " 20%| | 9223372036854775807/10 [00:02<00:08, 10.00it/s]\n"
      " 30%| | 3/10 [00:03<00:07, 10.00it/s]\n";
  json u = unprofiled(dir_.write("tqdm.log", log));
  EXPECT_EQ(u["steps"], 2) << u.dump();
  auto text = run("report --step-log tqdm.log --profile run.sqlite");
  EXPECT_NE(text.out.find("standing for 2 steps"), std::string::npos) << text.out.substr(0, 800);
  EXPECT_EQ(text.out.find("standing for -"), std::string::npos);
}

// Every step of every summary of `doc` (a summary document or a JSON report's) holding 2^62 ns
// of GPU work: two such steps already add up past int64.
json withHugeSteps(json doc, int rank) {
  json& list = doc.contains("summaries") ? doc["summaries"] : doc["rank_summaries"];
  for (auto& summary : list) {
    summary["rank"] = rank;
    for (auto& step : summary["steps"]) step[3] = int64_t{1} << 62;
  }
  return doc;
}

TEST_F(HostileReport, MergedSumsStayWithinInt64) {
  // Crafted summaries once merged into "median step -0.00 ms" and negative GPU time per step; a
  // merge of JSON reports and of summaries read them the same way, and refuse them the same way.
  ASSERT_EQ(run("report --format summary --profile run.sqlite -o s.json").code, 0);
  ASSERT_EQ(run("report --format json --profile run.sqlite -o r.json").code, 0);
  json summary = json::parse(readFile(dir_ / "s.json")), report = json::parse(readFile(dir_ / "r.json"));
  ASSERT_GE(summary["summaries"][0]["steps"].size(), 3u);
  dir_.write("s0.json", withHugeSteps(summary, 0).dump());
  dir_.write("s1.json", withHugeSteps(summary, 1).dump());
  dir_.write("r0.json", withHugeSteps(report, 0).dump());
  dir_.write("r1.json", withHugeSteps(report, 1).dump());
  for (const std::string& args :
       {std::string("--merge s0.json --merge s1.json"), std::string("--format json --merge s0.json --merge s1.json"),
        std::string("--format json --merge r0.json --merge r1.json")}) {
    auto r = run("report " + args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out.substr(0, 600);
    EXPECT_NE(r.out.find("times past 10^14 ns"), std::string::npos) << args << "\n" << r.out.substr(0, 600);
  }
  // The summaries as they were still merge, into times of the same sign.
  auto ok = run("report --format json --merge s.json --merge s.json");
  ASSERT_EQ(ok.code, 0) << ok.out.substr(0, 300);
  EXPECT_GT(json::parse(ok.out)["job"]["median_step_ns"].get<int64_t>(), 0);
}

TEST_F(HostileReport, ComparingTimesWithAMemorySnapshot) {
  // A time profile against a memory snapshot (or the reverse) once printed a 100% change on every
  // line: refused, naming the side with no GPU times.
  std::string snapshot = dataProfile("memory/gpt.pickle.xz");
  auto r = run("report --profile run.sqlite --compare '" + snapshot + "'");
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("--compare: " + snapshot + " has no GPU times"), std::string::npos) << r.out.substr(0, 500);
  r = run("report --profile '" + snapshot + "' --compare run.sqlite");
  EXPECT_EQ(r.code, 2) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("--compare: " + snapshot + " has no GPU times"), std::string::npos) << r.out.substr(0, 500);
  // A trace that tells memory (profile_memory=True) against a snapshot: memory alone, no Δ of time.
  std::string trace = dataProfile("memory/gpt_mem_keep.pt.trace.json.xz");
  std::string script = sourcePath("tests/data/memory/gpt_mem.py");
  auto text = run("report --profile '" + trace + "' --compare '" + snapshot + "' '" + script + "'");
  ASSERT_EQ(text.code, 0) << text.out.substr(0, 500);
  EXPECT_NE(text.out.find("Change    against "), std::string::npos) << text.out.substr(0, 1500);
  EXPECT_NE(text.out.find("Δ at peak"), std::string::npos);
  EXPECT_EQ(text.out.find("Δ per step"), std::string::npos) << text.out.substr(0, 3000);
  EXPECT_EQ(text.out.find("Compare   "), std::string::npos);
  auto as_json = run("report --format json --profile '" + trace + "' --compare '" + snapshot + "' '" + script + "'");
  ASSERT_EQ(as_json.code, 0);
  json doc = json::parse(as_json.out);
  EXPECT_TRUE(doc.contains("memory_compare"));
  EXPECT_FALSE(doc.contains("compare")) << "no times to compare";
  EXPECT_EQ(as_json.out.find("compare_gpu_ns"), std::string::npos);
}

}  // namespace
}  // namespace sightline::testing
