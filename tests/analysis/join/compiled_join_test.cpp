// torch.compile's kernels on the model's own lines (tests/data/compile): the captures of one
// GPT trainer compiled (with and without provenance tracking, with CUDA graphs) and run eagerly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "analysis/ingest/inductor_reader.h"
#include "analysis/ingest/model_cache.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

using sightline::testing::dataProfile;
using sightline::testing::dataTree;
using sightline::testing::readFile;
using sightline::testing::testDataPath;

const std::string kScript = "compile/train_gpt.py";

// A capture of tests/data/compile: an nsys export ("compiled_run") or the PyTorch profiler trace
// ("compiled_kineto").
bool isTrace(const std::string& capture) { return capture.ends_with("_kineto"); }

std::unique_ptr<ProfileJoin> joined(const std::string& capture, bool with_code) {
  auto loaded = ingest::loadProfile(isTrace(capture) ? testDataPath("compile/" + capture + ".pt.trace.json.gz")
                                                     : dataProfile("compile/" + capture + ".sqlite.xz"));
  EXPECT_TRUE(loaded.profile) << loaded.error;
  if (!loaded.profile) return nullptr;
  JoinEnvironment env;
  env.mapper.candidates = {testDataPath(kScript)};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  JoinOptions options;
  if (with_code) {
    auto code = ingest::readCompiledCode({dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache"});
    options.compiled = std::make_shared<model::CompiledCode>(std::move(code));
  }
  return std::make_unique<ProfileJoin>(std::move(*loaded.profile), std::move(env), options);
}

// 1-based lines of the script that start a function (`def ...`).
std::set<int32_t> defLines() {
  std::set<int32_t> out;
  std::istringstream in(readFile(testDataPath(kScript)));
  int32_t n = 0;
  for (std::string l; std::getline(in, l);) {
    ++n;
    auto at = l.find_first_not_of(' ');
    if (at != std::string::npos && l.compare(at, 4, "def ") == 0) out.insert(n);
  }
  return out;
}

struct Shares {
  int64_t forward = 0, backward = 0, forward_model = 0, backward_model = 0;
};

// torch.compile's Triton kernels in the steady steps: how much landed on lines of the script
// that are not `def` lines, forward and backward.
Shares tritonShares(const ProfileJoin& j) {
  const auto& p = j.profile();
  const auto& attr = j.attribution();
  auto defs = defLines();
  Shares s;
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& act = p.activities[a];
    if (!p.strings[act.name].starts_with("triton_")) continue;
    const auto& ref = attr.activity_lines[a];
    bool model = ref.file != 0 && p.strings[ref.file].ends_with("train_gpt.py") && !defs.count(ref.line);
    (ref.backward ? s.backward : s.forward) += act.duration();
    (ref.backward ? s.backward_model : s.forward_model) += model ? act.duration() : 0;
  }
  return s;
}

// The script's lines by their own GPU time (steady steps), costliest first.
std::vector<int32_t> topLines(const ProfileJoin& j, size_t n) {
  std::vector<std::pair<int64_t, int32_t>> lines;
  for (const auto& [file, by_line] : j.attribution().files) {
    if (!j.profile().strings[file].ends_with("train_gpt.py")) continue;
    for (const auto& [line, cost] : by_line) lines.push_back({cost.gpu_ns, line});
  }
  std::sort(lines.rbegin(), lines.rend());
  std::vector<int32_t> out;
  for (size_t i = 0; i < lines.size() && i < n; ++i) out.push_back(lines[i].second);
  return out;
}

class CompiledCaptures : public ::testing::TestWithParam<const char*> {};

TEST_P(CompiledCaptures, CompiledKernelsLandOnModelLinesForwardAndBackward) {
  auto j = joined(GetParam(), true);
  ASSERT_TRUE(j);
  Shares s = tritonShares(*j);
  ASSERT_GT(s.forward, 0);
  ASSERT_GT(s.backward, 0);
  double fwd = static_cast<double>(s.forward_model) / static_cast<double>(s.forward);
  double bwd = static_cast<double>(s.backward_model) / static_cast<double>(s.backward);
  std::printf("%s: compiled kernels on model lines (not def lines): forward %.1f%%, backward %.1f%%\n", GetParam(),
              100 * fwd, 100 * bwd);
  EXPECT_GE(fwd, 0.9);
  EXPECT_GE(bwd, 0.9);
  if (isTrace(GetParam())) {
    // Traced calls of the wrappers' call(), their launches placed by kernel name and order.
    EXPECT_GT(j->compiled().mapped_calls, 0u);
    EXPECT_EQ(j->compiled().mapped_calls, j->compiled().generated_calls);
  } else {
    EXPECT_GT(j->compiled().mapped_marks, 0u);
    EXPECT_EQ(j->compiled().mapped_marks, j->compiled().generated_marks);
  }
  EXPECT_TRUE(j->compiled().missing_modules.empty());
}

TEST_P(CompiledCaptures, TopLinesAreTheEagerRunsTopLines) {
  auto compiled = joined(GetParam(), true);
  auto eager = joined("eager", false);
  ASSERT_TRUE(compiled && eager);
  auto c = topLines(*compiled, 10), e = topLines(*eager, 10);
  std::string cs, es;
  for (auto l : c) cs += " " + std::to_string(l);
  for (auto l : e) es += " " + std::to_string(l);
  std::printf("%s top lines:%s\neager top lines:%s\n", GetParam(), cs.c_str(), es.c_str());
  size_t shared = 0;
  for (auto l : c) shared += std::count(e.begin(), e.end(), l);
  EXPECT_GE(shared, 8u) << "compiled:" << cs << " eager:" << es;
  // Nearly the same order: the costliest compiled line is among the eager run's top three.
  ASSERT_FALSE(c.empty());
  EXPECT_NE(std::find(e.begin(), e.begin() + std::min<size_t>(3, e.size()), c[0]), e.end()) << cs << " /" << es;
}

INSTANTIATE_TEST_SUITE_P(Captures, CompiledCaptures,
                         ::testing::Values("compiled_prov", "compiled_run", "compiled_graphs", "compiled_kineto"));

// A model from an installed package (torchvision's ResNet-50, compiled under DDP, in the public
// tutorial's script; tests/data/compile/resnet): its kernels stay on the line that calls it, as in
// eager mode, however each launch is placed, and nothing lands on torchvision's lines.
TEST(CompiledJoin, ALibraryModelStaysOnTheLineThatCallsIt) {
  const std::string script = testDataPath("compile/resnet/train_ddp_compiled.py");
  auto loaded = ingest::loadProfile(dataProfile("compile/resnet/resnet_compiled.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  JoinEnvironment env;
  env.mapper.candidates = {script};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  JoinOptions options;
  options.compiled =
      std::make_shared<model::CompiledCode>(ingest::readCompiledCode({dataTree("compile/resnet/cache.tar.xz")}));
  ASSERT_EQ(options.compiled->modules.size(), 10u);  // DDP's optimizer split it into 5 graphs
  ProfileJoin j(std::move(*loaded.profile), std::move(env), options);
  // Every stack through generated code maps but those of the layout copies Inductor puts first
  // in a graph (`Unsorted Source Nodes: []`: no user node), which stay on the compiled call.
  EXPECT_GT(j.compiled().mapped_marks, 0u);
  EXPECT_GE(j.compiled().mapped_marks, j.compiled().generated_marks * 98 / 100);
  EXPECT_TRUE(j.compiled().missing_modules.empty());
  const auto& p = j.profile();
  const auto& attr = j.attribution();
  int64_t triton = 0, on_call = 0, library = 0, placed_on_sites = 0;
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& ref = attr.activity_lines[a];
    const std::string& file = p.strings[ref.file];
    int64_t ns = p.activities[a].duration();
    if (file.find("site-packages/") != std::string::npos) library += ns;
    bool call_line = file.ends_with("train_ddp_compiled.py") && ref.line == 42;  // output = self.model(source)
    if (ref.method == attribution::Method::Inferred && call_line) placed_on_sites += ns;
    if (!p.strings[p.activities[a].name].starts_with("triton_")) continue;
    triton += ns;
    on_call += call_line ? ns : 0;
  }
  std::printf("resnet: Triton %.1f ms, on the model's call line %.1f ms; placed by site %.1f ms; library %.1f ms\n",
              triton / 1e6, on_call / 1e6, placed_on_sites / 1e6, library / 1e6);
  EXPECT_GT(triton, 0);
  EXPECT_EQ(on_call, triton);
  EXPECT_GT(placed_on_sites, 0);  // cuDNN and cuBLAS between the wrappers' backtraced launches
  EXPECT_EQ(library, 0);
  // The capture range opens before set-up: its first "step" (16 s of Dynamo and cache loads)
  // is no training step, the other five are; `_run_batch` takes batches, it does not load them.
  ASSERT_EQ(attr.process_steps.size(), 1u);
  const auto& steps = attr.process_steps.begin()->second.list;
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[0].kind, attribution::StepKind::Warmup);
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_EQ(steps[i].kind, attribution::StepKind::Steady) << i;
  EXPECT_FALSE(attr.step_summary.all_steps);
  for (const auto& w : attr.step_summary.wait_lines[static_cast<size_t>(attribution::Wait::Input)])
    EXPECT_NE(w.line.line, 42) << "the model's call line is no input pipeline";
}

// Mapping compiled frames rewrites marks and adds frames: only after before_tables_change,
// where the server waits for its reopen cache write (which reads the tables as loaded).
TEST(CompiledJoin, TablesChangeOnlyAfterBeforeTablesChange) {
  auto loaded = ingest::loadProfile(dataProfile("compile/compiled_run.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  model::Profile p = std::move(*loaded.profile);
  auto encode = [](const ingest::ModelCacheImage& image) {
    std::string bytes;
    EXPECT_TRUE(image.write([&](std::string_view b) {
      bytes += b;
      return true;
    }));
    return bytes;
  };
  std::string as_loaded = encode(ingest::ModelCacheImage(p, "key"));
  ingest::ModelCacheImage image(p, "key");
  std::string written;
  JoinEnvironment env;
  env.mapper.candidates = {testDataPath(kScript)};
  env.mapper.exists = [](const std::string& path) { return std::filesystem::exists(path); };
  JoinOptions options;
  auto code = ingest::readCompiledCode({dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache"});
  options.compiled = std::make_shared<model::CompiledCode>(std::move(code));
  options.before_tables_change = [&] { written = encode(image); };
  ProfileJoin j(std::move(p), std::move(env), options);
  EXPECT_GT(j.compiled().mapped_marks, 0u) << "the join changed the marks";
  EXPECT_EQ(written, as_loaded);
  EXPECT_NE(encode(ingest::ModelCacheImage(j.profile(), "key")), as_loaded);
}

TEST(CompiledJoin, WithoutTheCodeTheCompiledFunctionCarriesTheWork) {
  auto j = joined("compiled_run", false);
  ASSERT_TRUE(j);
  EXPECT_GT(j->compiled().generated_marks, 0u);
  EXPECT_EQ(j->compiled().mapped_marks, 0u);
  ASSERT_EQ(j->compiled().generated_dirs.size(), 1u);
  EXPECT_TRUE(j->compiled().generated_dirs[0].ends_with("tests/data/compile/inductor_cache"));
  ASSERT_TRUE(j->story());
  EXPECT_EQ(j->story()->generated.mapped, 0u);
  // The Triton kernels stay on the compiled function: its `def` line (68), beneath the call.
  Shares s = tritonShares(*j);
  EXPECT_EQ(s.forward_model + s.backward_model, 0);
  const auto& lines = j->attribution().step_summary.compiled_lines;
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].line.line, 68);
}

TEST(CompiledJoin, FusedLinesAndWholeStacksWithProvenance) {
  auto j = joined("compiled_prov", true);
  ASSERT_TRUE(j);
  EXPECT_TRUE(j->compiled().provenance);
  // Line 54 (the first LayerNorm) carries the kernel that also sums the embeddings (71) and
  // casts the qkv projection's input (25).
  const auto& files = j->attribution().files;
  bool found = false;
  for (const auto& [file, lines] : files) {
    auto it = lines.find(54);
    if (it == lines.end()) continue;
    std::set<int32_t> fused;
    for (const auto& [f, l] : it->second.fused_with) fused.insert(l);
    EXPECT_TRUE(fused.count(25) && fused.count(71));
    found = true;
  }
  EXPECT_TRUE(found);
  // Whole stacks: `x = block(x)` (73) and the loop's `loss = model(x, y)` (139) carry the
  // blocks' work inclusively.
  bool block_line = false;
  for (const auto& ctx : j->attribution().contexts)
    for (const auto& fl : ctx) block_line = block_line || fl.line == 73;
  EXPECT_TRUE(block_line);
}

// A whole run that compiles inside the profile: a graph break and recompiles every few steps
// (compile/breaks). The GPU's idle time while Dynamo and Inductor compile is the compiler's,
// charged to the line that called the compiled function.
TEST(CompiledJoin, RecompilesInsideTheStepsAreTheirOwnCause) {
  auto loaded = ingest::loadProfile(dataProfile("compile/breaks/breaks.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_GT(loaded.profile->info.utc_start_ns, 0);
  JoinEnvironment env;
  const std::string script = testDataPath("compile/breaks/train_breaks.py");
  env.mapper.candidates = {script};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  JoinOptions options;
  options.compiled = std::make_shared<model::CompiledCode>(ingest::readCompiledCode(
      {dataTree("compile/breaks/cache.tar.xz") + "/cache", dataTree("compile/breaks/trace.tar.xz") + "/trace"}));
  ProfileJoin j(std::move(*loaded.profile), std::move(env), options);
  ASSERT_EQ(j.compiles().size(), 1u);
  const auto& sum = j.attribution().step_summary;
  int64_t compile = sum.wait_ns[static_cast<size_t>(attribution::Wait::Compile)];
  ASSERT_GT(sum.steady, 0);
  std::printf("breaks: compiling %.0f ms/step in steady steps; %.0f ms outside them\n", compile / 1e6 / sum.steady,
              sum.oneoff_compile_ns / 1e6);
  EXPECT_GT(compile, 0);
  EXPECT_GT(sum.oneoff_compile_ns, 5'000'000'000);  // the first compiles, in the warm-up and outlier steps
  const auto& lines = sum.wait_lines[static_cast<size_t>(attribution::Wait::Compile)];
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].line.line, 48);  // loss = F.cross_entropy(model(x), y)
  ASSERT_TRUE(j.story());
  EXPECT_EQ(j.story()->compiles.size(), 1u);
  int compiling_steps = 0;
  for (const auto& o : j.story()->oneoff_steps) compiling_steps += o.compile_ns > 0;
  EXPECT_GE(compiling_steps, 3);
  // Per file: the compiled function and its break, for diagnostics and hovers.
  auto costs = j.measuredCosts(script);
  ASSERT_EQ(costs.compiled_functions.size(), 1u);
  EXPECT_EQ(costs.compiled_functions[0].breaks.size(), 1u);
}

}  // namespace
}  // namespace sightline::join
