// torch.compile's compilations per compiled function (tests/data/compile: the GPT trainer's one
// compile; breaks/: a graph break and recompiles up to Dynamo's limit), and their windows on a
// profile's clock.
#include "analysis/join/compile_summary.h"

#include <gtest/gtest.h>

#include "analysis/ingest/inductor_reader.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

using sightline::testing::dataTree;

model::CompiledCode breaksTrace() {
  return ingest::readCompiledCode({dataTree("compile/breaks/trace.tar.xz") + "/trace"});
}

TEST(CompileSummary, OneCompileOfTheGptForward) {
  auto code = ingest::readCompiledCode({dataTree("compile/trace.tar.xz") + "/trace"});
  auto s = summarizeCompiles(code);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].function.function, "forward");
  EXPECT_EQ(s[0].function.line, 68);
  EXPECT_EQ(s[0].compiles, 1);
  EXPECT_EQ(s[0].graphs, 1);
  EXPECT_EQ(s[0].recompiles, 0);
  EXPECT_TRUE(s[0].breaks.empty());
  EXPECT_EQ(s[0].recompile_limit, 0);
  ASSERT_EQ(s[0].calls.size(), 1u);
  EXPECT_EQ(s[0].calls[0].line, 139);  // loss = model(x, y)
  EXPECT_GT(s[0].seconds, 1.0);
}

TEST(CompileSummary, GraphBreakAndRecompilesCountForTheFunctionTheyContinue) {
  auto s = summarizeCompiles(breaksTrace());
  // The resume function after the break (`torch_dynamo_resume_in_forward_at_22`) is forward's.
  ASSERT_EQ(s.size(), 1u);
  const auto& f = s[0];
  EXPECT_EQ(f.function.function, "forward");
  EXPECT_EQ(f.function.line, 20);
  EXPECT_EQ(f.graphs, 2);
  EXPECT_EQ(f.compiles, 10);   // 0/0, 0/1 and 1/0..1/7; 1/8 gave up
  EXPECT_EQ(f.recompiles, 8);  // all but the first compile of each frame
  EXPECT_EQ(f.recompile_limit, 8);
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.calls[0].line, 48);
  ASSERT_EQ(f.breaks.size(), 1u);
  EXPECT_EQ(f.breaks[0].line, 22);
  EXPECT_EQ(f.breaks[0].reason, "Unsupported Tensor.item() call with capture_scalar_outputs=False");
  EXPECT_NE(f.breaks[0].hint.find("capture_scalar_outputs = True"), std::string::npos) << f.breaks[0].hint;
  // Guards that differ only in a value or size group together; value guards are marked.
  int total = 0, value = 0;
  for (const auto& r : f.recompile_reasons) {
    total += r.count;
    if (r.value) value += r.count;
    EXPECT_EQ(r.text.find("0.2"), std::string::npos) << r.text;  // values elided
    EXPECT_EQ(r.text.find("expected"), std::string::npos) << r.text;
  }
  EXPECT_EQ(total, 8);
  EXPECT_EQ(value, 4);
  EXPECT_EQ(f.recompile_reasons.front().count, 3);
}

TEST(CompileSummary, WindowsLandOnTheProfilesClock) {
  model::Profile p;
  p.info.utc_start_ns = 1795469851171076386;  // the breaks capture's session start
  p.api_calls.push_back({});
  auto windows = compileWindows(breaksTrace(), p);
  ASSERT_EQ(windows.size(), 11u);  // every attempt, the one that gave up (2 ms) too
  // The first compile began 16.6 s into the session (its first Triton kernel ran at 21.58 s).
  EXPECT_NEAR(static_cast<double>(windows[0].start_ns) / 1e9, 16.60, 0.01);
  EXPECT_LT(windows[0].end_ns, 21'576'479'093);
  EXPECT_EQ(p.strings[windows[0].file].substr(p.strings[windows[0].file].rfind('/') + 1), "train_breaks.py");
  EXPECT_EQ(windows[0].line, 48);
  EXPECT_EQ(windows[0].pid, 0u);  // the profile knows no such process: any
  // Without the profile's wall clock there is nothing to place.
  model::Profile unknown;
  EXPECT_TRUE(compileWindows(breaksTrace(), unknown).empty());
}

}  // namespace
}  // namespace sightline::join
