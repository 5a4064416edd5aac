// `sightline report` end to end on our bundled example and the shared captures.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <map>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using Output = CommandOutput;
Output run(const std::string& args) { return runSightline(args, sourcePath("")); }

TEST(Report, AnnotatesTheExampleWithItsProfile) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto r = run("report --profile '" + profile + "' examples/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Steps     6 ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPUs      NVIDIA H200"), std::string::npos);
  EXPECT_NE(r.out.find("examples/train_small.py: 100% of GPU time on its lines"), std::string::npos) << r.out;
  // Line 33 with its per-step time, share, fwd + bwd split and a bar.
  auto at = r.out.find("│   33          return F.relu(self.bn(self.conv(x)))");
  ASSERT_NE(at, std::string::npos);
  std::string margin = r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at) - 1);
  EXPECT_NE(margin.find(" 81% "), std::string::npos) << margin;
  EXPECT_NE(margin.find(" + "), std::string::npos) << margin;
  EXPECT_NE(margin.find("█"), std::string::npos) << margin;
  EXPECT_NE(r.out.find("Σ"), std::string::npos) << "def and loop lines roll up";
}

// A PyTorch profiler trace (our H200 capture, kept in tests/data): same annotated source.
// A torchvision ResNet called on one line (multi/loader): nothing beneath `out = model(x)` is
// the user's, so the line says what it runs by kind, in the text, the JSON and the hover's
// Markdown (it was one figure: the whole model on one line).
TEST(Report, AnInstalledModelsLineSaysItsWorkByKind) {
  std::string profile = repoProfile("tests/data/multi/loader/loader.sqlite.xz");
  std::string args = "--profile '" + profile + "' tests/data/multi/loader/train_resnet.py";
  Output text = runSightline("report " + args, sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  auto at = text.out.find("│   49              out = model(x)");
  ASSERT_NE(at, std::string::npos) << text.out;
  std::string next = text.out.substr(text.out.find('\n', at) + 1);
  next = next.substr(0, next.find('\n'));
  EXPECT_NE(next.find("↳ by kind: "), std::string::npos) << next;
  EXPECT_NE(next.find("convolution "), std::string::npos) << next;
  EXPECT_NE(next.find("batch norm "), std::string::npos) << next;
  Output j = runSightline("report --format json " + args, sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  auto doc = nlohmann::json::parse(j.out);
  const nlohmann::json* line49 = nullptr;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["line"] == 49 && f["path"].get<std::string>().ends_with("train_resnet.py")) line49 = &l;
  ASSERT_NE(line49, nullptr);
  const auto& kinds = (*line49)["work_by_kind"];
  ASSERT_GE(kinds.size(), 3u) << line49->dump();
  std::set<std::string> named;
  for (size_t i = 0; i < kinds.size(); ++i) {
    named.insert(kinds[i]["kind"].get<std::string>());
    if (i > 0 && kinds[i]["kind"] != "other") {
      EXPECT_LE(kinds[i]["ns"], kinds[i - 1]["ns"]);
    }
  }
  EXPECT_TRUE(named.count("convolution") && named.count("batch norm")) << kinds.dump();
  // cuDNN's CUTLASS convolutions ("Kernel" by their short name) are convolutions, not GEMMs: a
  // ResNet-18's only GEMM is its last layer.
  EXPECT_LT(kinds[0]["kind"] == "GEMM" ? 1.0 : 0.0, 0.5) << kinds.dump();
  double shares = 0;
  int64_t ns = 0;
  for (const auto& k : kinds) shares += k["share"].get<double>(), ns += k["ns"].get<int64_t>();
  EXPECT_NEAR(shares, 1.0, 1e-9);
  int64_t kernels_ns = 0;  // every kernel of the line is in some kind
  for (const auto& k : (*line49)["top_kernels"]) kernels_ns += k["ns"].get<int64_t>();
  EXPECT_GE(ns, kernels_ns);
}

TEST(Report, KinetoTraceOnCallLines) {
  auto r =
      run("report --profile tests/data/h200/kineto/train_small_naive.pt.trace.json.gz "
          "tests/data/h200/kineto/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(PyTorch profiler)\nGPUs      NVIDIA H200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Steps     6 (ProfilerStep ranges)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Methods   aligned 100%"), std::string::npos) << r.out;
  auto at = r.out.find("│   33          return F.relu(self.bn(self.conv(x)))");
  ASSERT_NE(at, std::string::npos);
  std::string margin = r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at) - 1);
  EXPECT_NE(margin.find(" 81% "), std::string::npos) << margin;
  auto json_out =
      run("report --format json --profile tests/data/h200/kineto/train_small_naive.pt.trace.json.gz "
          "tests/data/h200/kineto/train_small.py");
  auto j = nlohmann::json::parse(json_out.out);
  EXPECT_EQ(j["profile"]["format"], "kineto-json");
  EXPECT_EQ(j["files"][0]["path"], "train_small.py");
  EXPECT_EQ(j["by_method"]["aligned"], j["steady_gpu_ns"]);
  // A trace that is not there: a clear error, no crash.
  auto bad = run("report --profile tests/data/broken.py.pt.trace.json tests/data/h200/kineto/train_small.py");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("no such file"), std::string::npos) << bad.out;
}

