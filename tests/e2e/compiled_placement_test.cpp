// Compiled kernels on their eager lines (issue "Verdicts you can act on", part 4): attention and
// the loss on their own lines whichever of the run's records the code comes from, fused kernels
// on their main op's line, the call into the model carrying what runs beneath it, and a copy of
// the cache whose modules were generated again under other names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

struct Line {
  double ms = 0, forward = 0, backward = 0, inclusive = 0;
};

// Per line of the script: ms per steady step (and forward, backward, inclusive).
std::map<int, Line> linesOf(const std::string& out) {
  json doc = json::parse(out);
  double steps = doc["step_summary"]["steady"].get<double>();
  std::map<int, Line> lines;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"]) {
      auto ms = [&](const char* key) { return l.value(key, int64_t{0}) / 1e6 / std::max(1.0, steps); };
      lines[l["line"].get<int>()] = {ms("gpu_ns"), ms("forward_ns"), ms("backward_ns"), ms("inclusive_ns")};
    }
  return lines;
}

// tests/data/compile: the GPT trainer compiled with provenance; the Inductor cache and the
// TORCH_TRACE folder of that run each give the code.
std::string compileArgs(const std::string& capture, bool as_json = true) {
  return std::string(as_json ? "--format json " : "") + "--profile '" +
         dataProfile("compile/" + capture + ".sqlite.xz") + "' '" + testDataPath("compile/train_gpt.py") + "'";
}

TEST(CompiledPlacement, TheTraceFolderAndTheCacheAgreeAndAttentionIsOnItsLine) {
  std::string cache = dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache";
  std::string trace = dataTree("compile/trace.tar.xz") + "/trace";
  auto from_cache =
      runSightline("report " + compileArgs("compiled_prov") + " --compiled-code '" + cache + "'", sourcePath(""));
  auto from_trace =
      runSightline("report " + compileArgs("compiled_prov") + " --compiled-code '" + trace + "'", sourcePath(""));
  ASSERT_EQ(from_cache.code, 0) << from_cache.out;
  ASSERT_EQ(from_trace.code, 0) << from_trace.out;
  auto a = linesOf(from_cache.out), b = linesOf(from_trace.out);
  // `y = F.scaled_dot_product_attention(...)` (29), forward and backward; nothing on the views
  // before it (26-28) — the provenance stacks of the extern call name those too.
  for (auto* lines : {&a, &b}) {
    EXPECT_GT((*lines)[29].forward, 0.05);
    EXPECT_GT((*lines)[29].backward, 0.2);
    for (int view : {26, 27, 28}) EXPECT_LT((*lines)[view].ms, 0.01) << view;
    EXPECT_GT((*lines)[75].ms, 0.1);  // the cross-entropy line carries the log-softmax kernels
  }
  for (const auto& [line, l] : a) EXPECT_NEAR(l.ms, b[line].ms, 0.005) << "line " << line;
}

// tests/data/overhead: the same nanoGPT-shaped script captured eagerly and compiled.
std::string overheadArgs(const std::string& capture) {
  return "--format json --profile '" + dataProfile("overhead/runs/" + capture + ".sqlite.xz") + "' '" +
         testDataPath("overhead/gpt.py") + "'";
}

