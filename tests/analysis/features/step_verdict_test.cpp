// The step verdict's advice for a step that waits for data names only what the script's
// DataLoader lacks.
#include "analysis/features/step_verdict.h"
#include "analysis/features/story.h"

#include <gtest/gtest.h>

namespace sightline::features {
namespace {

std::optional<LoaderSettings> settingsOf(const std::string& text) {
  source::SourceFile file(text);
  return loaderSettings(source::buildSourceIndex(file));
}

std::string loaderAdvice(const std::optional<LoaderSettings>& loader) {
  StepVerdict v;
  v.loader = loader;
  return changeText({Change::LoaderWorkers, 8e6, std::nullopt}, v);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The advice for a script whose DataLoader calls are `calls`.
std::string adviceFor(const std::string& calls) {
  auto settings = settingsOf("from torch.utils.data import DataLoader\n" + calls);
  EXPECT_TRUE(settings) << calls;
  return settings ? loaderAdvice(settings) : "";
}

TEST(LoaderAdvice, NamesOnlyWhatTheDataLoaderLacks) {
  std::string bare = adviceFor("loader = DataLoader(ds, batch_size=8)\n");
  EXPECT_TRUE(has(bare, "(num_workers, pin_memory=True, persistent_workers=True)")) << bare;
  EXPECT_TRUE(has(bare, "waits 8.00 ms/step for data")) << bare;
  // The public DDP tutorial's loader: workers and pinned memory already.
  std::string tutorial = adviceFor("dl = DataLoader(ds, batch_size=b, pin_memory=True, num_workers=2)\n");
  EXPECT_FALSE(has(tutorial, "pin_memory")) << tutorial;
  EXPECT_TRUE(has(tutorial, "workers do not keep up")) << tutorial;
  EXPECT_TRUE(has(tutorial, "persistent_workers=True")) << tutorial;
  // Every loader must have a setting for it to count: one without workers makes the advice.
  std::string two = adviceFor(
      "dl = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True)\n"
      "ev = DataLoader(ds, num_workers=0)\n");
  EXPECT_TRUE(has(two, "(num_workers, pin_memory=True, persistent_workers=True)")) << two;
  std::string full = adviceFor("dl = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True)\n");
  EXPECT_TRUE(has(full, "prefetch_factor")) << full;
  EXPECT_FALSE(has(full, "persistent_workers")) << full;
}

TEST(LoaderAdvice, UnknownLoadersGetTheGeneralAdvice) {
  // No DataLoader in the file, or its arguments passed through **kwargs: nothing is known.
  EXPECT_FALSE(settingsOf("import torch\nx = torch.zeros(3)\n"));
  EXPECT_FALSE(settingsOf("from torch.utils.data import DataLoader\ndl = DataLoader(ds, **cfg)\n"));
  std::string text = loaderAdvice(std::nullopt);
  EXPECT_TRUE(has(text, "where not set yet")) << text;
}

}  // namespace
}  // namespace sightline::features

namespace sightline::features {
namespace {

// Two ranks, 4 steady steps each, 20 ms steps with 12 ms of exposed NCCL time of which 11 ms is
// waiting for the other rank; `late` arrives last at `share` of the collectives and does
// `extra_ns` more GPU work per step than the other.
StepVerdict pairedVerdict(double share, int64_t extra_ns = 9'000'000) {
  join::StepStory story;
  auto& s = story.summary;
  s.steady = 8, s.wall_ns = 20'000'000, s.busy_ns = 18'000'000, s.busy_share = 0.9;
  s.gpu_ns = 8 * 18'000'000, s.kernels = 800, s.kernel_ns = 8 * 6'000'000;
  s.comm_wait_ns = 8 * 11'000'000, s.comm_transfer_ns = 8 * 1'000'000;
  story.comm_exposed_ns = 8 * 12'000'000;
  story.comm_exposed_wait_ns = 8 * 11'000'000;
  story.comm_lines = {{"/w/train.py", 150, 8 * 12'000'000, 8}};
  story.ranks = 2;
  join::StepStory::LateRank late;
  late.label = "rank 1", late.share = share, late.caused_ns = 8 * 11'000'000;
  late.line = {"/w/train.py", 72, 9'000'000, 1};
  late.extra_ns = extra_ns;
  story.late = late;
  story.work_ns = 7'000'000, story.wall_hi_ns = 20'000'000;
  auto v = stepVerdict(&story);
  EXPECT_TRUE(v);
  return v ? *v : StepVerdict{};
}

TEST(RanksWaiting, AStragglerIsNamedWithItsLine) {
  // Its own GPU work explains most of the wait (9 of 11 ms/step): named, with its line, and the
  // bound holds without the step measured (9 ms of the 20 ms captured step, a third or more).
  auto v = pairedVerdict(1.0);
  EXPECT_EQ(v.bound, Bound::Ranks);
  EXPECT_EQ(v.unprofiled.bound, Bound::Ranks);
  EXPECT_FALSE(v.unprofiled.wall_ns);
  ASSERT_FALSE(v.changes.empty());
  EXPECT_EQ(v.changes[0].change, Change::BalanceRanks);
  std::string text = changeText(v.changes[0], v);
  EXPECT_TRUE(has(text, "the ranks wait 11.0 ms/step for each other")) << text;
  EXPECT_TRUE(has(text, "for rank 1, last to arrive at 100%")) << text;
  EXPECT_TRUE(has(text, "train.py:72 runs 9.00 ms/step longer on rank 1")) << text;
  EXPECT_FALSE(has(text, "bucket_cap_mb")) << text;
}

TEST(RanksWaiting, AStragglerWhoseWorkExplainsNoWaitIsNotBlamedOnItsWork) {
  // Last at every collective, yet only 0.2 ms/step more GPU work: its host is slower (or the
  // profiler slowed it more), so no line of it is named and no bound is claimed.
  auto v = pairedVerdict(1.0, 200'000);
  EXPECT_FALSE(v.unprofiled.bound);
  ASSERT_FALSE(v.changes.empty());
  std::string text = changeText(v.changes[0], v);
  EXPECT_TRUE(has(text, "its host is slower")) << text;
  EXPECT_FALSE(has(text, "train.py:72")) << text;
  EXPECT_FALSE(has(text, "0.00 ms/step longer")) << text;
  // Measured without the profiler (14 ms): the unexplained wait is not the step's bound.
  join::StepStory story;
  auto& s = story.summary;
  s.steady = 8, s.wall_ns = 20'000'000, s.busy_ns = 18'000'000, s.busy_share = 0.9;
  s.gpu_ns = 8 * 18'000'000, s.kernels = 800, s.kernel_ns = 8 * 6'000'000;
  s.comm_wait_ns = 8 * 11'000'000, s.comm_transfer_ns = 8 * 1'000'000;
  story.comm_exposed_ns = 8 * 12'000'000, story.comm_exposed_wait_ns = 8 * 11'000'000;
  story.comm_lines = {{"/w/train.py", 150, 8 * 12'000'000, 8}};
  story.ranks = 2, story.work_ns = 7'000'000, story.wall_hi_ns = 20'000'000;
  join::StepStory::LateRank late;
  late.label = "rank 1", late.share = 1.0, late.caused_ns = 8 * 11'000'000, late.extra_ns = 200'000;
  story.late = late;
  model::StepMeasurement m;
  m.median_ns = m.min_ns = m.max_ns = 14'000'000, m.steps = 20, m.ranks = 2, m.from = "run.steps.json";
  story.measured = m;
  auto measured = stepVerdict(&story);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->unprofiled.source, StepSource::Measured);
  ASSERT_TRUE(measured->unprofiled.wall_ns);
  EXPECT_EQ(*measured->unprofiled.wall_ns, 14e6);
  EXPECT_NE(measured->bound, Bound::Ranks);
  for (const auto& c : measured->causes) EXPECT_NE(c.kind, Bound::Ranks);
}

TEST(RanksWaiting, RanksLateInTurnGetNoTransferAdvice) {
  auto v = pairedVerdict(0.5);
  // Waits no rank's work explains: without the step measured, no bound is claimed.
  EXPECT_FALSE(v.unprofiled.bound);
  EXPECT_EQ(v.bound, Bound::Unknown);
  EXPECT_TRUE(v.as_captured);
  ASSERT_FALSE(v.changes.empty());
  std::string text = changeText(v.changes[0], v);
  EXPECT_TRUE(has(text, "the ranks wait 11.0 ms/step for each other")) << text;
  EXPECT_TRUE(has(text, "each rank late in turn")) << text;
  EXPECT_FALSE(has(text, "rank 1")) << "no rank is a straggler: " << text;
  for (const auto& c : v.changes) {
    EXPECT_NE(c.change, Change::Overlap) << "1 ms/step of transfer is below the floor of a cause";
    EXPECT_FALSE(has(changeText(c, v), "bucket_cap_mb"));
  }
}

// Transfer dominates: the communication advice, with the settings that shorten it.
TEST(RanksWaiting, TransferAdviceWhereTransferDominates) {
  join::StepStory story;
  auto& s = story.summary;
  s.steady = 8, s.wall_ns = 20'000'000, s.busy_ns = 18'000'000, s.busy_share = 0.9;
  s.gpu_ns = 8 * 18'000'000, s.kernels = 800, s.kernel_ns = 8 * 6'000'000;
  s.comm_wait_ns = 8 * 1'000'000, s.comm_transfer_ns = 8 * 11'000'000;
  story.comm_exposed_ns = 8 * 12'000'000;
  story.comm_exposed_wait_ns = 8 * 1'000'000;
  story.ranks = 2;
  story.work_ns = 17'000'000, story.wall_hi_ns = 20'000'000;
  auto v = stepVerdict(&story);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->bound, Bound::Comm);
  EXPECT_EQ(v->unprofiled.bound, Bound::Comm) << "11 ms/step of transfer holds at any step up to 20 ms";
  ASSERT_FALSE(v->changes.empty());
  EXPECT_EQ(v->changes[0].change, Change::Overlap);
  EXPECT_TRUE(has(changeText(v->changes[0], *v), "of NCCL transfer is exposed"));
}

}  // namespace
}  // namespace sightline::features

