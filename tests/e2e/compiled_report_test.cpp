// `sightline report` on torch.compile captures (tests/data/compile): the compiled kernels on the
// model's lines when the generated code is named or found, and what to keep when it is not.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

std::string headerLine(const std::string& text, const std::string& prefix) {
  auto at = text.find("\n" + prefix);
  return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

std::string args(const std::string& capture) {
  return "--profile '" + dataProfile("compile/" + capture + ".sqlite.xz") + "' '" +
         testDataPath("compile/train_gpt.py") + "'";
}

TEST(CompiledReport, NamedCacheFolderPutsKernelsOnModelLines) {
  std::string cache = dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache";
  auto run = runSightline("report " + args("compiled_run") + " --compiled-code '" + cache + "'", sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  EXPECT_NE(compiled.find("most on train_gpt.py:41"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("model lines from the generated code in " + cache), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("with whole stacks from provenance tracking"), std::string::npos) << compiled;
  // The reduce-overhead run loaded the entries compiled without provenance: innermost lines.
  auto plain = runSightline("report " + args("compiled_graphs") + " --compiled-code '" + cache + "'", sourcePath(""));
  EXPECT_NE(headerLine(plain.out, "Compiled  ").find("run with INDUCTOR_PROVENANCE=1"), std::string::npos) << plain.out;
  EXPECT_NE(headerLine(run.out, "Steps     ").find("loop line of main()"), std::string::npos);
  auto j = runSightline("report --format json " + args("compiled_prov") + " --compiled-code '" + cache + "'",
                        sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  json doc = json::parse(j.out);
  const auto& g = doc["generated_code"];
  EXPECT_EQ(g["mapped"], g["stacks"]);
  EXPECT_GT(g["backward"].get<int>(), 0);
  EXPECT_TRUE(g["provenance"].get<bool>());
  EXPECT_EQ(g["read_from"][0], cache);
}

TEST(CompiledReport, WithoutTheCodeSaysWhatToKeep) {
  // Run from a folder without a cache; the profile's own cache folder is not on this machine
  // unless the tests run in the device's checkout (then it is found, and that is right too).
  auto dir = std::filesystem::temp_directory_path() / ("sightline_nocache_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto run = runSightline("report " + args("compiled_run"), dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  if (std::filesystem::exists("/work/main/tests/data/compile/inductor_cache")) GTEST_SKIP() << "the cache is here";
  EXPECT_NE(compiled.find("on train_gpt.py:68: the compiled function's lines carry them"), std::string::npos)
      << compiled;
  EXPECT_NE(compiled.find("the run kept it in /work/main/tests/data/compile/inductor_cache; name that folder or a "
                          "copy with --compiled-code DIR"),
            std::string::npos)
      << compiled;
  // The run kept its cache inside its project: no advice to set TORCHINDUCTOR_CACHE_DIR.
  EXPECT_EQ(compiled.find("TORCHINDUCTOR_CACHE_DIR"), std::string::npos) << compiled;
}

TEST(CompiledReport, FindsACacheInsideTheWorkingFolder) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline_ws_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "runs");
  std::filesystem::copy(dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache", dir / "runs" / "cache",
                        std::filesystem::copy_options::recursive);
  auto run = runSightline("report " + args("compiled_graphs"), dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  EXPECT_NE(compiled.find("model lines from the generated code in"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("runs/cache"), std::string::npos) << compiled;
}

TEST(CompiledReport, APyTorchProfilerTraceSaysItsCallsAreNotMapped) {
  auto run = runSightline("report --profile '" + testDataPath("compile/compiled_kineto.pt.trace.json.gz") + "' '" +
                              testDataPath("compile/train_gpt.py") + "'",
                          sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  EXPECT_NE(compiled.find("on train_gpt.py:68: the compiled function's lines carry them (a PyTorch profiler trace's"),
            std::string::npos)
      << compiled;
}

TEST(CompiledReport, AMissingFolderIsNotAnError) {
  auto run = runSightline("report " + args("compiled_run") + " --compiled-code /nonexistent/cache", sourcePath(""));
  EXPECT_EQ(run.code, 0) << run.out;
}

}  // namespace
}  // namespace sightline::testing