TEST(CompiledPlacement, CompiledLinesMatchTheEagerOnes) {
  std::string cache = dataTree("overhead/runs/compiled_cache.tar.xz") + "/inductor_cache";
  auto compiled =
      runSightline("report " + overheadArgs("compiled_full") + " --compiled-code '" + cache + "'", sourcePath(""));
  auto eager = runSightline("report " + overheadArgs("gpt_full"), sourcePath(""));
  ASSERT_EQ(compiled.code, 0) << compiled.out;
  ASSERT_EQ(eager.code, 0) << eager.out;
  auto c = linesOf(compiled.out), e = linesOf(eager.out);
  // Attention (32) runs the same cuDNN kernels either way: within 10%.
  EXPECT_NEAR(c[32].ms, e[32].ms, 0.1 * e[32].ms);
  EXPECT_GT(c[32].forward, 0.1);
  EXPECT_GT(c[32].backward, 0.3);
  // The LayerNorm backward fused with the residual branch's dropout backward stays on the
  // LayerNorms' lines (58, 59), not on the projections' (34, 46): those keep about their eager
  // time (their matmuls), not twice it.
  for (int proj : {34, 46}) EXPECT_LT(c[proj].ms, 1.2 * e[proj].ms) << proj;
  // The call into the compiled model carries everything beneath it, backward included, as the
  // eager call does: the loop of layers (84) and the lines after it.
  // `--compare` against the eager run: attention ran the same kernels, so no change worth
  // naming on its line (the whole file: compiled faster).
  auto compare = runSightline("report " + overheadArgs("compiled_full") + " --compiled-code '" + cache +
                                  "' --compare '" + dataProfile("overhead/runs/gpt_full.sqlite.xz") + "'",
                              sourcePath(""));
  ASSERT_EQ(compare.code, 0) << compare.out;
  json doc = json::parse(compare.out);
  for (const auto& l : doc["files"][0]["lines"]) {
    if (l["line"] != 32) continue;
    double now = l["gpu_ns"].get<double>(), before = l["compare_gpu_ns"].get<double>();
    EXPECT_NEAR(now, before, 0.1 * before);
  }
  double beneath = c[82].ms + c[84].inclusive + c[85].ms + c[86].ms + c[87].ms;
  EXPECT_NEAR(c[142].inclusive, beneath, 0.02 * beneath);
  EXPECT_GT(c[142].inclusive, 0.8 * e[142].inclusive);
}

TEST(CompiledPlacement, ACacheGeneratedAgainIsMatchedByItsLaunches) {
  // The cache's modules under other names (as if generated again, or a copy rebuilt elsewhere:
  // the name hashes the code, which names paths): each entry's module name rewritten.
  std::string cache = dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache";
  auto dir = std::filesystem::temp_directory_path() / ("sightline_renamed_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::copy(cache, dir, std::filesystem::copy_options::recursive);
  std::regex name("c[a-z0-9]{51}");
  size_t renamed = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir / "fxgraph")) {
    if (!e.is_regular_file()) continue;
    std::string bytes = readFile(e.path().string());
    std::set<std::string> names;
    for (std::sregex_iterator it(bytes.begin(), bytes.end(), name), end; it != end; ++it) names.insert(it->str());
    for (const auto& n : names) {
      std::string other = "c" + std::string(n.rbegin(), n.rend() - 1);  // same length: the pickle stays whole
      for (size_t at = bytes.find(n); at != std::string::npos; at = bytes.find(n, at + 1))
        bytes.replace(at, n.size(), other);
      ++renamed;
    }
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
  }
  ASSERT_GT(renamed, 0u);
  auto original =
      runSightline("report " + compileArgs("compiled_prov") + " --compiled-code '" + cache + "'", sourcePath(""));
  auto copy = runSightline("report " + compileArgs("compiled_prov") + " --compiled-code '" + dir.string() + "'",
                           sourcePath(""));
  auto text = runSightline("report " + compileArgs("compiled_prov", false) + " --compiled-code '" + dir.string() + "'",
                           sourcePath(""));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(copy.code, 0) << copy.out;
  json doc = json::parse(copy.out);
  EXPECT_EQ(doc["generated_code"]["substituted_modules"].size(), 2u) << doc["generated_code"];
  EXPECT_EQ(doc["generated_code"]["missing_modules"].size(), 0u);
  EXPECT_EQ(doc["generated_code"]["mapped"], doc["generated_code"]["stacks"]);
  auto a = linesOf(original.out), b = linesOf(copy.out);
  for (const auto& [line, l] : a) EXPECT_NEAR(l.ms, b[line].ms, 0.005) << "line " << line;
  EXPECT_NE(text.out.find("2 modules found there under another name"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace sightline::testing