TEST(Report, JsonForEveryFile) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto r = run("report --profile '" + profile + "' --format json examples/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["attributed_gpu_ns"].get<int64_t>() + j["unattributed_gpu_ns"].get<int64_t>(),
            j["steady_gpu_ns"].get<int64_t>());
  EXPECT_EQ(j["steps"], 6);
  ASSERT_EQ(j["files"].size(), 1u);
  const auto& f = j["files"][0];
  EXPECT_EQ(f["path"], "/work/steering/lab/gpu/train_small.py");
  EXPECT_NE(f["local_path"].get<std::string>().find("examples/train_small.py"), std::string::npos);
  bool found = false;
  for (const auto& line : f["lines"]) {
    if (line["line"] != 33) continue;
    found = true;
    EXPECT_GT(line["forward_ns"].get<int64_t>(), 0);
    EXPECT_GT(line["backward_ns"].get<int64_t>(), 0);
    EXPECT_GT(line["by_method"]["backward"].get<int64_t>(), 0);
    EXPECT_FALSE(line["top_kernels"].empty());
  }
  EXPECT_TRUE(found);
}

// The issue's test case: the tuned capture compared with the naive one. The naive `.to(device)`
// of line 102 is gone (tuned copies on line 105 with non_blocking=True); each line's change is
// its own profile's time per step minus the other's, checked against the two JSON reports.
TEST(Report, CompareTunedWithNaive) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  SIGHTLINE_REQUIRE_PROFILE(tuned, "h200-captures/nsys/train_small_tuned.sqlite.xz");
  auto r = run("report --profile '" + tuned + "' --compare '" + naive + "' examples/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Compare   " + naive + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Δ per step"), std::string::npos) << r.out;
  auto rowOf = [&](const std::string& code) {
    auto at = r.out.find(code);
    return at == std::string::npos ? std::string()
                                   : r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at));
  };
  EXPECT_NE(rowOf("│  102                  x = x.to(device)\n").find("▼ −"), std::string::npos) << r.out;
  EXPECT_NE(rowOf("│  105                  x = x.to(device, non_blocking=True)").find("▲ +"), std::string::npos)
      << r.out;

  auto before =
      nlohmann::json::parse(run("report --format json --profile '" + naive + "' examples/train_small.py").out);
  auto after = nlohmann::json::parse(
      run("report --format json --profile '" + tuned + "' --compare '" + naive + "' examples/train_small.py").out);
  EXPECT_EQ(after["compare"]["total_gpu_ns"], before["total_gpu_ns"]);
  EXPECT_EQ(after["compare"]["steps"], before["steps"]);
  std::map<int, int64_t> naive_lines;
  for (const auto& l : before["files"][0]["lines"])
    if (l["gpu_ns"].get<int64_t>() > 0) naive_lines[l["line"]] = l["gpu_ns"];
  ASSERT_EQ(after["compare"]["files"].size(), 1u);
  size_t checked = 0;
  for (const auto& l : after["compare"]["files"][0]["lines"]) {
    EXPECT_EQ(l["gpu_ns"].get<int64_t>(), naive_lines[l["line"]]) << l.dump();
    ++checked;
  }
  EXPECT_EQ(checked, naive_lines.size());
  for (const auto& l : after["files"][0]["lines"])
    EXPECT_EQ(l["compare_gpu_ns"].get<int64_t>(), naive_lines.count(l["line"]) ? naive_lines[l["line"]] : 0);
  // One script for both runs: lines are compared by number, none moved.
  EXPECT_TRUE(after["compare"]["aligned"].empty()) << after["compare"]["aligned"].dump();
}

