// The regression gate's statistics, its thresholds and the matching of lines across edits.
#include "analysis/features/regression.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sightline::features {
namespace {

std::vector<int64_t> steps(int64_t around, size_t n, int64_t spread) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(around + static_cast<int64_t>(i % 7) * spread - 3 * spread);
  return out;
}

TEST(Regression, TheSameSamplesAreWithinTheirSpread) {
  auto a = steps(10'000'000, 20, 100'000);
  MedianChange c = changeOf(a, a);
  EXPECT_TRUE(c.sampled);
  EXPECT_EQ(c.delta_ns, 0);
  EXPECT_LE(c.low_ns, 0);
  EXPECT_GE(c.high_ns, 0);
  EXPECT_FALSE(c.certain());
  // The same inputs give the same interval: a fixed seed.
  MedianChange again = changeOf(a, a);
  EXPECT_EQ(again.low_ns, c.low_ns);
  EXPECT_EQ(again.high_ns, c.high_ns);
}

TEST(Regression, AShiftPastTheSpreadIsCertainAndItsSizeInTheInterval) {
  auto a = steps(10'000'000, 20, 100'000), b = steps(11'000'000, 20, 100'000);
  MedianChange c = changeOf(a, b);
  EXPECT_EQ(c.delta_ns, 1'000'000);
  EXPECT_TRUE(c.certain());
  EXPECT_GT(c.low_ns, 0);
  EXPECT_LE(c.low_ns, 1'000'000);
  EXPECT_GE(c.high_ns, 1'000'000);
  EXPECT_NEAR(c.relative(), 0.1, 1e-9);
  MedianChange none = changeOf({}, b);
  EXPECT_FALSE(none.sampled);
  EXPECT_FALSE(none.certain());
  MedianChange two = changeOf({10'000'000, 10'100'000}, b);  // two steps have no spread to draw from
  EXPECT_FALSE(two.sampled);
  EXPECT_FALSE(two.certain());
}

TEST(Regression, ThresholdsParseOrSayWhatTheyTake) {
  std::string error;
  auto step = parseGateRule("step:+5%", error);
  ASSERT_TRUE(step) << error;
  EXPECT_EQ(step->scope, GateRule::Scope::Step);
  EXPECT_TRUE(step->percent);
  EXPECT_EQ(step->value, 5);
  auto line = parseGateRule("line:1.5ms", error);
  ASSERT_TRUE(line) << error;
  EXPECT_EQ(line->scope, GateRule::Scope::Line);
  EXPECT_FALSE(line->percent);
  EXPECT_EQ(line->value, 1.5e6);
  for (const char* bad :
       {"step", "disk:+10%", "step:+5", "step:fast", "line:-", "step:+1e400%", "step:nan%", "step:+5MiB"}) {
    EXPECT_FALSE(parseGateRule(bad, error)) << bad;
    EXPECT_NE(error.find("step:+5%"), std::string::npos) << error;
  }
  auto memory = parseGateRule("memory:+10%", error);
  ASSERT_TRUE(memory) << error;
  EXPECT_EQ(memory->scope, GateRule::Scope::Memory);
  EXPECT_TRUE(memory->percent);
  auto bytes = parseGateRule("memory:+512MiB", error);
  ASSERT_TRUE(bytes) << error;
  EXPECT_EQ(bytes->value, 512.0 * 1024 * 1024);
  EXPECT_FALSE(parseGateRule("memory:+1ms", error));
  EXPECT_NE(error.find("MiB"), std::string::npos) << error;
}

join::RankSummary run(const std::vector<int64_t>& measured, std::vector<join::SummaryLine> lines) {
  join::RankSummary s;
  s.format = "nsys-sqlite", s.profiler = "nsys", s.gpu_name = "NVIDIA H200";
  s.command = {"python3", "train.py"};
  s.measured_ns = measured;
  for (int k = 0; k < 5; ++k) s.steps.push_back({k * 10, k * 10 + 9, attribution::StepKind::Steady});
  s.lines = std::move(lines);
  return s;
}

join::SummaryLine line(int32_t number, std::string text, int64_t per_step) {
  join::SummaryLine l;
  l.path = "/tmp/x/train.py", l.line = number, l.text = std::move(text);
  l.ns = per_step * 5;
  l.step_ns.assign(5, per_step);
  return l;
}

// A line moved down by an inserted line keeps its match (by its text); the new line is new; the
// gate names the line whose cost grew.
TEST(Regression, LinesMatchByTextAcrossAnInsertedLine) {
  auto base = run(steps(10'000'000, 20, 50'000),
                  {line(10, "y = self.mlp(x)", 4'000'000), line(12, "loss.backward()", 1'000'000)});
  auto next =
      run(steps(12'000'000, 20, 50'000), {line(11, "y = self.mlp(x)", 6'000'000),
                                          line(13, "loss.backward()", 1'000'000), line(12, "loss.item()", 10'000)});
  std::string error;
  RunDiff d = diffRuns({base}, {next}, {*parseGateRule("step:+5%", error), *parseGateRule("line:+1ms", error)});
  ASSERT_TRUE(d.incomparable.empty()) << d.incomparable;
  EXPECT_EQ(d.step_basis.rfind("measured", 0), 0u) << d.step_basis;
  ASSERT_EQ(d.lines.size(), 3u);
  EXPECT_EQ(d.lines[0].text, "y = self.mlp(x)");
  EXPECT_EQ(d.lines[0].base_line, 10);
  EXPECT_EQ(d.lines[0].new_line, 11);
  EXPECT_EQ(d.lines[0].change.delta_ns, 2'000'000);
  EXPECT_EQ(d.lines[1].kind, LineChange::Kind::New);
  EXPECT_EQ(d.lines[1].new_line, 12);
  ASSERT_EQ(d.gate.size(), 2u);
  EXPECT_TRUE(d.gate[0].exceeded);
  EXPECT_TRUE(d.gate[1].exceeded);
  EXPECT_EQ(d.gate[1].subject, "train.py:11");
  EXPECT_TRUE(d.failed());
}

TEST(Regression, RunsThatCannotBeComparedSayWhy) {
  auto a = run({10}, {}), b = run({10}, {});
  b.gpu_name = "NVIDIA H100 80GB HBM3";
  EXPECT_NE(diffRuns({a}, {b}, {}).incomparable.find("different GPUs"), std::string::npos);
  b = a, b.profiler = "torch", b.format = "kineto-json";
  EXPECT_NE(diffRuns({a}, {b}, {}).incomparable.find("different profilers"), std::string::npos);
  b = a;
  EXPECT_NE(diffRuns({a}, {b, b}, {}).incomparable.find("numbers of ranks"), std::string::npos);
  b.profiler_options = {"python-backtraces"}, a.profiler_options = {"python-backtraces", "autograd-nvtx"};
  EXPECT_NE(
      diffRuns({a}, {b}, {}).incomparable.find("different profiler options: python-backtraces, autograd-nvtx (base)"),
      std::string::npos);
  a.profiler_options.clear();  // a summary from before options were kept: not refused on them
  EXPECT_EQ(diffRuns({a}, {b}, {}).incomparable.find("profiler options"), std::string::npos);
  // Another torch is no reason to refuse (an upgrade is a change worth measuring): it is said.
  b.torch_version = "2.11.0", a.torch_version = "2.10.0";
  EXPECT_EQ(diffRuns({a}, {b}, {}).version_changes, std::vector<std::string>{"torch 2.10.0 (base) and 2.11.0 (new)"});
  b = a;
  b.command = {"python3", "other.py"};
  EXPECT_NE(diffRuns({a}, {b}, {}).incomparable.find("different scripts"), std::string::npos);
  EXPECT_NE(diffRuns(std::vector<join::RankSummary>{}, {b}, {}).incomparable.find("base run"), std::string::npos);
  // Only one run measured without the profiler: both on their profiled steps, and said so.
  b = a, b.measured_ns.clear();
  RunDiff d = diffRuns({a}, {b}, {});
  EXPECT_TRUE(d.incomparable.empty());
  EXPECT_EQ(d.step_basis.rfind("profiled", 0), 0u);
  EXPECT_NE(d.step_basis_note.find("only the base run"), std::string::npos);
}

// The last step cut short where the loop ended is no sample (the report leaves it out too), and
// runs whose lines share no file are of other scripts.
TEST(Regression, ACutShortLastStepIsLeftOutAndOtherScriptsAreRefused) {
  auto a = run({}, {line(10, "y = f(x)", 1000)});
  a.steps.back().end_ns = a.steps.back().start_ns + 1;  // 1 ns of the others' 9
  RunDiff d = diffRuns({a}, {a}, {});
  ASSERT_TRUE(d.incomparable.empty()) << d.incomparable;
  EXPECT_EQ(d.step.base_samples, 4u);
  auto other = run({}, {line(10, "y = f(x)", 1000)});
  other.lines[0].path = "/tmp/x/other.py";
  other.command.clear(), a.command.clear();
  EXPECT_NE(diffRuns({a}, {other}, {}).incomparable.find("no source file in common"), std::string::npos);
}

// The memory rule compares the measured peaks against the largest base run's, and is not
// checked (never passed silently as a pass of a peak) where a run has none.
TEST(Regression, MemoryPeaksGateAgainstTheLargestBase) {
  auto a = run(steps(10'000'000, 20, 50'000), {line(10, "y = f(x)", 1000)});
  auto b = a, next = a;
  a.measured_peak_allocated_bytes = 1000, a.measured_peak_reserved_bytes = 1200;
  b.measured_peak_allocated_bytes = 1050, b.measured_peak_reserved_bytes = 1200;
  next.measured_peak_allocated_bytes = 1200, next.measured_peak_reserved_bytes = 1400;
  std::string error;
  auto ten = *parseGateRule("memory:+10%", error), twenty = *parseGateRule("memory:+20%", error);
  RunDiff d = diffRuns(std::vector<std::vector<join::RankSummary>>{{a}, {b}}, {next}, {ten, twenty});
  ASSERT_TRUE(d.memory.known);
  EXPECT_EQ(d.memory.base_min_bytes, 1000);
  EXPECT_EQ(d.memory.base_max_bytes, 1050);
  EXPECT_EQ(d.memory.deltaBytes(), 150);
  EXPECT_TRUE(d.gate[0].exceeded);   // +14.3% of 1050
  EXPECT_FALSE(d.gate[1].exceeded);  // under +20%
  next.measured_peak_allocated_bytes = -1;
  d = diffRuns({a}, {next}, {ten});
  EXPECT_FALSE(d.memory.known);
  EXPECT_FALSE(d.gate[0].checked);
  EXPECT_FALSE(d.gate[0].exceeded);
}

// A new `.item()` costs no GPU time: when the step grew past its spread and no line's GPU time
// explains it, the line that now synchronizes comes first, marked.
TEST(Regression, ANewSyncExplainsAStepNoLineExplains) {
  auto base = run(steps(10'000'000, 20, 50'000),
                  {line(10, "y = self.mlp(x)", 4'000'000), line(12, "loss.backward()", 1'000'000)});
  auto next = run(steps(12'000'000, 20, 50'000), {line(10, "y = self.mlp(x)", 4'000'000),
                                                  line(12, "loss.backward()", 1'000'000), line(13, "loss.item()", 5)});
  next.lines[2].syncs = 5, next.lines[2].sync_ns = 40'000'000;
  RunDiff d = diffRuns({base}, {next}, {});
  ASSERT_TRUE(d.step.certain());
  ASSERT_FALSE(d.lines.empty());
  EXPECT_EQ(d.lines[0].text, "loss.item()");
  EXPECT_TRUE(d.lines[0].sync_added);
  EXPECT_DOUBLE_EQ(d.lines[0].new_syncs, 1.0);
  EXPECT_FALSE(d.lines[1].sync_added);
  // A line whose GPU time explains the step: no sync is blamed.
  next.lines[0].step_ns.assign(5, 6'000'000), next.lines[0].ns = 30'000'000;
  d = diffRuns({base}, {next}, {});
  EXPECT_EQ(d.lines[0].text, "y = self.mlp(x)");
  EXPECT_FALSE(d.lines[0].sync_added);
}

// In a run of several ranks the loop's wait for data is per rank: one rank starved of data
// shows, where a pooled median would hide it.
TEST(Regression, OneRanksWaitForDataIsItsOwn) {
  auto rank = [&](int32_t r, int64_t wait) {
    auto s = run(steps(10'000'000 + wait, 20, 50'000), {line(10, "y = f(x)", 1000)});
    s.rank = r, s.world_size = 2;
    s.measured_input_ns.assign(20, wait);
    s.input_path = "/tmp/x/train.py", s.input_line = 131;
    return s;
  };
  RunDiff d = diffRuns({rank(0, 80'000), rank(1, 80'000)}, {rank(0, 80'000), rank(1, 17'000'000)}, {});
  ASSERT_TRUE(d.incomparable.empty()) << d.incomparable;
  ASSERT_FALSE(d.parts.empty());
  EXPECT_EQ(d.parts[0].rank, 1);
  EXPECT_EQ(d.parts[0].line, 131);
  EXPECT_NEAR(d.parts[0].change.delta_ns, 16'920'000, 1);
  EXPECT_TRUE(d.parts[0].change.certain());
}

// A line whose text changed where it stood is that line edited: compared with its old self, and
// its kernels' change said.
TEST(Regression, ALineEditedInPlaceIsOneLine) {
  auto base = run(steps(10'000'000, 20, 50'000), {line(10, "y = self.mlp(x)", 4'000'000), line(12, "z = y", 1'000)});
  auto next = run(steps(14'000'000, 20, 50'000),
                  {line(11, "y = self.mlp(x.float())", 8'000'000), line(13, "z = y", 1'000), line(12, "w = 1", 1)});
  base.lines[0].kernels = {"gemm_bf16"}, next.lines[0].kernels = {"gemm_f32"};
  RunDiff d = diffRuns({base}, {next}, {});
  ASSERT_FALSE(d.lines.empty());
  EXPECT_EQ(d.lines[0].kind, LineChange::Kind::Edited);
  EXPECT_EQ(d.lines[0].base_line, 10);
  EXPECT_EQ(d.lines[0].new_line, 11);
  EXPECT_EQ(d.lines[0].change.delta_ns, 4'000'000);
  EXPECT_TRUE(d.lines[0].kernels_changed());
  EXPECT_EQ(d.lines.size(), 3u);  // the edited line, z = y, and the new w = 1 (nothing removed)
  for (const auto& l : d.lines) EXPECT_NE(l.kind, LineChange::Kind::Removed);
}

// Communication no compute overlapped, per step, from the collectives' exposed time.
TEST(Regression, ExposedCommunicationIsAPartOfTheStep) {
  auto a = run(steps(10'000'000, 20, 50'000), {line(10, "y = f(x)", 1000)});
  auto b = a;
  for (int32_t k = 0; k < 5; ++k) {
    a.collectives.push_back({k, 0, 0, 0, 1, 100'000});
    b.collectives.push_back({k, 0, 0, 0, 1, 2'100'000});
  }
  a.names = b.names = {"ncclAllReduce"};
  RunDiff d = diffRuns({a}, {b}, {});
  auto it = std::find_if(d.parts.begin(), d.parts.end(),
                         [](const PartChange& p) { return p.part.rfind("communication exposed", 0) == 0; });
  ASSERT_NE(it, d.parts.end());
  EXPECT_EQ(it->change.delta_ns, 2'000'000);
}

}  // namespace
}  // namespace sightline::features
