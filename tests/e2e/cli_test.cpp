// The binary's command line: --version, --help, check on the bundled example, bad verbs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using Output = CommandOutput;
Output run(const std::string& args) { return runSightline(args); }

TEST(Cli, VersionAndHelp) {
  auto v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("sightline ", 0), 0u);
  EXPECT_EQ(run("--help").code, 0);
  EXPECT_NE(run("serve --help").out.find("--listen HOST:PORT"), std::string::npos);
  EXPECT_NE(run("check --help").out.find("--format"), std::string::npos);
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("serve --log-level loud").code, 2);
  EXPECT_EQ(run("serve --listen nonsense").code, 2);
  // Ports are validated (99999 once listened on 34463, -1 on 65535), hosts too, and a
  // non-loopback address needs --allow-remote: the server has no authentication.
  for (const char* bad : {"127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:", "localhost:80", "0.0.0.0:0"}) {
    auto r = run(std::string("serve --listen ") + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
  }
  EXPECT_NE(run("serve --listen 0.0.0.0:0").out.find("--allow-remote"), std::string::npos);
  EXPECT_EQ(run("serve --diagnostics-delay-ms soon").code, 2);
}

TEST(Cli, CheckTheBundledExample) {
  auto r = run("check " + sourcePath("examples/train_small.py"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("examples/train_small.py:109:28: warning:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[dataloader-pin-memory]"), std::string::npos);
}

TEST(Cli, CheckWithAProfileCitesMeasuredCosts) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto r = run("check --profile '" + profile + "' " + sourcePath("examples/train_small.py"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(":109:28: warning: `.item()`"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measured: blocks the host 0.93 ms/step here (cudaStreamSynchronize ×6, after a 4-byte DtoH"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(":102:21: warning: 3.0 MiB per step copied between the GPU and pageable host memory"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(run("check --profile /nonexistent.sqlite " + sourcePath("examples/train_small.py")).code, 2);
}

// A PyTorch profiler trace of the same naive run: the GPU idles while the host builds batches in
// the Dataset's __getitem__ (num_workers=0); gpu-idle says so on that line.
TEST(Cli, CheckWithATraceFindsTheIdleGpuLine) {
  auto r = run("check --profile " + testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz") + " " +
               testDataPath("h200/kineto/train_small.py"));
  EXPECT_EQ(r.code, 1);
  auto at = r.out.find("train_small.py:21:");
  ASSERT_NE(at, std::string::npos) << r.out;
  std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find("the GPU sits idle"), std::string::npos) << line;
  EXPECT_NE(line.find("num_workers > 0"), std::string::npos) << line;
  EXPECT_NE(line.find("[gpu-idle]"), std::string::npos) << line;
}

TEST(Cli, CheckThresholdsMoveTheIdleGpuFinding) {
  std::string args = " --profile " + testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz") + " " +
                     testDataPath("h200/kineto/train_small.py");
  auto idle = [](const std::string& out) {
    auto at = out.find("train_small.py:21:");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  // 2.75 ms/step of idle GPU on line 21: a 5 ms/step minimum hides it.
  auto high = run("check --threshold gpuIdleMsPerStep=5" + args);
  EXPECT_EQ(idle(high.out).find("[gpu-idle]"), std::string::npos) << high.out;
  // Shorter gaps counted: the message names the threshold the user set.
  auto fine = run("check --threshold gpuIdleGapMs=0.25" + args);
  EXPECT_NE(idle(fine.out).find("gaps of 0.25 ms or more"), std::string::npos) << fine.out;
  auto bad = run("check --threshold gpuIdle=1" + args);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("unknown threshold"), std::string::npos) << bad.out;
  EXPECT_EQ(run("check --threshold gpuIdleGapMs=x" + args).code, 2);
}

TEST(Cli, CheckAFileWithSyntaxErrors) {
  std::string path = testDataPath("broken.py");
  auto r = run("check " + path);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("has syntax errors"), std::string::npos);
  EXPECT_NE(r.out.find("[sync-in-loop]"), std::string::npos);
}

// Python nested far deeper than CPython accepts: a partial check, never a crash.
TEST(Cli, CheckDeeplyNestedPython) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline-deep-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string chain = "z = a";
  for (int i = 0; i < 20'000; ++i) chain += ".b()";
  std::ofstream(dir / "deep.py") << "import torch\n"
                                 << "y = " << std::string(20'000, '(') << "1" << std::string(20'000, ')') << "\n"
                                 << chain << "\nfor x in loader:\n    v = loss.item()\n";
  auto r = run("check '" + (dir / "deep.py").string() + "'");
  EXPECT_EQ(r.code, 1) << r.out;  // the .item() in the loop is still found
  EXPECT_NE(r.out.find("[sync-in-loop]"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(Cli, RulePagesExistForEveryCode) {
  auto r = run("check --format sarif " + sourcePath("examples/train_small.py"));
  for (const char* code : {"dataloader-pin-memory", "dataloader-num-workers", "missing-non-blocking", "sync-in-loop",
                           "cuda-synchronize-in-loop", "zero-grad-set-to-none", "cpu-tensor-then-copy"}) {
    EXPECT_NO_THROW(readFile(sourcePath(std::string("docs/rules/") + code + ".md"))) << code;
    EXPECT_NE(r.out.find(std::string("docs/rules/") + code + ".md"), std::string::npos) << code;
  }
}

}  // namespace
}  // namespace sightline::testing