// The naive capture of the original script compared with a capture of the script as edited
// since (tests/data/h200/nsys-edited: two header lines, a helper above main(), the naive
// branches dropped): lines are matched by the work they ran, so the forward line 33 is now 35,
// the batch copy of line 102 is now 105 (pinned, non_blocking: faster), and the `.item()` line
// (gone from the script) is left out.
TEST(Report, CompareAcrossScriptVersionsMatchesLinesByTheirWork) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  std::string edited = dataProfile("h200/nsys-edited/train_small_tuned_edited.sqlite.xz");
  std::string script = testDataPath("h200/nsys-edited/train_small.py");
  auto r = run("report --profile '" + edited + "' --compare '" + naive + "' '" + script + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  // Warm-up steps left out: the lines of the first step only (start-up copies) are one-off.
  EXPECT_NE(r.out.find("train_small.py changed since the compared run: 9 of 10 profiled lines matched"),
            std::string::npos)
      << r.out;
  auto rowOf = [&](const std::string& code) {
    auto at = r.out.find(code);
    return at == std::string::npos ? std::string()
                                   : r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at));
  };
  EXPECT_NE(rowOf("│  105              x = x.to(device, non_blocking=True)").find("▼ −0.1"), std::string::npos)
      << r.out;

  auto before = nlohmann::json::parse(
      run("report --format json --profile '" + naive + "' " + testDataPath("h200/nsys/train_small.py")).out);
  auto after = nlohmann::json::parse(
      run("report --format json --profile '" + edited + "' --compare '" + naive + "' '" + script + "'").out);
  std::map<int, int64_t> naive_lines, compared;
  for (const auto& l : before["files"][0]["lines"])
    if (l["gpu_ns"].get<int64_t>() > 0) naive_lines[l["line"]] = l["gpu_ns"];
  for (const auto& l : after["files"][0]["lines"]) compared[l["line"]] = l["compare_gpu_ns"];
  for (auto [now, then] : std::vector<std::pair<int, int>>{{35, 33}, {46, 44}, {56, 54}, {105, 102}, {106, 103}}) {
    ASSERT_TRUE(naive_lines.count(then)) << then;
    EXPECT_EQ(compared[now], naive_lines[then]) << "line " << now << " was " << then;
  }
  ASSERT_EQ(after["compare"]["aligned"].size(), 1u);
  // The naive `.item()` line (109) has no place in the new script.
  for (const auto& l : after["compare"]["files"][0]["lines"]) EXPECT_NE(l["gpu_ns"], naive_lines[109]) << l.dump();
}