namespace sightline::features {
namespace {

// A script that builds its batches itself (no DataLoader) gets no advice about DataLoader
// settings it does not have, but the advice to build the next batch off the step's path.
TEST(LoaderAdvice, AScriptWithoutADataLoaderGetsNoWorkerSettings) {
  StepVerdict v;
  v.no_loader = true;
  std::string text = changeText({Change::LoaderWorkers, 8e6, std::nullopt}, v);
  EXPECT_TRUE(has(text, "no DataLoader")) << text;
  EXPECT_FALSE(has(text, "persistent_workers")) << text;
  EXPECT_FALSE(has(text, "num_workers")) << text;
}

}  // namespace
}  // namespace sightline::features

namespace sightline::features {
namespace {

// A change names its first line with that line's own part of the figure: the whole cause was
// once told "at" the line ("the GPU idles 2.25 ms/step at train_gpt.py:106", 1.47 there).
TEST(ChangeText, TheLineNamedGetsItsOwnPart) {
  StepVerdict v;
  v.steady = 10;
  join::PlacedLine line{"/w/train.py", 106, 14'700'000, 10};  // 1.47 ms/step over 10 steps
  std::string text = changeText({Change::MoveHostWork, 2.25e6, line}, v);
  EXPECT_TRUE(has(text, "the GPU idles 2.25 ms/step, 1.47 of it at train.py:106")) << text;
  line.ns = 22'500'000;  // all of it
  text = changeText({Change::MoveHostWork, 2.25e6, line}, v);
  EXPECT_TRUE(has(text, "the GPU idles 2.25 ms/step at train.py:106")) << text;
}

}  // namespace
}  // namespace sightline::features

