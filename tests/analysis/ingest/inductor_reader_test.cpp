// Reading torch.compile's generated code: the real Inductor cache and TORCH_TRACE folder of the
// captures in tests/data/compile, and broken input.
#include "analysis/ingest/inductor_reader.h"

#include <gtest/gtest.h>
#include <algorithm>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

using sightline::testing::dataTree;
using sightline::testing::readFile;

constexpr const char* kProvForward = "c676plqtf7l75l3hrp32ywho5kk5agisagg5hun75kgq2jam3hl6";
constexpr const char* kPlainForward = "cbojbybgtuzzt4wa424zciksq3kh7wyr64bmq6wukzw2mr4f6bk4";
constexpr const char* kProvBackward = "cj4vulsu3q7k65hcjcjb3dapzegkpy6ekw2ft7gsdiegbkxx4e5y";
constexpr const char* kPlainBackward = "cs5eifmd5k3vo22j7xeskbxcghzdcmk4oi372ntpepnsio6nwlnh";

const model::CompiledModule* find(const model::CompiledCode& code, const std::string& name) {
  for (const auto& m : code.modules)
    if (m.name == name) return &m;
  return nullptr;
}

std::string cache() { return dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache"; }

TEST(InductorReader, ReadsEveryWrapperOfTheCacheAndResolvesEveryLaunch) {
  auto code = readCompiledCode({cache()});
  EXPECT_TRUE(code.warnings.empty()) << code.warnings.front();
  ASSERT_EQ(code.modules.size(), 4u);
  for (const char* name : {kProvForward, kPlainForward, kProvBackward, kPlainBackward}) {
    const auto* m = find(code, name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_FALSE(m->launches.empty()) << name;
    for (const auto& l : m->launches) {
      ASSERT_FALSE(l.stack.empty()) << name << " line " << l.line << " " << l.kernel;
      EXPECT_TRUE(l.stack.back().file.ends_with("tests/data/compile/train_gpt.py"));
    }
  }
  EXPECT_FALSE(find(code, kProvForward)->backward);
  EXPECT_TRUE(find(code, kProvBackward)->backward);
  EXPECT_EQ(find(code, kProvBackward)->graph, "0_backward");
  // With provenance tracking the stacks are whole: `x = block(x)` above the block's line.
  EXPECT_TRUE(find(code, kProvForward)->provenance);
  EXPECT_FALSE(find(code, kPlainForward)->provenance);
  bool whole = false;
  for (const auto& l : find(code, kProvForward)->launches) whole = whole || l.stack.size() >= 3;
  EXPECT_TRUE(whole);
}

TEST(InductorReader, LinesWithoutProvenanceAgreeWithInductorsLineMap) {
  // The same model compiled twice: the innermost line of each launch from the post-grad graph
  // (no provenance) is the line Inductor's own line map gives.
  auto code = readCompiledCode({cache()});
  for (auto [with, without] : {std::pair(kProvForward, kPlainForward), std::pair(kProvBackward, kPlainBackward)}) {
    const auto* a = find(code, with);
    const auto* b = find(code, without);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->launches.size(), b->launches.size());
    size_t same = 0;
    for (size_t i = 0; i < a->launches.size(); ++i) {
      EXPECT_EQ(a->launches[i].kernel, b->launches[i].kernel);
      same += a->launches[i].stack.back().line == b->launches[i].stack.back().line ? 1 : 0;
    }
    EXPECT_EQ(same, a->launches.size()) << with;
  }
}

TEST(InductorReader, FusedKernelsNameTheirOtherLines) {
  auto code = readCompiledCode({cache()});
  // The embedding sum, the first LayerNorm and the qkv projection's cast in one kernel: charged
  // to the LayerNorm's line (its reductions are the kernel's main op; the cast is its last
  // node), fused with lines 25 and 71.
  const auto* m = find(code, kPlainForward);
  ASSERT_NE(m, nullptr);
  const model::CompiledLaunch* fused = nullptr;
  for (const auto& l : m->launches)
    if (l.kernel == "triton_per_fused__to_copy_add_embedding_native_layer_norm_2") fused = &l;
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->stack.back().line, 54);
  std::vector<int32_t> lines;
  for (const auto& f : fused->fused) lines.push_back(f.line);
  EXPECT_EQ(lines, (std::vector<int32_t>{25, 71}));
}

TEST(InductorReader, AFusedKernelGoesToItsMainOpWithAWholeStack) {
  auto code = readCompiledCode({cache()});
  // With Inductor's line map: the same kernel keeps the whole stack down to the LayerNorm's
  // call (`x = block(x)` 73, then 54), cut from its last node's stack (73, 54, 25).
  const auto* m = find(code, kProvForward);
  ASSERT_NE(m, nullptr);
  for (const auto& l : m->launches) {
    if (l.kernel != "triton_per_fused__to_copy_add_embedding_native_layer_norm_2") continue;
    std::vector<int32_t> stack;
    for (const auto& f : l.stack) stack.push_back(f.line);
    EXPECT_EQ(stack, (std::vector<int32_t>{73, 54}));
  }
}

