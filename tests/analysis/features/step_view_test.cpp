// The step view's numbers on real captures: every bar adds up to its step, the steady bars to
// the step summary the verdict reads, the timeline's lanes and gaps to its step, the straggler
// of a two-rank run, and a memory snapshot's series up to its peak.
#include "analysis/features/step_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <numeric>

#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "tests/support/test_paths.h"

namespace sightline::features {
namespace {

using attribution::kWaitCount;

struct Joined {
  std::unique_ptr<join::ProfileJoin> join;
  std::string script;

  Joined(const std::string& profile, const std::string& script_path) : script(script_path) {
    auto loaded = ingest::loadProfile(profile);
    if (!loaded.profile) return;
    join::JoinEnvironment env;
    env.mapper.candidates = {script};
    env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
    join = std::make_unique<join::ProfileJoin>(std::move(*loaded.profile), std::move(env), join::JoinOptions{});
  }
};

// Our bundled H200 capture of examples/train_small.py, joined with the script.
Joined exampleJoin() {
  return Joined(testing::repoProfile("examples/train_small_naive.sqlite.xz"),
                testing::sourcePath("examples/train_small.py"));
}

int64_t parts(const StepBar& b) {
  return b.compute_ns + b.copy_ns + b.comm_ns + std::accumulate(b.idle_ns.begin(), b.idle_ns.end(), int64_t{0});
}

TEST(StepView, EveryBarAddsUpToItsStepAndTheSteadyOnesToTheSummary) {
  Joined j = exampleJoin();
  ASSERT_TRUE(j.join);
  auto verdict = stepVerdict(j.join->story().get());
  StepViewOptions options;
  options.verdict = verdict ? &*verdict : nullptr;
  auto view = computeStepView(*j.join, options);
  const auto& attr = j.join->attribution();
  ASSERT_EQ(view.ranks.size(), 1u);
  EXPECT_TRUE(view.has_steps);
  std::array<int64_t, kWaitCount> steady_idle{};
  int steady = 0;
  int64_t capture = 0;
  for (const auto& b : view.ranks[0].steps) {
    EXPECT_GT(b.wall_ns, 0);
    EXPECT_EQ(parts(b), b.wall_ns) << "step " << b.index;
    EXPECT_GT(b.compute_ns, 0);
    ASSERT_GE(b.top_line, 0);
    // The conv block's forward launches most of every step (itself and its backward).
    EXPECT_EQ(view.lines[static_cast<size_t>(b.top_line)].line, 33);
    if (b.kind != attribution::StepKind::Steady) continue;
    ++steady;
    for (size_t w = 0; w < kWaitCount; ++w) steady_idle[w] += b.idle_ns[w];
    capture += b.capture_ns;
    // Never more than the step holds beyond its GPU work (the model once priced more).
    EXPECT_LE(b.capture_ns, b.wall_ns - b.compute_ns - b.copy_ns - b.comm_ns) << "step " << b.index;
  }
  EXPECT_EQ(steady, attr.step_summary.steady);
  for (size_t w = 0; w < kWaitCount; ++w) EXPECT_EQ(steady_idle[w], attr.step_summary.wait_ns[w]) << w;
  // The naive loop waits on launches and on `.item()`: both causes have lines.
  EXPECT_FALSE(view.cause_lines[static_cast<size_t>(attribution::Wait::Launch)].empty());
  ASSERT_FALSE(view.cause_lines[static_cast<size_t>(attribution::Wait::Sync)].empty());
  EXPECT_EQ(view.lines[static_cast<size_t>(view.cause_lines[static_cast<size_t>(attribution::Wait::Sync)][0])].line,
            109);  // running += loss.item()
  // Top lines, costliest first (inclusive, else own time).
  ASSERT_GE(view.top_lines.size(), 5u);
  auto cost = [&](int32_t i) {
    const auto& l = view.lines[static_cast<size_t>(i)];
    return std::max(l.inclusive_ns, l.self_ns);
  };
  for (size_t i = 1; i < view.top_lines.size(); ++i) EXPECT_GE(cost(view.top_lines[i - 1]), cost(view.top_lines[i]));
  // Not measured, and the range (the GPU's own work .. the captured step) too wide for a point:
  // no dashed line, the headline gives the range.
  EXPECT_EQ(view.unprofiled_wall_ns, 0);
  ASSERT_TRUE(view.headline.verdict);
  const auto& u = view.headline.verdict->unprofiled;
  EXPECT_FALSE(u.wall_ns);
  EXPECT_LE(u.lo_ns, u.hi_ns);
  EXPECT_GE(u.hi_ns, view.headline.captured_ns) << "the captured steps' upper quartile";
  EXPECT_NE(view.headline.unprofiled.find("between"), std::string::npos) << view.headline.unprofiled;
  // The profiler's own host work, step by step, at most what the estimate took out (each step's
  // share capped at what the step holds beyond its GPU work).
  EXPECT_GT(capture, 0);
  EXPECT_LE(static_cast<double>(capture), 1.02 * static_cast<double>(attr.step_summary.unprofiled.overhead_total_ns));
}

TEST(StepView, TheTimelineHoldsItsStepsLanesAndGaps) {
  Joined j = exampleJoin();
  ASSERT_TRUE(j.join);
  auto view = computeStepView(*j.join);
  ASSERT_EQ(view.timelines.size(), 1u);
  const auto& t = view.timelines[0];
  const auto& bar = view.ranks[0].steps[static_cast<size_t>(t.step - 1)];
  EXPECT_EQ(bar.kind, attribution::StepKind::Steady);
  EXPECT_EQ(t.wall_ns, bar.wall_ns);
  ASSERT_GE(t.lanes.size(), 2u);
  EXPECT_EQ(t.lanes[0].kind, LaneKind::Host);
  EXPECT_EQ(t.lanes[0].name.rfind("Python thread ", 0), 0u) << t.lanes[0].name;
  bool stream = false;
  for (const auto& lane : t.lanes) {
    stream = stream || lane.kind == LaneKind::Stream;
    for (size_t i = 0; i < lane.spans.size(); ++i) {
      const auto& s = lane.spans[i];
      EXPECT_LE(0, s.start_ns);
      EXPECT_LE(s.start_ns, s.end_ns);
      EXPECT_LE(s.end_ns, t.end_ns);
      EXPECT_LT(s.line, static_cast<int32_t>(view.lines.size()));
      if (i > 0) {
        EXPECT_LE(lane.spans[i - 1].start_ns, s.start_ns) << lane.name;
      }
    }
  }
  EXPECT_TRUE(stream);
  // The gaps are the step's idle time, cause by cause.
  std::array<int64_t, kWaitCount> gaps{};
  for (const auto& g : t.gaps) {
    EXPECT_GE(g.start_ns, t.gpu_start_ns);
    EXPECT_LE(g.end_ns, t.gpu_start_ns + t.wall_ns);
    gaps[static_cast<size_t>(g.wait)] += g.end_ns - g.start_ns;
  }
  for (size_t w = 0; w < kWaitCount; ++w) EXPECT_EQ(gaps[w], bar.idle_ns[w]) << w;
}

// A PyTorch profiler trace: its Python thread is told by its traced calls (it has no backtraces).
TEST(StepView, ATracesPythonThreadComesFirst) {
  Joined j(testing::testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"),
           testing::testDataPath("h200/kineto/train_small.py"));
  ASSERT_TRUE(j.join);
  auto view = computeStepView(*j.join);
  ASSERT_EQ(view.ranks.size(), 1u);
  EXPECT_EQ(view.ranks[0].steps.size(), 6u);
  for (const auto& b : view.ranks[0].steps) EXPECT_EQ(parts(b), b.wall_ns) << "step " << b.index;
  ASSERT_EQ(view.timelines.size(), 1u);
  const auto& timeline = view.timelines[0];
  ASSERT_GE(timeline.lanes.size(), 3u);
  EXPECT_EQ(timeline.lanes[0].name.rfind("Python thread ", 0), 0u) << timeline.lanes[0].name;
  // The autograd engine's thread launches the backward pass: a lane of its own.
  EXPECT_EQ(timeline.lanes[1].kind, LaneKind::Host);
  EXPECT_EQ(timeline.lanes[1].name.rfind("thread ", 0), 0u) << timeline.lanes[1].name;
}

TEST(StepView, TwoRanksEachWithBarsAndTheStragglerMarked) {
  std::string dir = testing::testDataPath("multi/ddp/");
  Joined j(testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"), dir + "train_ddp.py");
  ASSERT_TRUE(j.join);
  auto view = computeStepView(*j.join);
  ASSERT_EQ(view.ranks.size(), 2u);
  int stragglers = 0;
  for (const auto& r : view.ranks) {
    stragglers += r.straggler ? 1 : 0;
    ASSERT_FALSE(r.steps.empty()) << r.label;
    for (const auto& b : r.steps) EXPECT_EQ(parts(b), b.wall_ns) << r.label << " step " << b.index;
  }
  EXPECT_EQ(stragglers, 1);
  // A timeline per rank, each of its own step closest to the median.
  ASSERT_EQ(view.timelines.size(), 2u);
  EXPECT_EQ(view.timelines[0].rank, view.ranks[0].label);
  EXPECT_EQ(view.timelines[1].rank, view.ranks[1].label);
  // The rank that is not late spends its steps waiting for the other in collectives.
  const auto& waiting = view.ranks[0].straggler ? view.ranks[1] : view.ranks[0];
  const auto& late = view.ranks[0].straggler ? view.ranks[0] : view.ranks[1];
  int64_t wait = 0, compute = 0;
  for (const auto& b : waiting.steps) wait += b.comm_wait_ns, compute += b.compute_ns;
  EXPECT_GT(wait, 10 * compute);
  for (const auto& b : late.steps) EXPECT_GT(b.compute_ns, b.comm_ns);
}

TEST(StepView, AMemorySnapshotGivesItsSeriesUpToThePeak) {
  Joined j(testing::dataProfile("memory/gpt_oom_eval.pickle.xz"), testing::testDataPath("memory/gpt_mem.py"));
  ASSERT_TRUE(j.join);
  auto view = computeStepView(*j.join);
  EXPECT_TRUE(view.ranks.empty());
  ASSERT_TRUE(view.has_memory);
  const auto& m = view.memory;
  ASSERT_FALSE(m.series.empty());
  EXPECT_LE(m.series.size(), attribution::kMemorySamples);
  int64_t most = 0;
  for (size_t i = 0; i < m.series.size(); ++i) {
    most = std::max(most, m.series[i].allocated);
    if (i > 0) {
      EXPECT_LE(m.series[i - 1].time_ns, m.series[i].time_ns);
    }
  }
  EXPECT_EQ(most, m.peak_allocated_bytes);
  EXPECT_EQ(m.peak_allocated_bytes, 68221917252);
  EXPECT_FALSE(m.step_starts_ns.empty());
  ASSERT_FALSE(m.top.empty());
  const auto& logits = view.lines[static_cast<size_t>(m.top[0].first)];
  EXPECT_EQ(logits.line, 60);  // logits = self.head(self.ln_f(x))
  EXPECT_EQ(m.top[0].second, 27601666048);
}

}  // namespace
}  // namespace sightline::features