namespace sightline::features {
namespace {

// A steady story of 10 steps of 40 ms, the GPU busy 10 ms of each, 30 ms/step of idle the capture
// charges to launches at train.py:50.
join::StepStory starvedStory() {
  join::StepStory story;
  auto& s = story.summary;
  s.steady = 10, s.median_steps = 10;
  s.wall_ns = s.wall_min_ns = s.wall_max_ns = 40'000'000;
  s.busy_ns = 10'000'000, s.busy_share = 0.25;
  s.kernels = 1000, s.kernel_ns = 100'000'000, s.launches = 1000;
  s.wait_ns[static_cast<size_t>(attribution::Wait::Launch)] = 300'000'000;
  story.wait_lines[static_cast<size_t>(attribution::Wait::Launch)] = {{"/w/train.py", 50, 300'000'000, 10}};
  story.all_steps = 10, story.work_ns = 10'000'000, story.wall_hi_ns = 40'000'000;
  story.steps_source = "ProfilerStep ranges";
  return story;
}

// A loader with one worker: sightline capture timed the loop's wait for batches without the
// profiler (30 ms of a 40 ms step): the verdict is input-bound at the loop's line, measured,
// never launch-bound by the line of the next launch (resnet.py --workers 1 once read
// "launch-bound ... Try fuse kernels with torch.compile").
TEST(MeasuredInput, AStarvedLoaderIsInputBoundByTheMeasuredWait) {
  auto story = starvedStory();
  model::StepMeasurement m;
  m.median_ns = m.min_ns = m.max_ns = 40'000'000, m.steps = 20;
  m.input_ns = 30'000'000, m.input_path = "/w/train.py", m.input_line = 47;
  story.measured = m;
  story.input_site = join::PlacedLine{"/w/train.py", 47, 0, 0};
  auto v = stepVerdict(&story);
  ASSERT_TRUE(v);
  ASSERT_FALSE(v->causes.empty());
  const auto& input = v->causes.front();
  EXPECT_EQ(input.kind, Bound::Input);
  EXPECT_TRUE(input.measured);
  EXPECT_DOUBLE_EQ(input.ns, 30e6);
  ASSERT_EQ(input.lines.size(), 1u);
  EXPECT_EQ(input.lines[0].line, 47);
  EXPECT_EQ(v->bound, Bound::Input);
  // The launch idle shares what idle is left (30 ms idle, 30 of it the loader's): none.
  for (const auto& c : v->causes) EXPECT_NE(c.kind, Bound::Launch) << causeName(c.kind) << " " << c.ns;
  EXPECT_EQ(plainText(causeStory(*v, input, true, 1)),
            "input pipeline 30.0 ms/step measured without the profiler (train.py:47 30.0)");
  ASSERT_FALSE(v->changes.empty());
  EXPECT_EQ(v->changes.front().change, Change::LoaderWorkers);
  EXPECT_TRUE(has(changeText(v->changes.front(), *v), "the loop waits 30.0 ms/step for data at train.py:47"))
      << changeText(v->changes.front(), *v);
  // A loop that waits nothing measurable for data: no input cause, whatever the capture showed.
  story.measured->input_ns = 100'000;
  story.summary.wait_ns[static_cast<size_t>(attribution::Wait::Input)] = 200'000'000;
  auto fed = stepVerdict(&story);
  ASSERT_TRUE(fed);
  for (const auto& c : fed->causes) EXPECT_NE(c.kind, Bound::Input);
}

// A run that replays CUDA graphs is never told to compile or to graph: the launches it makes
// outside the graphs, by line, are what is left (nanoGPT with CUDA graph trees once read "fuse
// kernels with torch.compile(model) or replay them as CUDA graphs").
TEST(GraphReplays, TheLaunchesOutsideTheGraphsAreNamed) {
  auto story = starvedStory();
  story.summary.graph_launches = 20, story.summary.launches = 290;
  story.launch_lines = {{"/w/graphs.py", 29, 100, 100}, {"/w/graphs.py", 30, 80, 80}};
  auto v = stepVerdict(&story);
  ASSERT_TRUE(v);
  ASSERT_FALSE(v->changes.empty());
  EXPECT_EQ(v->changes.front().change, Change::OutsideGraphs);
  std::string text = changeText(v->changes.front(), *v);
  EXPECT_TRUE(has(text,
                  "they replay 2 times a step, and 27 launches/step are made outside them, most at graphs.py:29 "
                  "(10), graphs.py:30 (8)"))
      << text;
  EXPECT_FALSE(has(text, "torch.compile(model)")) << text;
  for (const auto& c : v->changes) EXPECT_NE(c.change, Change::CompileOrGraphs);
}

}  // namespace
}  // namespace sightline::features