TEST(InductorReader, ALayerNormBackwardFusedWithADropoutGoesToTheNorm) {
  // tests/data/overhead/gpt.py compiled: each LayerNorm backward is fused with the dropout
  // backward of the residual branch before it (its last node, line 34 or 46): the kernel goes
  // to the LayerNorm's call (58 or 59, under `x = layer(x)` 84), the dropout's line is fused.
  auto code = readCompiledCode({dataTree("overhead/runs/compiled_cache.tar.xz") + "/inductor_cache"});
  const model::CompiledModule* backward = nullptr;
  for (const auto& m : code.modules)
    if (m.backward) backward = &m;
  ASSERT_NE(backward, nullptr);
  size_t norms = 0;
  for (const auto& l : backward->launches) {
    if (l.kernel.find("add_native_dropout_backward_native_layer_norm_backward") == std::string::npos) continue;
    ++norms;
    std::vector<int32_t> stack, fused;
    for (const auto& f : l.stack) stack.push_back(f.line);
    for (const auto& f : l.fused) fused.push_back(f.line);
    ASSERT_EQ(stack.size(), 2u) << l.kernel;
    EXPECT_EQ(stack[0], 84);
    EXPECT_TRUE(stack[1] == 58 || stack[1] == 59) << stack[1];
    EXPECT_TRUE(std::count(fused.begin(), fused.end(), stack[1] == 59 ? 34 : 46)) << l.kernel;
  }
  EXPECT_GE(norms, 10u);
}

TEST(InductorReader, ReadsATorchTraceFolder) {
  auto code = readCompiledCode({dataTree("compile/trace.tar.xz") + "/trace"});
  ASSERT_EQ(code.modules.size(), 2u);
  EXPECT_TRUE(find(code, kProvForward) && find(code, kProvBackward));
  for (const auto& m : code.modules) {
    EXPECT_TRUE(m.provenance) << m.name;
    for (const auto& l : m.launches) EXPECT_FALSE(l.stack.empty()) << m.name << ":" << l.line;
  }
  ASSERT_EQ(code.compiles.size(), 1u);
  EXPECT_EQ(code.compiles[0].id, "0/0");
  EXPECT_EQ(code.compiles[0].function.function, "forward");
  EXPECT_EQ(code.compiles[0].function.line, 68);
  EXPECT_GT(code.compiles[0].seconds, 0.0);
}

// A run with a graph break and recompiles (compile/breaks): every compilation, its stack, its
// recompile guard, and the graph break at its line.
TEST(InductorReader, ReadsCompilationsGraphBreaksAndRecompiles) {
  auto code = readCompiledCode({dataTree("compile/breaks/trace.tar.xz") + "/trace"});
  ASSERT_EQ(code.compiles.size(), 11u);
  const auto& first = code.compiles[0];
  EXPECT_EQ(first.id, "0/0");
  EXPECT_EQ(first.function.function, "forward");
  EXPECT_EQ(first.function.line, 20);
  EXPECT_TRUE(first.function.file.ends_with("breaks/train_breaks.py"));
  EXPECT_GT(first.pid, 0u);
  EXPECT_GT(first.start_s, 1.7e9);
  EXPECT_GT(first.seconds, 0.0);
  // <module>, main at its call line, PyTorch's frames, forward.
  ASSERT_GE(first.stack.size(), 3u);
  EXPECT_EQ(first.stack[1].line, 48);
  EXPECT_EQ(first.stack[1].function, "main");
  EXPECT_EQ(first.stack.back().line, 20);
  ASSERT_EQ(first.restart_reasons.size(), 1u);
  EXPECT_TRUE(first.restart_reasons[0].starts_with("Unsupported Tensor.item() call")) << first.restart_reasons[0];
  EXPECT_TRUE(first.recompile_reason.empty());
  // The resume function after the break, recompiled on the value `.item()` read and on the
  // short batch's size, until Dynamo's limit.
  int resumes = 0, size_mismatch = 0;
  for (const auto& c : code.compiles) {
    if (c.function.function == "torch_dynamo_resume_in_forward_at_22") ++resumes;
    if (c.recompile_reason.find("size mismatch at index 0") != std::string::npos) ++size_mismatch;
  }
  EXPECT_EQ(resumes, 8);
  EXPECT_GE(size_mismatch, 3);
  EXPECT_EQ(code.compiles.back().id, "1/8");
  EXPECT_NE(code.compiles.back().fail_reason.find("recompile limit exceeded"), std::string::npos);
  ASSERT_FALSE(code.graph_breaks.empty());
  EXPECT_EQ(code.graph_breaks[0].at.line, 22);
  EXPECT_EQ(code.graph_breaks[0].compile_id, "0/0");
  EXPECT_TRUE(code.graph_breaks[0].reason.find("Unsupported Tensor.item() call") != std::string::npos)
      << code.graph_breaks[0].reason;
}

