// `sightline diff` on real captures of one script (tests/data/regress: the unchanged script six
// times, and one-line changes of known effect, each captured by `sightline capture` on an H200):
// the gate passes the unchanged runs, fails the changed ones and names what changed; runs that
// cannot be compared are refused with the reason and their own exit code.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A variant's folder under regress/ ("host/" for "host/item") and its name there ("item").
std::string folderOf(const std::string& variant) {
  auto slash = variant.rfind('/');
  return slash == std::string::npos ? "" : variant.substr(0, slash + 1);
}
std::string stemOf(const std::string& variant) { return variant.substr(folderOf(variant).size()); }

// The script a variant ran: its own where one line was changed, else its folder's train.py.
std::string scriptFor(const std::string& variant) {
  std::string changed = testDataPath("regress/" + variant + ".train.py");
  return fs::exists(changed) ? changed : testDataPath("regress/" + folderOf(variant) + "train.py");
}

// Each variant's summary, made once as a user makes it: the capture and its steps file beside,
// its own train.py in the folder `report` runs in (the lines' text comes from it).
const std::string& summaryOf(const std::string& variant) {
  static std::map<std::string, std::string> made;
  auto it = made.find(variant);
  if (it != made.end()) return it->second;
  std::string name = variant, stem = stemOf(variant);
  std::replace(name.begin(), name.end(), '/', '_');
  fs::path dir = fs::path(::testing::TempDir()) / ("diff_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(dataProfile("regress/" + variant + ".sqlite.xz"), dir / (stem + ".sqlite"));
  fs::copy_file(testDataPath("regress/" + variant + ".steps.json"), dir / (stem + ".steps.json"));
  fs::copy_file(scriptFor(variant), dir / "train.py");
  std::string out = (dir / "summary.json").string();
  auto r = runSightline("report --format summary --profile " + stem + ".sqlite -o summary.json", dir.string());
  EXPECT_EQ(r.code, 0) << r.out;
  return made[variant] = out;
}

CommandOutput diff(const std::string& base, const std::string& next, const std::string& options) {
  return runSightline("diff " + options + " '" + summaryOf(base) + "' '" + summaryOf(next) + "'");
}

json diffJson(const std::string& base, const std::string& next, const std::string& options, int code) {
  auto r = diff(base, next, options + " --format json");
  EXPECT_EQ(r.code, code) << r.out;
  return json::parse(r.out, nullptr, false);
}

constexpr const char* kGate = "--fail-on step:+5%,line:+1ms";

// A summary is kilobytes and holds what the gate needs: the timed steps, the lines' text.
TEST(Diff, ASummaryHoldsTheMeasuredStepsAndTheLinesText) {
  json doc = json::parse(readFile(summaryOf("base")), nullptr, false);
  ASSERT_TRUE(doc.is_object());
  const json& s = doc["summaries"][0];
  EXPECT_EQ(s["measured_ns"].size(), 20u);
  EXPECT_EQ(s["measured_input_ns"].size(), 20u);
  EXPECT_EQ(s["profiler"], "nsys");
  EXPECT_EQ(s["input_site"]["line"], 118);
  EXPECT_LT(fs::file_size(summaryOf("base")), 20'000u);
  bool mlp = false;
  for (const auto& l : s["lines"])
    mlp = mlp || (l["line"] == 75 && l["text"] == "return self.proj(F.gelu(self.fc(x)))");
  EXPECT_TRUE(mlp) << s["lines"].dump();
}

// The noise: the same script captured again, five times; no threshold is exceeded.
TEST(Diff, TheUnchangedScriptPassesEveryTime) {
  for (const char* again : {"same", "repeat1", "repeat2", "repeat3", "repeat4"}) {
    json d = diffJson("base", again, kGate, 0);
    EXPECT_FALSE(d["failed"]) << again;
    EXPECT_LT(std::abs(d["step"]["relative"].get<double>()), 0.10) << again;
    EXPECT_GT(d["detectable_relative"].get<double>(), 0) << again;
  }
}

// The noise model: each of the six unchanged runs against the other five as the base (their
// spread from run to run in the interval): no false alarm at the thresholds docs/ci.md gives.
TEST(Diff, AgainstFiveBaseRunsNoUnchangedRunFails) {
  const std::vector<std::string> runs = {"base", "same", "repeat1", "repeat2", "repeat3", "repeat4"};
  for (const auto& left_out : runs) {
    std::string bases;
    for (const auto& r : runs)
      if (r != left_out) bases += " '" + summaryOf(r) + "'";
    auto out = runSightline("diff --format json " + std::string(kGate) + bases + " '" + summaryOf(left_out) + "'");
    EXPECT_EQ(out.code, 0) << left_out << ": " << out.out;
    json d = json::parse(out.out, nullptr, false);
    EXPECT_EQ(d["base_runs"], 5) << left_out;
  }
  // And a change of known effect still fails against them.
  std::string bases;
  for (const auto& r : runs) bases += " '" + summaryOf(r) + "'";
  EXPECT_EQ(runSightline("diff " + std::string(kGate) + bases + " '" + summaryOf("wide") + "'").code, 1);
}

// hidden = 8 * n_embd (line 70): the MLP's line 75 grows, and the gate names it.
TEST(Diff, AWiderLayerFailsOnItsLine) {
  json d = diffJson("base", "wide", kGate, 1);
  EXPECT_TRUE(d["failed"]);
  EXPECT_EQ(d["lines"][0]["new_line"], 75);
  EXPECT_GT(d["lines"][0]["change"]["delta_ns"].get<double>(), 3e6);
  EXPECT_TRUE(d["lines"][0]["change"]["certain"]);
  EXPECT_EQ(d["gate"][1]["subject"], "train.py:75");
  EXPECT_TRUE(d["gate"][1]["exceeded"]);
  auto md = diff("base", "wide", std::string(kGate) + " --format markdown");
  EXPECT_EQ(md.code, 1);
  EXPECT_NE(md.out.find("| train.py:75 |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("`return self.proj(F.gelu(self.fc(x)))`"), std::string::npos) << md.out;
  // SARIF, from the checkout (the folder with train.py): the line, on the file here.
  auto sarif = runSightline(
      "diff " + std::string(kGate) + " --format sarif '" + summaryOf("base") + "' '" + summaryOf("wide") + "'",
      fs::path(summaryOf("wide")).parent_path().string());
  EXPECT_EQ(sarif.code, 1) << sarif.out;
  json doc = json::parse(sarif.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << sarif.out;
  const json& first = doc["runs"][0]["results"][0];
  EXPECT_EQ(first["ruleId"], "gpu-time-regressed");
  EXPECT_EQ(first["level"], "error");
  EXPECT_EQ(first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "train.py");
  EXPECT_EQ(first["locations"][0]["physicalLocation"]["region"]["startLine"], 75);
}

// num_workers=0: the step grows by the loop's wait for batches, measured, at the loop's line.
TEST(Diff, NoLoaderWorkersFailOnTheLoopsWait) {
  json d = diffJson("base", "workers0", kGate, 1);
  EXPECT_TRUE(d["gate"][0]["exceeded"]);
  const json& first = d["parts"][0];
  EXPECT_EQ(first["part"], "the loop waiting for its next batch (measured)");
  EXPECT_EQ(first["site"]["line"], 118);
  EXPECT_GT(first["change"]["delta_ns"].get<double>(), 10e6);
  EXPECT_TRUE(first["change"]["certain"]);
}

// fp32 matmuls in the MLP (line 75): the step's change is certain and past the threshold, and
// the line that explains it is 75. cuBLAS launches its fp32 GEMMs through cudaLaunchKernelExC,
// which nsys gives no Python backtrace: the forward ops lie between a call into the MLP and a
// call inside it, and their backward follows them (BacktraceIndex::nestedLine).
TEST(Diff, Fp32MatmulsFailTheStepOnTheirLine) {
  json d = diffJson("base", "fp32", "--fail-on step:+5%,line:+1ms", 1);
  EXPECT_TRUE(d["gate"][0]["exceeded"]);
  EXPECT_GT(d["step"]["relative"].get<double>(), 1.0);
  EXPECT_EQ(d["lines"][0]["new_line"], 75) << d["lines"].dump();
  EXPECT_GT(d["lines"][0]["change"]["delta_ns"].get<double>(), 40e6);
  EXPECT_EQ(d["gate"][1]["subject"], "train.py:75");
  // The line was edited in place: one line, not a removed and a new one; its kernels changed.
  const json& line = d["lines"][0];
  EXPECT_EQ(line["kind"], "edited");
  EXPECT_EQ(line["base_line"], 75);
  EXPECT_TRUE(line["kernels_changed"]) << line.dump();
  EXPECT_NE(line["kernels"]["new"][0].get<std::string>().find("f32f32"), std::string::npos) << line.dump();
  EXPECT_EQ(line["kernels"]["base"][0].get<std::string>().find("f32f32"), std::string::npos) << line.dump();
  EXPECT_NE(diff("base", "fp32", "").out.find("train.py:75 (edited)"), std::string::npos);
}

// The same capture reported: nothing unattributed, and backward work not left on loss.backward().
TEST(Diff, Fp32GemmsWithoutBacktracesLandOnTheirLine) {
  fs::path dir = fs::path(summaryOf("fp32")).parent_path();
  auto r = runSightline("report --format json --profile fp32.sqlite train.py", dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  json doc = json::parse(r.out, nullptr, false);
  double total = doc["steady_gpu_ns"].get<double>();
  EXPECT_LT(doc["unattributed_gpu_ns"].get<double>(), 0.01 * total);
  EXPECT_LT(doc["by_method"]["caller"].get<double>(), 0.03 * total);
  for (const auto& l : doc["files"][0]["lines"]) {
    if (l["line"] == 75) {
      EXPECT_GT(l["gpu_ns"].get<double>(), 0.8 * total);
    } else if (l["line"] == 122) {
      EXPECT_LT(l["gpu_ns"].get<double>(), 0.05 * total);
    }
  }
}

// loss.item() inserted at line 123: a new line there, and the lines below it still matched.
TEST(Diff, AnInsertedLineIsNewAndTheLinesBelowKeepTheirMatch) {
  json d = diffJson("base", "item", "--lines 0", 0);
  bool inserted = false, moved = false;
  for (const auto& l : d["lines"]) {
    if (l["text"] == "loss.item()") inserted = l["kind"] == "new" && l["new_line"] == 123;
    if (l["text"] == "optimizer.step()") moved = l["base_line"] == 124 && l["new_line"] == 125 && l["kind"] == "both";
  }
  EXPECT_TRUE(inserted) << d["lines"].dump();
  EXPECT_TRUE(moved) << d["lines"].dump();
}

// The CI step of docs/ci.md (scripts/regression_gate.sh), as the workflows run it: a capture's
// summary made in the checkout, then the diff against the base runs' summaries.
TEST(Diff, TheCiGateStepPassesTheSameAndFailsTheChange) {
  auto gate = [](const std::string& variant, const std::string& bases) {
    fs::path dir = fs::path(::testing::TempDir()) / ("gate_" + variant);
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(dataProfile("regress/" + variant + ".sqlite.xz"), dir / "run.sqlite");
    fs::copy_file(testDataPath("regress/" + variant + ".steps.json"), dir / "run.steps.json");
    fs::copy_file(scriptFor(variant), dir / "train.py");
    std::string cmd = "cd '" + dir.string() + "' && SIGHTLINE='" + binaryPath() + "' '" +
                      sourcePath("scripts/regression_gate.sh") + "' out run.sqlite" + bases + " > log.txt 2>&1";
    int status = std::system(cmd.c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, dir);
  };
  auto [first, first_dir] = gate("base", "");
  EXPECT_EQ(first, 0) << readFile((first_dir / "log.txt").string());
  EXPECT_TRUE(fs::exists(first_dir / "out/summary.json"));
  std::string bases = " '" + (first_dir / "out/summary.json").string() + "'";
  for (const char* r : {"repeat1", "repeat2", "repeat3", "repeat4"}) bases += " '" + summaryOf(r) + "'";
  auto [same, same_dir] = gate("same", bases);
  EXPECT_EQ(same, 0) << readFile((same_dir / "log.txt").string());
  EXPECT_NE(readFile((same_dir / "out/diff.md").string()).find("PASS"), std::string::npos);
  auto [wide, wide_dir] = gate("wide", bases);
  EXPECT_EQ(wide, 1) << readFile((wide_dir / "log.txt").string());
  std::string md = readFile((wide_dir / "out/diff.md").string());
  EXPECT_NE(md.find("FAIL"), std::string::npos) << md;
  EXPECT_NE(md.find("| train.py:75 |"), std::string::npos) << md;
  json d = json::parse(readFile((wide_dir / "out/diff.json").string()), nullptr, false);
  EXPECT_EQ(d["lines"][0]["new_line"], 75);
  json sarif = json::parse(readFile((wide_dir / "out/diff.sarif").string()), nullptr, false);
  EXPECT_EQ(sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "train.py");
}

// Another profiler, another script: refused, with the reason and exit code 4.
TEST(Diff, RunsOfAnotherProfilerAreRefused) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_torch";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(testDataPath("capture/runs/gpt_torch.rank0.pt.trace.json.gz"),
                dir / "gpt_torch.rank0.pt.trace.json.gz");
  fs::copy_file(testDataPath("capture/runs/gpt_torch.steps.json"), dir / "gpt_torch.steps.json");
  auto r = runSightline("diff '" + summaryOf("base") + "' gpt_torch.rank0.pt.trace.json.gz", dir.string());
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("cannot be compared: different profilers"), std::string::npos) << r.out;
}

// A summary made where the script could not be read has no line text: its lines are matched by
// number, and said so, never all "new" (a false alarm on the same run).
TEST(Diff, ASummaryWithoutTextMatchesByLineNumber) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_notext";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(dataProfile("regress/base.sqlite.xz"), dir / "base.sqlite");
  fs::copy_file(testDataPath("regress/base.steps.json"), dir / "base.steps.json");
  auto made = runSightline("report --format summary --profile base.sqlite -o notext.json", dir.string());
  ASSERT_EQ(made.code, 0) << made.out;
  auto r = runSightline("diff " + std::string(kGate) + " '" + summaryOf("base") + "' notext.json", dir.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("matched by line number"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(new)"), std::string::npos) << r.out;
}

// A folder is one run: two runs' summaries in it are refused; an output into it replaces none.
TEST(Diff, AFolderIsOneRunAndItsFilesAreInputs) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_folder";
  fs::remove_all(dir);
  fs::create_directories(dir / "two");
  fs::copy_file(summaryOf("base"), dir / "two/a.json");
  fs::copy_file(summaryOf("same"), dir / "two/b.json");
  auto r = runSightline("diff two two", dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds rank 0 twice"), std::string::npos) << r.out;
  fs::create_directories(dir / "one");
  fs::copy_file(summaryOf("same"), dir / "one/rank0.json");
  std::string before = readFile((dir / "one/rank0.json").string());
  r = runSightline("diff -o one/rank0.json '" + summaryOf("base") + "' one", dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(readFile((dir / "one/rank0.json").string()), before);
  fs::create_directories(dir / "empty");
  r = runSightline("diff empty one", dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no summaries (*.json) in the folder"), std::string::npos) << r.out;
}

TEST(Diff, BadInputIsAClearError) {
  auto r = runSightline("diff --fail-on memory:+10ms a.json b.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("memory:+512MiB"), std::string::npos) << r.out;
  r = runSightline("diff '" + summaryOf("base") + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("give two runs or more"), std::string::npos) << r.out;
  r = runSightline("diff '" + summaryOf("base") + "' /nonexistent/x.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("x.json"), std::string::npos) << r.out;
}

// A two-rank DDP job (tests/data/regress/ddp), then the same job with rank 1 starved of data
// (SLOW_RANK=1: no loader workers): the step fails the gate, and the first part named is rank
// 1's measured wait for batches at the loop's line; a pooled median over ranks would hide it.
TEST(Diff, OneSlowedRankFailsOnItsOwnWaitForData) {
  json d = diffJson("ddp/base", "ddp/slow", kGate, 1);
  EXPECT_TRUE(d["gate"][0]["exceeded"]);
  EXPECT_GT(d["step"]["relative"].get<double>(), 0.3);
  const json& first = d["parts"][0];
  EXPECT_EQ(first["rank"], 1) << d["parts"].dump();
  EXPECT_EQ(first["part"], "the loop waiting for its next batch (measured)");
  EXPECT_EQ(first["site"]["line"], 131);
  EXPECT_GT(first["change"]["delta_ns"].get<double>(), 10e6);
  EXPECT_TRUE(first["change"]["certain"]);
  auto text = diff("ddp/base", "ddp/slow", kGate);
  EXPECT_NE(text.out.find("rank 1: the loop waiting for its next batch (measured) at train.py:131"), std::string::npos)
      << text.out;
}

// memory:+10% on the allocator's peak sightline capture measured (the host variants of the
// script: 8 blocks of n_embd 3072): the wider MLP holds 57% more at its peak and fails; the
// unchanged script's peak is the same to the byte and passes.
TEST(Diff, AWiderMlpFailsTheMemoryGate) {
  json doc = json::parse(readFile(summaryOf("host/base")), nullptr, false);
  EXPECT_GT(doc["summaries"][0]["measured_memory_peak"]["allocated_bytes"].get<int64_t>(), int64_t{10} << 30);
  json d = diffJson("host/base", "host/wide", "--fail-on memory:+10%", 1);
  EXPECT_TRUE(d["memory"]["known"]);
  EXPECT_NEAR(d["memory"]["relative"].get<double>(), 0.571, 0.01);
  EXPECT_TRUE(d["gate"][0]["exceeded"]);
  EXPECT_EQ(d["gate"][0]["unit"], "percent");
  json same = diffJson("host/base", "host/same", "--fail-on memory:+10%,step:+5%", 0);
  EXPECT_EQ(same["memory"]["delta_bytes"], 0);
  EXPECT_FALSE(same["failed"]);
  // Summaries of captures made before the hook read the peak: the rule is not checked, said so.
  auto old = diff("base", "wide", "--fail-on memory:+10%");
  EXPECT_EQ(old.code, 0) << old.out;
  EXPECT_NE(old.out.find("memory:+10%: not checked: a run has no measured memory peak"), std::string::npos) << old.out;
}

// An added `loss.item()` after backward in the GPU-bound host variant: the step grew +5%, past
// the spread of one base run's steps, and no line's GPU time explains it; the line named
// first is the new sync, in text and in SARIF.
TEST(Diff, AnAddedItemIsNamedAsTheNewSync) {
  json d = diffJson("host/base", "host/item", "--fail-on step:+1%", 1);
  EXPECT_TRUE(d["step"]["certain"]);
  EXPECT_EQ(d["lines"][0]["new_line"], 123) << d["lines"].dump();
  EXPECT_EQ(d["lines"][0]["text"], "loss.item()");
  EXPECT_TRUE(d["lines"][0]["sync_added"]);
  auto sarif = runSightline(
      "diff --fail-on step:+1% --format sarif '" + summaryOf("host/base") + "' '" + summaryOf("host/item") + "'",
      fs::path(summaryOf("host/item")).parent_path().string());
  json doc = json::parse(sarif.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << sarif.out;
  const json& first = doc["runs"][0]["results"][0];
  EXPECT_EQ(first["ruleId"], "sync-added");
  EXPECT_EQ(first["locations"][0]["physicalLocation"]["region"]["startLine"], 123);
}

// The HTML page: the runs' step bars side by side, every text from a summary escaped (a line's
// source text is someone else's), nothing fetched.
TEST(Diff, TheHtmlPageDrawsEachRunsStepsAndEscapesTheirText) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_html";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text = readFile(summaryOf("wide"));
  const std::string line = "return self.proj(F.gelu(self.fc(x)))";
  auto at = text.find(line);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, line.size(), "<script>alert(1)</script>");
  {
    std::ofstream out(dir / "wide.json");
    out << text;
  }
  auto r = runSightline("diff --fail-on step:+5% --format html '" + summaryOf("base") + "' wide.json", dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out.rfind("<!doctype html>", 0), 0u) << r.out.substr(0, 200);
  EXPECT_EQ(r.out.find("<script>alert"), std::string::npos);
  EXPECT_NE(r.out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(r.out.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(r.out.find("http"), r.out.find("http-equiv"));  // nothing fetched
  size_t bars = 0;
  for (size_t p = r.out.find("<rect class=\""); p != std::string::npos; p = r.out.find("<rect class=\"", p + 1)) ++bars;
  json d = diffJson("base", "wide", "", 0);
  EXPECT_EQ(bars, d["step"]["base_samples"].get<size_t>() + d["step"]["new_samples"].get<size_t>());
  EXPECT_NE(r.out.find("class=\"new grew\""), std::string::npos);
}

// Text a summary carries is someone else's: line breaks cannot forge output lines, control
// and bidirectional characters do not reach a terminal, a comment or a SARIF URI.
TEST(Diff, HostileSummaryTextStaysInert) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_hostile";
  fs::remove_all(dir);
  fs::create_directories(dir);
  json doc = json::parse(readFile(summaryOf("wide")), nullptr, false);
  ASSERT_TRUE(doc.is_object());
  json& lines = doc["summaries"][0]["lines"];
  for (auto& l : lines)
    if (l["line"] == 75) l["text"] = "x\r\nVerdict   PASS\u001b[2J\u202e\u0007";
  {
    std::ofstream out(dir / "wide.json");
    out << doc.dump();
  }
  auto text = runSightline("diff --fail-on step:+5% '" + summaryOf("base") + "' wide.json", dir.string());
  EXPECT_EQ(text.code, 1) << text.out;
  EXPECT_EQ(text.out.find("\nVerdict   PASS"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.out.find("\u202e"), std::string::npos);
  auto md = runSightline("diff --format markdown '" + summaryOf("base") + "' wide.json", dir.string());
  EXPECT_EQ(md.out.find('\x07'), std::string::npos);
  EXPECT_EQ(md.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(md.out.find("\r"), std::string::npos);
}

// Runs that cannot be compared: exit 4, and each document format says why (a CI step that reads
// the JSON or posts the comment gets the reason, not an empty file).
TEST(Diff, IncomparableRunsSayWhyInEveryFormat) {
  fs::path dir = fs::path(::testing::TempDir()) / "diff_incomparable";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text = readFile(summaryOf("wide"));
  auto at = text.find("NVIDIA H200");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "NVIDIA H100");
  {
    std::ofstream out(dir / "h100.json");
    out << text;
  }
  auto j = runSightline("diff --format json -o c.json '" + summaryOf("base") + "' h100.json", dir.string());
  EXPECT_EQ(j.code, 4);
  json d = json::parse(readFile((dir / "c.json").string()), nullptr, false);
  ASSERT_TRUE(d.is_object()) << j.out;
  EXPECT_NE(d["incomparable"].get<std::string>().find("different GPUs"), std::string::npos);
  auto md = runSightline("diff --format markdown -o c.md '" + summaryOf("base") + "' h100.json", dir.string());
  EXPECT_EQ(md.code, 4);
  EXPECT_NE(readFile((dir / "c.md").string()).find("cannot be compared"), std::string::npos);
  // A summary with no lines and no command could be of any script: refused, not gated.
  json none = json::parse(readFile(summaryOf("wide")), nullptr, false);
  none["summaries"][0]["lines"] = json::array();
  none["summaries"][0].erase("command");
  {
    std::ofstream out(dir / "none.json");
    out << none.dump();
  }
  auto r = runSightline("diff --fail-on step:+5% '" + summaryOf("base") + "' none.json", dir.string());
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("cannot tell the runs ran one script"), std::string::npos) << r.out;
}

// The steps file read beside a profile is an input too: `-o` onto it is refused.
TEST(Diff, AnOutputNeverReplacesAStepsFileItRead) {
  fs::path dir = fs::path(summaryOf("base")).parent_path();
  std::string before = readFile((dir / "base.steps.json").string());
  auto r = runSightline("diff -o base.steps.json base.sqlite base.sqlite", dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(readFile((dir / "base.steps.json").string()), before);
}

}  // namespace
}  // namespace sightline::testing
