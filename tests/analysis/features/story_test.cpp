// The story as typed rows: causes, the verdict's rows, compiling, memory and the job, each a
// line of chunks (text, code, figures, places) whose figures are formatted once (units.h).
#include "analysis/features/story.h"

#include <gtest/gtest.h>

#include "analysis/features/story_report.h"
#include "analysis/features/story_verdict.h"

namespace sightline::features {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count(const StoryLine& line, StoryChunk::Kind kind) {
  size_t n = 0;
  for (const auto& c : line) n += c.kind == kind;
  return n;
}

// A cause as a story line: typed chunks (text, a figure, a place) that every surface renders,
// the figures formatted once (units.h), the places a surface may link.
TEST(Story, ACauseIsTextFiguresAndPlaces) {
  StepVerdict v;
  v.steady = 10;
  v.unprofiled.wall_ns = 11e6;  // measured: the cause was fitted to it
  VerdictCause c{Bound::Launch, 3.19e6, {{"/w/gpt.py", 32, 4'500'000, 10}}, 32.9e6};
  auto line = causeStory(v, c, true, 3);
  EXPECT_EQ(plainText(line), "host launch overhead 3.19 ms/step, 32.9 as captured (gpt.py:32 0.45)");
  EXPECT_EQ(count(line, StoryChunk::Kind::Milliseconds), 3u);
  EXPECT_EQ(count(line, StoryChunk::Kind::Place), 1u);
  v.unprofiled.wall_ns.reset();
  v.as_captured = true;
  c.ns = c.captured_ns;
  EXPECT_EQ(plainText(causeStory(v, c, true, 0)), "as captured: host launch overhead 32.9 ms/step");
}

// Appending merges text and keeps figures apart, so a renderer sees each figure once.
TEST(Story, TextMergesFiguresStayApart) {
  StoryLine line;
  line << "peak " << StoryChunk::bytes(3221225472) << " allocated"
       << ", " << StoryChunk::share(0.118);
  ASSERT_EQ(line.size(), 4u);
  EXPECT_EQ(line[2].text, " allocated, ");
  EXPECT_EQ(plainText(line), "peak 3.00 GiB allocated, 12%");
  StoryLine delta;
  delta << StoryChunk::delta(3.2e6) << " " << StoryChunk::signedBytes(1 << 20);
  EXPECT_EQ(plainText(delta), "▲ +3.20 ms +1.0 MiB");
}

// The verdict's rows: labels, roles, a qualifier for changes told from the capture.
TEST(VerdictStory, RowsInTheHeadersOrder) {
  StepVerdict v;
  v.steady = 6, v.median_steps = 5, v.wall_ns = 13.3e6, v.wall_min_ns = 12.3e6, v.wall_max_ns = 15.1e6;
  v.busy_share = 0.37, v.busy_ns = 4.92e6, v.idle_ns = 8.38e6;
  v.as_captured = true;
  v.causes = {{Bound::Sync, 3.34e6, {{"/w/train.py", 109, 20'040'000, 6}}, 3.34e6}};
  v.changes = {{Change::DropSync, 3.34e6, join::PlacedLine{"/w/train.py", 109, 20'040'000, 6}}};
  v.all_counted = true;
  Story story = verdictStory(v);
  ASSERT_GE(story.size(), 5u);
  EXPECT_EQ(story[0].label, "Step");
  EXPECT_EQ(plainText(story[0].line),
            "13.3 ms median as captured over 5 of the 6 steady steps (12.3–15.1 ms; the last, cut short where the "
            "loop ends, left out), GPU busy 37%, idle 8.38 ms/step");
  EXPECT_EQ(story[1].label, "Unprofiled");
  EXPECT_EQ(story[1].title, "Without the profiler");
  const StoryRow* cause = nullptr;
  const StoryRow* change = nullptr;
  for (const auto& r : story) {
    if (r.role == RowRole::Cause && !cause) cause = &r;
    if (r.role == RowRole::Change && !change) change = &r;
  }
  ASSERT_TRUE(cause && change);
  EXPECT_EQ(plainText(cause->line), "as captured: host-device syncs 3.34 ms/step (train.py:109 3.34)");
  EXPECT_EQ(change->label, "Try");
  EXPECT_EQ(change->qualifier, "as captured");
  EXPECT_EQ(story.back().role, RowRole::Note);
}

TEST(CompileSummaryStory, CompilesBreaksRecompilesAndTheLimit) {
  join::CompiledFunctionSummary f;
  f.function = {"/w/model.py", 20, "forward"};
  f.compiles = 10, f.graphs = 2, f.recompiles = 8, f.seconds = 13.94, f.recompile_limit = 8;
  f.breaks = {{22, "Unsupported Tensor.item() call", "Keep it a tensor.", 1}};
  f.recompile_reasons = {{"tensor 'h' size mismatch at index 0", false, 5}, {"___stack0 == …", true, 3}};
  auto line = compileSummaryStory({f});
  EXPECT_EQ(plainText(line),
            "forward (model.py:20): 10 compilations in 13.9 s, 2 graphs, graph break at line 22 (Unsupported "
            "Tensor.item() call; Dynamo's hint: Keep it a tensor.), 8 recompiles (5× tensor 'h' size mismatch at "
            "index 0, 3× ___stack0 == …), recompile limit (8) hit: runs uncompiled since");
  // The function's name and each failed guard are code: Markdown shows them as code spans.
  EXPECT_EQ(count(line, StoryChunk::Kind::Code), 3u);
}

TEST(CompiledCodeStory, SaysWhereLinesCameFromOrWhatToKeep) {
  join::StepStory::Generated g;
  g.stacks = 100, g.mapped = 100, g.read_from = {"/p/.cache/inductor"};
  EXPECT_EQ(plainText(compiledCodeStory(g)),
            " (model lines from the generated code in /p/.cache/inductor; each kernel's innermost line only: run with "
            "INDUCTOR_PROVENANCE=1 for the lines above it)");
  g.provenance = true, g.mapped = 75, g.missing_modules = 1;
  EXPECT_EQ(plainText(compiledCodeStory(g)),
            " (model lines from the generated code in /p/.cache/inductor, with whole stacks from Inductor's line map); "
            "1 of the run's generated modules were not found there (their work stays on the compiled function)");
  // Not found: what to name, and (a cache under /tmp) what to set for the next run.
  join::StepStory::Generated missing;
  missing.stacks = 10, missing.run_from = {"/tmp/torchinductor_me"};
  std::string note = plainText(compiledCodeStory(missing));
  EXPECT_TRUE(has(note, "the run kept it in /tmp/torchinductor_me; name that folder or a copy with --compiled-code"))
      << note;
  EXPECT_TRUE(has(note, "set TORCHINDUCTOR_CACHE_DIR"));
  // A cache kept in the project already: no advice to set what was set.
  missing.run_from = {"/home/me/proj/inductor_cache"};
  EXPECT_FALSE(has(plainText(compiledCodeStory(missing)), "TORCHINDUCTOR_CACHE_DIR"));
  join::StepStory::Generated none;
  EXPECT_TRUE(has(plainText(compiledCodeStory(none)), "do not reach torch.compile's generated code"));
  // A PyTorch profiler trace: its traced calls into the generated code, placed or not.
  join::StepStory::Generated traced;
  traced.traced_calls = 40, traced.run_from = {"inductor_cache"};
  EXPECT_TRUE(has(plainText(compiledCodeStory(traced)), "the run kept it in inductor_cache; name that folder"));
  traced.mapped_calls = 30, traced.read_from = {"/w/inductor_cache"};
  std::string placed = plainText(compiledCodeStory(traced));
  EXPECT_TRUE(has(placed,
                  "model lines from the generated code in /w/inductor_cache, each launch of a traced call placed by "
                  "its kernel's name and order"))
      << placed;
  EXPECT_FALSE(has(placed, "not found there")) << placed;
  traced.missing_modules = 2;
  placed = plainText(compiledCodeStory(traced));
  EXPECT_TRUE(has(placed, "; 2 of the run's generated modules were not found there")) << placed;
}

// GPU memory's rows: the peak, what holds it (places), an out-of-memory error and its chain.
TEST(MemoryStory, PeakHoldersAndTheOutOfMemoryChain) {
  join::MemoryStory m;
  m.peak_allocated_bytes = 3221225472, m.peak_reserved_bytes = 4294967296;
  m.top = {{"/w/gpt_mem.py", 60, 1 << 30, ""}};
  join::MemoryStory::Oom oom;
  oom.where = {"/w/gpt_mem.py", 73, 0, "evaluate"};
  oom.requested_bytes = 26371389440, oom.free_bytes = 1 << 20;
  oom.chain = {{"/w/gpt_mem.py", 159, 0, "<module>"}, {"/w/gpt_mem.py", 73, 0, "evaluate"}};
  m.oom = oom;
  Story story = memoryStory(m);
  ASSERT_EQ(story.size(), 4u);
  EXPECT_EQ(plainText(story[0].line), "peak 3.00 GiB allocated, 4.00 GiB reserved (1.00 GiB cached, not allocated)");
  EXPECT_EQ(plainText(story[1].line), "held at the peak by gpt_mem.py:60 1.00 GiB");
  EXPECT_EQ(story[2].label, "Out of memory");
  EXPECT_EQ(plainText(story[2].line), "gpt_mem.py:73 (evaluate) asked 24.56 GiB with 1.0 MiB free");
  EXPECT_EQ(plainText(story[3].line), "called from gpt_mem.py:159 (<module>) → gpt_mem.py:73 (evaluate)");
}

// A report lists its machine's GPUs; where its ranks ran on fewer, the line says on how many
// (a rank's report of a 2-GPU DDP run once read "2 x NVIDIA H200" as if it used both).
TEST(Story, TheGpusLineSaysHowManyTheProfilesWorkRanOn) {
  attribution::Attribution attr;
  attr.ranks.resize(1);
  attr.ranks[0].host = "node0", attr.ranks[0].devices = {1};
  Story one = machineStory({"NVIDIA H200", "NVIDIA H200"}, attr);
  const StoryRow* gpus = findRow(one, "GPUs");
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(plainText(gpus->line), "2 × NVIDIA H200 (the profile's work ran on 1)");
  attr.ranks.resize(2);
  attr.ranks[1].host = "node0", attr.ranks[1].devices = {0};
  Story both = machineStory({"NVIDIA H200", "NVIDIA H200"}, attr);
  ASSERT_NE(findRow(both, "GPUs"), nullptr);
  EXPECT_EQ(plainText(findRow(both, "GPUs")->line), "2 × NVIDIA H200");
}

}  // namespace
}  // namespace sightline::features
