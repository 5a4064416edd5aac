// Memory snapshots joined to the script (tests/data/memory): loaded as profiles by their name,
// each user line's bytes at the peak on its LineCost, the story of the peak and of an
// out-of-memory error, and the out-of-memory line moved with the document's edits.
#include "analysis/join/memory_story.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "analysis/ingest/memory_snapshot_reader.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "tests/support/crafted_snapshots.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

using sightline::testing::dataProfile;
using sightline::testing::testDataPath;

const std::string kScript = "memory/gpt_mem.py";

std::unique_ptr<ProfileJoin> joined(const std::string& capture, const std::string& script = kScript) {
  auto loaded = ingest::loadProfile(dataProfile("memory/" + capture + ".pickle.xz"));
  EXPECT_TRUE(loaded.profile) << loaded.error;
  if (!loaded.profile) return nullptr;
  EXPECT_EQ(loaded.profile->info.format, "memory-snapshot");
  JoinEnvironment env;
  env.mapper.candidates = {testDataPath(script)};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  return std::make_unique<ProfileJoin>(std::move(*loaded.profile), std::move(env), JoinOptions{});
}

int64_t bytesOn(const FileCosts& costs, int32_t line) {
  auto it = costs.lines.find(line);
  return it == costs.lines.end() ? 0 : it->second.memory_peak_bytes;
}

TEST(MemoryJoin, TheOutOfMemoryErrorLandsOnItsLineWithTheCallChain) {
  auto j = joined("gpt_oom_eval");
  ASSERT_TRUE(j);
  const auto& story = j->memory().story;
  ASSERT_TRUE(story);
  EXPECT_EQ(story->peak_allocated_bytes, 68221917252);  // as the replay (memory_replay_test) and replay.py
  EXPECT_EQ(story->peak_reserved_bytes, 69744984064);
  ASSERT_TRUE(story->oom);
  EXPECT_EQ(story->oom->requested_bytes, 26373783552);
  EXPECT_EQ(story->oom->free_bytes, 15202451456);
  EXPECT_EQ(story->oom->where.line, 73);
  EXPECT_EQ(story->oom->where.function, "evaluate");
  EXPECT_EQ(story->oom->where.path, testDataPath(kScript));  // the local file, not the run's path
  ASSERT_EQ(story->oom->chain.size(), 3u);                   // <module> -> main -> evaluate
  EXPECT_EQ(story->oom->chain[0].function, "<module>");
  EXPECT_EQ(story->oom->chain[1].function, "main");
  EXPECT_EQ(story->oom->chain[1].line, 132);
  auto costs = j->measuredCosts(testDataPath(kScript));
  EXPECT_EQ(costs.oom_line, 73);
  EXPECT_EQ(costs.memory, story);
  EXPECT_EQ(bytesOn(costs, 60), 27601666048);  // the logits
  EXPECT_EQ(bytesOn(costs, 41), 21749563392);
  ASSERT_FALSE(story->top.empty());
  EXPECT_EQ(story->top[0].line, 60);
  // Every byte of the peak on the script's lines.
  int64_t on_lines = 0;
  for (const auto& [line, c] : costs.lines) on_lines += c.memory_peak_bytes;
  EXPECT_EQ(on_lines, story->peak_allocated_bytes);
  EXPECT_EQ(story->unattributed_bytes, 0);
}

TEST(MemoryJoin, ThePeakOfATrainingRunIsInBackward) {
  auto j = joined("gpt_start");
  ASSERT_TRUE(j);
  const auto& story = j->memory().story;
  ASSERT_TRUE(story);
  EXPECT_FALSE(story->oom);
  EXPECT_EQ(story->peak_phase, attribution::MemoryPhase::Backward);
  EXPECT_EQ(story->top[0].line, 128);  // loss.backward(): the gradients the engine's thread made
  EXPECT_EQ(j->measuredCosts(testDataPath(kScript)).oom_line, 0);
}