TEST(Report, MapRulesAndMissingBacktraces) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto mapped =
      run("report --profile '" + profile + "' --format json --map /work/steering/lab/gpu=tests/data/h200/nsys");
  auto j = nlohmann::json::parse(mapped.out);
  EXPECT_EQ(j["files"][0]["local_path"], "tests/data/h200/nsys/train_small.py");
  SIGHTLINE_REQUIRE_PROFILE(plain, "h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz");
  auto r = run("report --profile '" + plain + "' examples/train_small.py");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--python-backtrace=cuda"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--include-blobs=true"), std::string::npos);
  // Never a flag the capture already used: it had autograd ranges and a capture range.
  EXPECT_EQ(r.out.find("--pytorch=autograd-nvtx"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--capture-range"), std::string::npos) << r.out;
}

TEST(Report, UserNvtxRangesWithoutBacktraces) {
  std::string profile = dataProfile("h100-nvtx/train_small_nvtx_only.sqlite.xz");
  auto r = run("report --profile '" + profile + "' tests/data/h100-nvtx/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Steps     6 (NVTX range \""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Methods   nvtx 96%"), std::string::npos) << r.out;
  auto at = r.out.find("│   55      with torch.cuda.nvtx.range(\"backward\"):");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string margin = r.out.substr(r.out.rfind('\n', at) + 1, at - r.out.rfind('\n', at) - 1);
  EXPECT_NE(margin.find(" 62% "), std::string::npos) << margin;
}

TEST(Report, BadInput) {
  EXPECT_EQ(run("report examples/train_small.py").code, 2);
  auto missing = run("report --profile /nonexistent.sqlite examples/train_small.py");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("no such file"), std::string::npos);
  auto not_a_profile = run("report --profile examples/train_small.py examples/train_small.py");
  EXPECT_EQ(not_a_profile.code, 2);
  EXPECT_NE(run("report --help").out.find("--map FROM=TO"), std::string::npos);
  auto rep = run("report --profile /tmp/x.nsys-rep examples/train_small.py");
  EXPECT_EQ(rep.code, 2);
}

// The binary restarts itself once to ask glibc for huge pages (server/platform/allocator.h), and puts
// the caller's environment back: a child it runs (here a stand-in `nsys`) sees the caller's.
TEST(Report, ChildrenSeeTheCallersEnvironmentAfterTheHugePageRestart) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline-env-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream nsys(dir / "nsys");
    nsys << "#!/bin/sh\nenv > '" << (dir / "env.txt").string() << "'\nexit 1\n";
  }
  std::filesystem::permissions(dir / "nsys", std::filesystem::perms::owner_all);
  std::ofstream(dir / "run.nsys-rep") << "not a report";
  for (const char* tunables : {"", "GLIBC_TUNABLES=glibc.malloc.check=0 "}) {
    std::filesystem::remove(dir / "env.txt");
    // SIGHTLINE_HUGE_PAGES=1: the restart happens whatever this kernel's huge-page mode.
    std::string cmd = "env PATH='" + dir.string() + "':\"$PATH\" XDG_CACHE_HOME='" + dir.string() +
                      "' SIGHTLINE_HUGE_PAGES=1 " + tunables + binaryPath() + " report --format json --profile '" +
                      (dir / "run.nsys-rep").string() + "' > /dev/null 2>&1";
    int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << cmd;
    std::ifstream in(dir / "env.txt");
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(env.find("PATH="), std::string::npos) << "the stand-in nsys did not run: " << cmd;
    EXPECT_EQ(env.find("SIGHTLINE_GLIBC_TUNABLES"), std::string::npos) << env;
    if (*tunables)
      EXPECT_NE(env.find("GLIBC_TUNABLES=glibc.malloc.check=0\n"), std::string::npos) << env;
    else
      EXPECT_EQ(env.find("GLIBC_TUNABLES"), std::string::npos) << env;
  }
  std::filesystem::remove_all(dir);
}