TEST(InductorReader, BrokenInputIsSkippedWithAWarning) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline_inductor_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "fxgraph" / "ab" / "fkey");
  // A cache entry cut inside its code, one cut in half (after the fields read, among Triton's
  // binaries: its module is read), and one that is not a pickle at all.
  std::string entry;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache() + "/fxgraph"))
    if (e.is_regular_file()) entry = readFile(e.path().string());
  ASSERT_FALSE(entry.empty());
  {
    std::ofstream(dir / "fxgraph" / "ab" / "fkey" / "early", std::ios::binary) << entry.substr(0, 20'000);
    std::ofstream(dir / "fxgraph" / "ab" / "fkey" / "half", std::ios::binary) << entry.substr(0, entry.size() / 2);
    std::ofstream(dir / "fxgraph" / "ab" / "fkey" / "text") << "not a pickle";
    std::ofstream(dir / "dedicated_log_torch_trace_x.log") << "V1 0 0 x.py:1] {\"artifact\": {\"name\n\tgarbage\n";
  }
  auto code = readCompiledCode({dir.string(), (dir / "missing").string()});
  EXPECT_EQ(code.modules.size(), 1u);
  EXPECT_EQ(code.warnings.size(), 3u) << (code.warnings.empty() ? "" : code.warnings[0]);  // two entries, one folder
  EXPECT_TRUE(holdsCompiledCode(dir.string()));
  EXPECT_FALSE(holdsCompiledCode((dir / "fxgraph").string()));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(parseFxGraphEntry("").has_value());
  EXPECT_FALSE(parseFxGraphEntry(std::string("\x80\x04\x95", 3)).has_value());
}

TEST(InductorReader, CompilationNumbersOutOfRangeAreDropped) {
  // Found by inductor_fuzz: a first line past int's range, and times no clock gives.
  model::CompiledCode code;
  parseTraceLog(
      "V1123 21:37:52.621000 479 torch/_dynamo/utils.py:1796] {\"compilation_metrics\": {\"compile_id\": \"0/0\", "
      "\"co_name\": \"forward\", \"co_filename\": \"/a.py\", \"co_firstlineno\": 2.08889e+17, "
      "\"start_time\": 1e300, \"entire_frame_compile_time_s\": Infinity}, \"frame_id\": 0}\n",
      "t.log", code);
  ASSERT_EQ(code.compiles.size(), 1u);
  EXPECT_EQ(code.compiles[0].function.line, 0);
  EXPECT_EQ(code.compiles[0].seconds, 0.0);
}

TEST(InductorReader, ImplausibleCompileTimesAreNotCountedAndSaidSo) {
  // 150,000 compilations of -1e308 s once summed to "150000 compilations in -inf s".
  std::string log;
  for (const char* seconds : {"-1e308", "1e308", "-2.5", "90000", "2.5"})
    log +=
        "V1123 21:37:52.621000 479 torch/_dynamo/utils.py:1796] {\"compilation_metrics\": {\"compile_id\": "
        "\"0/0\", \"co_name\": \"forward\", \"co_filename\": \"/a.py\", \"co_firstlineno\": 2, "
        "\"entire_frame_compile_time_s\": " +
        std::string(seconds) + "}, \"frame_id\": 0}\n";
  model::CompiledCode code;
  parseTraceLog(log, "t.log", code);
  ASSERT_EQ(code.compiles.size(), 5u);
  double total = 0;
  for (const auto& c : code.compiles) total += c.seconds;
  EXPECT_EQ(total, 2.5);
  ASSERT_EQ(code.warnings.size(), 1u);
  EXPECT_EQ(code.warnings[0].rfind("4 compilations have an implausible compile time", 0), 0u) << code.warnings[0];
}

TEST(InductorReader, StackText) {
  auto frames = parseStackText(
      "  File \"/w/model.py\", line 63, in forward\n    x = block(x)\n"
      "  File \"/w/model.py\", line 44, in forward\n    x = x + self.attn(x)\n  File \"broken\n");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].file, "/w/model.py");
  EXPECT_EQ(frames[0].line, 63);
  EXPECT_EQ(frames[1].line, 44);
  EXPECT_EQ(frames[1].function, "forward");
}

}  // namespace
}  // namespace sightline::ingest