// The ImageNet example's order (forward, zero_grad, backward, step) with a ring buffer that
// has lost the gradients' allocation: zero_grad frees them, yet they were backward's (they went
// to `optimizer.zero_grad()`, 97.5 MiB in an ImageNet snapshot). With stacks="all" every event
// also carries C++ frames: those are no one's line ("??:0" held all 713 MiB) and the autograd
// engine's are the backward pass (its steps were counted as forwards: 23 of 12).
TEST(MemoryJoin, GradientsGoToBackwardWhateverTheStacksRecord) {
  const std::string script = "memory/cnn_order.py";
  std::map<int32_t, int64_t> python_lines;
  for (const char* capture : {"cnn_order", "cnn_order_all"}) {
    SCOPED_TRACE(capture);
    auto j = joined(capture, script);
    ASSERT_TRUE(j);
    const auto& story = j->memory().story;
    ASSERT_TRUE(story);
    // torch.cuda.max_memory_allocated() printed 749008384: 2,009 bytes freed before the trace
    // began are not in it.
    EXPECT_EQ(story->peak_allocated_bytes, 749006375);
    EXPECT_EQ(story->steps, 12);
    EXPECT_EQ(story->peak_phase, attribution::MemoryPhase::Backward);
    auto costs = j->measuredCosts(testDataPath(script));
    EXPECT_EQ(bytesOn(costs, 55), 0);          // optimizer.zero_grad() made nothing
    EXPECT_GT(bytesOn(costs, 56), 100 << 20);  // loss.backward(): the gradients, 112 MiB
    for (const auto& top : story->top) {
      EXPECT_EQ(top.path, testDataPath(script)) << top.path << ":" << top.line;
      EXPECT_GT(top.line, 0);
    }
    std::map<int32_t, int64_t> lines;
    for (const auto& [line, c] : costs.lines)
      if (c.memory_peak_bytes) lines[line] = c.memory_peak_bytes;
    if (python_lines.empty()) {
      python_lines = lines;
      continue;
    }
    // The same run with C++ frames: the same lines hold the same bytes, but for backward's, which
    // also holds the engine's blocks from before the trace (their C++ frames tell whose they are;
    // with Python frames only they have none).
    EXPECT_GT(lines[56], python_lines[56]);
    EXPECT_LT(story->unattributed_bytes, 2 << 20);
    lines.erase(56), python_lines.erase(56);
    EXPECT_EQ(lines, python_lines);
  }
}

// Steps told from the trace itself: a forward after a backward or optimizer pass begins one (an
// evaluation's forward joins the training step after it). gpt records iterations 2..11 of 12.
TEST(MemoryJoin, StepsAreToldFromTheTrace) {
  struct Want {
    const char* capture;
    int steps, peak_step;
  };
  for (const Want& w : {Want{"gpt", 10, 1}, Want{"gpt_start", 12, 2}, Want{"gpt_oom_eval", 6, 6}}) {
    auto j = joined(w.capture);
    ASSERT_TRUE(j);
    const auto& story = j->memory().story;
    ASSERT_TRUE(story);
    EXPECT_EQ(story->steps, w.steps) << w.capture;
    EXPECT_EQ(story->peak_step, w.peak_step) << w.capture;  // gpt_oom_eval: the evaluation after 5 steps
    EXPECT_EQ(story->steady_steps, w.steps - 2) << w.capture;
  }
}

// What a line allocates per steady step, and by which pass what it holds at the peak was made.
TEST(MemoryJoin, EachLineAllocatesPerStepAndHoldsByPass) {
  auto keep = joined("gpt_keep");
  ASSERT_TRUE(keep);
  auto costs = keep->measuredCosts(testDataPath(kScript));
  // The forward's last line: the logits (8 x 512 x 50304 floats), ln_f's output (8 x 512 x 768)
  // and its mean and rstd (2 x 8 x 512 floats), each step.
  const int64_t per_step = 8LL * 512 * 50304 * 4 + 8LL * 512 * 768 * 4 + 2LL * 8 * 512 * 4;
  EXPECT_EQ(costs.lines.at(60).memory_step_bytes, per_step);
  EXPECT_EQ(costs.lines.at(60).memory_step_allocations, 4);
  EXPECT_EQ(costs.lines.at(60).memory_peak_by_phase[0], costs.lines.at(60).memory_peak_bytes);  // forward
  // loss.backward(): all it holds was made by the backward pass.
  EXPECT_EQ(costs.lines.at(128).memory_peak_by_phase[1], costs.lines.at(128).memory_peak_bytes);
  EXPECT_GT(costs.lines.at(128).memory_peak_bytes, 0);
  // gpt evaluates after iterations 4 and 9: two more forwards of line 60 in its 8 steady steps.
  auto eval = joined("gpt");
  ASSERT_TRUE(eval);
  EXPECT_EQ(eval->measuredCosts(testDataPath(kScript)).lines.at(60).memory_step_bytes, per_step * 10 / 8);
}