// Profile paths reach SQLite as escaped URIs: '#' and '?' in a name open that file, and
// "%41" is not read as "A" (it once opened runA.sqlite instead).
TEST(Report, ProfilePathsWithUriCharacters) {
  std::string example = repoProfile("examples/train_small_naive.sqlite.xz");
  auto dir = std::filesystem::temp_directory_path() / ("sightline-uri-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* name : {"run#1.sqlite", "run?v=2.sqlite"}) {
    std::filesystem::copy_file(example, dir / name, std::filesystem::copy_options::overwrite_existing);
    auto r = run("report --format json --profile '" + (dir / name).string() + "'");
    EXPECT_EQ(r.code, 0) << name << ": " << r.out;
  }
  std::filesystem::copy_file(example, dir / "runA.sqlite", std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "run%41.sqlite") << "not a database";
  auto wrong = run("report --format json --profile '" + (dir / "run%41.sqlite").string() + "'");
  EXPECT_EQ(wrong.code, 2) << wrong.out;
  // A directory and a FIFO named like profiles: clear errors, no hang.
  std::filesystem::create_directories(dir / "dir.sqlite");
  ASSERT_EQ(::mkfifo((dir / "fifo.sqlite").c_str(), 0600), 0);
  for (const char* name : {"dir.sqlite", "fifo.sqlite"}) {
    auto r = run("report --format json --profile '" + (dir / name).string() + "'");
    EXPECT_EQ(r.code, 2) << name << ": " << r.out;
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  }
  // Traces that are JSON but hold no GPU work (empty, or cut before any): exit 2 saying so,
  // not capture advice about backtraces.
  std::ofstream(dir / "empty.pt.trace.json") << R"({"traceEvents": []})";
  std::ofstream(dir / "cut.pt.trace.json")
      << R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid")";
  for (const char* name : {"empty.pt.trace.json", "cut.pt.trace.json"}) {
    auto r = run("report --format json --profile '" + (dir / name).string() + "'");
    EXPECT_EQ(r.code, 2) << name << ": " << r.out;
    EXPECT_EQ(r.out.find("--python-backtrace"), std::string::npos) << name << ": " << r.out;
    auto check = run("check --profile '" + (dir / name).string() + "' " + sourcePath("examples/train_small.py"));
    EXPECT_EQ(check.code, 2) << name << ": " << check.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// A memory snapshot dumped at an out-of-memory error (tests/data/memory): the header names the
// peak and the failing line with its call chain, each line its bytes at the peak; the JSON has
// the memory object of docs/report-json.md. Figures as the independent replay.py gives them.
TEST(Report, AMemorySnapshotPutsThePeakAndTheOutOfMemoryLineOnTheScript) {
  std::string snapshot = dataProfile("memory/gpt_oom_eval.pickle.xz");
  auto r = runSightline("report --profile '" + snapshot + "' tests/data/memory/gpt_mem.py", sourcePath(""));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(PyTorch memory snapshot)\nMemory    peak 63.54 GiB allocated, 64.96 GiB reserved (1.42 GiB "
                       "cached, not allocated), in step 6 of the 6 recorded (forward pass)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Out of memory  gpt_mem.py:73 (evaluate) asked 24.56 GiB with 14.16 GiB free\n"
                       "          called from gpt_mem.py:159 (<module>) → gpt_mem.py:132 (main) → gpt_mem.py:73 "
                       "(evaluate)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("   25.71 GiB │   60          logits = self.head(self.ln_f(x))"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("GPU time"), std::string::npos) << "a snapshot has no time to tell";
  // Without a script, the header alone (it exited 2 asking for a file).
  auto header = runSightline("report --profile '" + snapshot + "'", sourcePath(""));
  EXPECT_EQ(header.code, 0) << header.out;
  EXPECT_NE(header.out.find("Out of memory  gpt_mem.py:73 (evaluate) asked 24.56 GiB"), std::string::npos)
      << header.out;

  auto j =
      runSightline("report --format json --profile '" + snapshot + "' tests/data/memory/gpt_mem.py", sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  auto doc = nlohmann::json::parse(j.out);
  const auto& m = doc["memory"];
  EXPECT_EQ(m["peak_allocated_bytes"], 68221917252);
  EXPECT_EQ(m["peak_reserved_bytes"], 69744984064);
  EXPECT_EQ(m["allocated_before_trace_bytes"], 0);
  EXPECT_EQ(m["oom"]["line"], 73);
  EXPECT_EQ(m["oom"]["requested_bytes"], 26373783552);
  EXPECT_EQ(m["oom"]["free_bytes"], 15202451456);
  EXPECT_EQ(m["oom"]["stack"].size(), 3u);
  EXPECT_EQ(m["top_lines"][0]["line"], 60);
  EXPECT_EQ(m["steps"], 6);
  EXPECT_EQ(m["peak_step"], 6);
  EXPECT_EQ(m["steady_steps"], 4);
  EXPECT_FALSE(doc.contains("advice")) << "the memory is on the lines";
  for (const auto& l : doc["files"][0]["lines"]) {
    if (l["line"] != 60) continue;
    EXPECT_EQ(l["memory_at_peak_by_phase"]["forward"], l["memory_at_peak_bytes"]) << l.dump();
    EXPECT_EQ(l["memory_per_step_bytes"], 836796416) << l.dump();
    EXPECT_EQ(l["memory_per_step_allocations"], 4) << l.dump();
  }
  int64_t on_lines = 0;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"]) on_lines += l["memory_at_peak_bytes"].get<int64_t>();
  EXPECT_EQ(on_lines, 68221917252);
}

// A snapshot recorded from the run's third step: what the ring buffer lost is said, in both forms.
TEST(Report, AMemorySnapshotRecordedLateSaysWhatCameBeforeIt) {
  std::string snapshot = dataProfile("memory/gpt.pickle.xz");
  auto j =
      runSightline("report --format json --profile '" + snapshot + "' tests/data/memory/gpt_mem.py", sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["memory"]["allocated_before_trace_bytes"], 2344599620);
  EXPECT_EQ(doc["memory"]["oom"], nullptr);
  auto r = runSightline("report --profile '" + snapshot + "' tests/data/memory/gpt_mem.py", sourcePath(""));
  EXPECT_NE(r.out.find("2.18 GiB was allocated before the oldest event the recorded history kept"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// One-off work has its line: the warm-up step's forward ran beneath `x = block(x)` (line 59 of
// tests/data/memory/gpt_mem.py), which launches nothing itself: 28.6 ms of one-off GPU time; the
// JSON gives it (`oneoff_inclusive_ns`), the text marks the line, the page's lines carry it.
using nlohmann::json;

TEST(Report, OneOffWorkIsOnTheLineThatRanIt) {
  std::string profile = dataProfile("memory/gpt_nsys.sqlite.xz");
  std::string args = "--profile '" + profile + "' tests/data/memory/gpt_mem.py";
  auto j = runSightline("report --format json " + args, sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  json doc = json::parse(j.out);
  const json* call = nullptr;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["line"] == 59) call = &l;
  ASSERT_TRUE(call) << "line 59 has no entry";
  EXPECT_GT((*call)["oneoff_inclusive_ns"].get<int64_t>(), 20'000'000) << call->dump();
  EXPECT_EQ((*call)["oneoff_ns"].get<int64_t>(), 0) << call->dump();
  EXPECT_LE((*call)["oneoff_inclusive_ns"].get<int64_t>(), doc["step_summary"]["oneoff_gpu_ns"].get<int64_t>());
  auto text = runSightline("report " + args, sourcePath(""));
  EXPECT_NE(text.out.find("x = block(x)   ◂ one-off 28.6 ms beneath\n"), std::string::npos) << text.out;
  std::string page =
      (std::filesystem::temp_directory_path() / ("sightline-oneoff-" + std::to_string(::getpid()) + ".html")).string();
  ASSERT_EQ(runSightline("report --format html -o '" + page + "' " + args, sourcePath("")).code, 0);
  std::string html = readFile(page);
  std::filesystem::remove(page);
  const std::string open = "<script type=\"application/json\" id=\"sightline-data\">";
  size_t at = html.find(open) + open.size();
  json data = json::parse(html.substr(at, html.find("</script>", at) - at));
  bool carried = false;
  for (const auto& l : data["lines"])
    carried = carried || (l["line"] == 59 && l["oneoffNs"] == (*call)["oneoff_inclusive_ns"]);
  EXPECT_TRUE(carried);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

using nlohmann::json;

// A script edited since it was profiled, its code moved as a block (tests/data/overhead/gpt.py
// with lines added or removed above it): the profile's lines follow the code, which the
// function names and lines the profile holds say; the report says so, check says so (as
// information), and no cost lands on a blank or comment line.
TEST(Report, AScriptWhoseCodeMovedKeepsItsCostsOnTheCode) {
  std::string profile = repoProfile("tests/data/overhead/runs/gpt_full.sqlite.xz");
  std::string original = readFile(sourcePath("tests/data/overhead/gpt.py"));
  auto costedText = [&](const std::string& dir_name, const std::string& text, int expect_delta) {
    auto dir = std::filesystem::temp_directory_path() / (dir_name + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string script = (dir / "gpt.py").string();
    std::ofstream(script) << text;
    auto j = runSightline("report --format json --profile '" + profile + "' '" + script + "'", sourcePath(""));
    EXPECT_EQ(j.code, 0) << j.out;
    json doc = json::parse(j.out);
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::map<std::string, int64_t> by_text;  // each costed line's text -> its GPU time
    for (const auto& f : doc["files"]) {
      if (f["local_path"] != script) continue;
      EXPECT_EQ(f.value("realigned_by", 0), expect_delta);
      for (const auto& l : f["lines"]) {
        int line = l["line"];
        EXPECT_TRUE(line >= 1 && line <= static_cast<int>(lines.size())) << line;
        if (line < 1 || line > static_cast<int>(lines.size())) continue;
        std::string t = lines[static_cast<size_t>(line - 1)];
        size_t first = t.find_first_not_of(' ');
        EXPECT_TRUE(first != std::string::npos && t[first] != '#') << "a cost on line " << line << ": " << t;
        if (l["gpu_ns"].get<int64_t>() > 0) by_text[t] += l["gpu_ns"].get<int64_t>();
      }
    }
    auto text_run = runSightline("report --profile '" + profile + "' '" + script + "'", sourcePath(""));
    auto check = runSightline("check --profile '" + profile + "' '" + script + "'", sourcePath(""));
    if (expect_delta != 0) {
      EXPECT_NE(text_run.out.find("changed since it was profiled: its code moved"), std::string::npos) << text_run.out;
      EXPECT_NE(check.out.find("information: gpt.py changed since it was profiled: its code moved"), std::string::npos)
          << check.out;
    }
    std::filesystem::remove_all(dir);
    return by_text;
  };
  auto as_profiled = costedText("sightline-moved-same", original, 0);
  ASSERT_FALSE(as_profiled.empty());
  // Three lines added above the code, and two of the docstring's removed: the same lines of code
  // carry the same time.
  EXPECT_EQ(costedText("sightline-moved-down", "# edited\n# after\n\n" + original, 3), as_profiled);
  size_t second = original.find('\n') + 1;
  std::string shorter =
      original.substr(0, second) + original.substr(original.find('\n', original.find('\n', second) + 1) + 1);
  EXPECT_EQ(costedText("sightline-moved-up", shorter, -2), as_profiled);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// The bytes a line holds at the peak in one profile's JSON report (0: none).
int64_t heldAtPeak(const nlohmann::json& doc, int line) {
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["line"] == line) return l.value("memory_at_peak_bytes", int64_t{0});
  return 0;
}

// --compare of two profiles that tell memory (snapshots; traces with profile_memory=True): the
// peak's change and each line's, equal to the two reports read apart; the kept logits of
// gpt_mem.py --keep-logits on line 60.
TEST(Report, CompareOfMemoryGivesEachLinesChange) {
  struct Case {
    const char *before, *after;
  };
  for (const auto& c : {Case{"memory/gpt.pickle.xz", "memory/gpt_keep.pickle.xz"},
                        Case{"memory/gpt_mem_h200.pt.trace.json.xz", "memory/gpt_mem_keep.pt.trace.json.xz"}}) {
    std::string before = dataProfile(c.before), after = dataProfile(c.after);
    std::string script = " tests/data/memory/gpt_mem.py";
    auto alone = [&](const std::string& p) {
      auto r = runSightline("report --format json --profile '" + p + "'" + script, sourcePath(""));
      EXPECT_EQ(r.code, 0) << r.out;
      return nlohmann::json::parse(r.out);
    };
    auto b = alone(before), a = alone(after);
    auto r = runSightline("report --format json --profile '" + after + "' --compare '" + before + "'" + script,
                          sourcePath(""));
    ASSERT_EQ(r.code, 0) << r.out;
    auto doc = nlohmann::json::parse(r.out);
    ASSERT_TRUE(doc.contains("memory_compare")) << c.after;
    const auto& mc = doc["memory_compare"];
    EXPECT_EQ(mc["peak_change_bytes"].get<int64_t>(),
              a["memory"]["peak_allocated_bytes"].get<int64_t>() - b["memory"]["peak_allocated_bytes"].get<int64_t>());
    EXPECT_GT(mc["peak_change_bytes"].get<int64_t>(), 0) << "kept logits raise the peak";
    int64_t change60 = heldAtPeak(a, 60) - heldAtPeak(b, 60);
    EXPECT_GT(change60, 1'000'000'000) << c.after;
    EXPECT_EQ(mc["lines"][0]["line"], 60) << "the largest change: the logits line";
    EXPECT_EQ(mc["lines"][0]["memory_change_bytes"].get<int64_t>(), change60);
    bool on_line = false;
    for (const auto& f : doc["files"])
      for (const auto& l : f["lines"])
        if (l["line"] == 60) on_line = l["memory_change_bytes"].get<int64_t>() == change60;
    EXPECT_TRUE(on_line) << "memory_change_bytes on the line itself";
    auto text = runSightline("report --profile '" + after + "' --compare '" + before + "'" + script, sourcePath(""));
    EXPECT_NE(text.out.find("Change    against "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("at the peak: gpt_mem.py:60 +"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Δ at peak │"), std::string::npos) << text.out;
  }
}

}  // namespace
}  // namespace sightline::testing