// The same script under the PyTorch profiler with profile_memory=True: its `[memory]` events,
// charged to the line running on their thread (the autograd engine's to `loss.backward()`).
TEST(MemoryJoin, AProfilerTraceWithMemoryEventsGivesThePeakItRecorded) {
  auto loaded = ingest::loadProfile(dataProfile("memory/gpt_mem.pt.trace.json.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_EQ(loaded.profile->memory_uses.size(), 2710u);  // the CUDA ones of 2,812 (102 are the CPU's)
  JoinEnvironment env;
  env.mapper.candidates = {testDataPath(kScript)};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  // Traces name frames by callee: the script's call sites place them on its lines.
  env.read_source = [](const std::string& p) -> std::optional<std::string> { return testing::readFile(p); };
  ProfileJoin j(std::move(*loaded.profile), std::move(env), JoinOptions{});
  const auto& story = j.memory().story;
  ASSERT_TRUE(story);
  EXPECT_EQ(story->source, "pytorch-profiler");
  EXPECT_EQ(story->peak_allocated_bytes, 6051878400);  // the largest `Total Allocated` in the trace
  EXPECT_EQ(story->peak_reserved_bytes, 6715080704);   // and `Total Reserved`
  // The snapshot recorded from step 3 of another run: 2,344,599,620 (requested, not rounded, sizes).
  EXPECT_EQ(story->allocated_before_trace_bytes, 2344600576);
  ASSERT_FALSE(story->top.empty());
  EXPECT_EQ(story->top[0].line, 128);  // loss.backward(): the gradients
  auto costs = j.measuredCosts(testDataPath(kScript));
  EXPECT_GT(costs.lines[60].memory_peak_bytes, 800'000'000);  // the logits (798 MiB)
  EXPECT_GT(costs.lines[60].gpu_ns, 0);                       // time and memory on one line
  // Its three ProfilerStep windows (iterations 4..6) hold three training forwards and the
  // evaluation after iteration 4: four times the forward's last line (logits, ln_f's output, its
  // mean and rstd), over three steps.
  EXPECT_EQ(story->steps, 3);
  EXPECT_EQ(story->steady_steps, 3);
  const int64_t forward_end = 8LL * 512 * 50304 * 4 + 8LL * 512 * 768 * 4 + 2LL * 8 * 512 * 4;
  EXPECT_EQ(costs.lines[60].memory_step_bytes, forward_end * 4 / 3);
  EXPECT_EQ(costs.lines[60].memory_step_allocations, 16 / 3);  // four forwards of 4 each
  // The operator that allocated what a line holds at the peak: the logits are aten::linear's; the
  // autograd engine's allocations charged to loss.backward() name their backward ops.
  auto named = [&](int32_t line) {
    std::map<std::string, int64_t> out;
    for (const auto& [op, bytes] : costs.lines[line].memory_peak_ops) out[j.profile().strings[op]] = bytes;
    return out;
  };
  const int64_t logits = 8LL * 512 * 50304 * 4;
  EXPECT_EQ(named(60)["aten::linear"], logits);
  auto backward = named(128);
  EXPECT_EQ(backward["LogSoftmaxBackward0"], logits);
  EXPECT_EQ(backward["NllLossBackward0"], logits);
  EXPECT_EQ(j.profile().strings[costs.lines[128].memory_peak_ops[0].first].find("autograd::engine"), std::string::npos);
}

// The same script under nsys with --cuda-memory-usage=true: the caching allocator's cudaMalloc
// calls, each on the line its CUDA call's backtrace (or autograd op) gives.
TEST(MemoryJoin, NsightSystemsMemoryUsageGivesThePoolsGrowthByLine) {
  auto loaded = ingest::loadProfile(dataProfile("memory/gpt_nsys.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  JoinEnvironment env;
  env.mapper.candidates = {testDataPath(kScript)};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  ProfileJoin j(std::move(*loaded.profile), std::move(env), JoinOptions{});
  const auto& story = j.memory().story;
  ASSERT_TRUE(story);
  EXPECT_EQ(story->source, "nsys");
  EXPECT_FALSE(story->allocated_known);
  // sqlite3: SELECT sum(bytes) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE memKind = 2 AND
  // memoryOperationType = 0 (no cudaFree in this run).
  EXPECT_EQ(story->pool_growth_bytes, 6849562624);
  EXPECT_EQ(story->peak_reserved_bytes, 6849562624);
  auto costs = j.measuredCosts(testDataPath(kScript));
  int64_t on_lines = 0;
  for (const auto& [line, c] : costs.lines) on_lines += c.memory_reserved_bytes;
  EXPECT_GT(on_lines, story->pool_growth_bytes * 9 / 10);        // the rest grew from no line of the script
  EXPECT_EQ(costs.lines[102].memory_reserved_bytes, 501219328);  // GPT(...).to(device): the parameters
}

TEST(MemoryJoin, AnOtherFileGetsNoneOfTheMemory) {
  auto j = joined("gpt_oom_eval");
  ASSERT_TRUE(j);
  auto costs = j->measuredCosts(testDataPath("memory/cnn_mem.py"));
  EXPECT_EQ(costs.oom_line, 0);
  for (const auto& [line, c] : costs.lines) EXPECT_EQ(c.memory_peak_bytes, 0) << line;
}

TEST(MemoryJoin, TheOutOfMemoryLineMovesWithEdits) {
  auto j = joined("gpt_oom_eval");
  ASSERT_TRUE(j);
  auto costs = j->measuredCosts(testDataPath(kScript));
  std::string text = sightline::testing::readFile(testDataPath(kScript));
  source::LineTracker tracker(static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n') + 1));
  tracker.replaceAll(text, "# one\n# two\n" + text);  // two lines inserted at the top
  auto moved = remapCosts(costs, tracker);
  EXPECT_EQ(moved.oom_line, 75);
  EXPECT_EQ(bytesOn(moved, 62), 27601666048);
  EXPECT_EQ(moved.memory, costs.memory);
}

TEST(MemoryJoin, ASnapshotThatIsNotOneIsAClearError) {
  std::string path = ::testing::TempDir() + "/not_a_snapshot.pickle";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fputs("\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x07.", f);  // the integer 7
    std::fclose(f);
  }
  auto loaded = ingest::loadProfile(path);
  EXPECT_FALSE(loaded.profile);
  EXPECT_NE(loaded.error.find("not_a_snapshot.pickle: "), std::string::npos) << loaded.error;
}

// Issue 42, item 6: a thousand lines of one long file name each get their bytes on their
// LineCost, the name interned once; the story tells the first 100 (a path each), not all.
TEST(MemoryJoin, ManyLinesOfOneLongFileNameAreHeldOnceAndToldAsTheFirstHundred) {
  std::string error;
  auto snapshot = ingest::parseMemorySnapshot(testing::sharedFileNameSnapshot(size_t{1} << 20, 1000), error);
  ASSERT_TRUE(snapshot) << error;
  model::Profile profile;
  profile.memory = std::move(*snapshot);
  attribution::Attribution attr;
  size_t placed = 0;
  auto memory = joinMemory(profile, attr, [&](model::StringId f) {
    ++placed;
    return profile.strings[f];
  });
  ASSERT_TRUE(memory.story);
  EXPECT_EQ(memory.story->peak_allocated_bytes, 512 * 1000);
  EXPECT_EQ(memory.story->top.size(), 100u);
  EXPECT_EQ(placed, 100u);
  ASSERT_EQ(attr.files.size(), 1u);
  EXPECT_EQ(profile.strings[attr.files.begin()->first].size(), 4096u);
  const auto& lines = attr.files.begin()->second;
  ASSERT_EQ(lines.size(), 1000u);
  for (const auto& [line, cost] : lines) ASSERT_EQ(cost.memory_peak_bytes, 512) << line;
}

}  // namespace
}  // namespace sightline::join
