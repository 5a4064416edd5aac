// Memory on the lines as the features give it: hints with time, memory or both, the hover of a
// line holding memory and of the out-of-memory line, and the out-of-memory error with its
// related lines. Costs from the real snapshot of tests/data/memory (joined as the server does).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "analysis/features/hover.h"
#include "analysis/features/inlay_hints.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "tests/support/test_paths.h"
#include "tests/support/verdict_of.h"

namespace sightline::features {
namespace {

using sightline::testing::verdictOf;

using sightline::testing::testDataPath;

struct Joined {
  std::string path = testDataPath("memory/gpt_mem.py");
  source::SourceFile file{testing::readFile(path)};
  source::SourceIndex index = source::buildSourceIndex(file);
  std::unique_ptr<join::ProfileJoin> join;
  FileCosts costs;

  explicit Joined(const std::string& capture) {
    std::string name = capture.find('.') == std::string::npos ? capture + ".pickle.xz" : capture;
    auto loaded = ingest::loadProfile(testing::dataProfile("memory/" + name));
    if (!loaded.profile) return;
    join::JoinEnvironment env;
    env.mapper.candidates = {path};
    env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
    join = std::make_unique<join::ProfileJoin>(std::move(*loaded.profile), std::move(env), join::JoinOptions{});
    costs = join->measuredCosts(path);
  }
};

const LineHint* hintOn(const std::vector<LineHint>& hints, uint32_t line0) {
  auto it = std::find_if(hints.begin(), hints.end(), [&](const LineHint& h) { return h.line == line0; });
  return it == hints.end() ? nullptr : &*it;
}

// The out-of-memory error on `file` (a copy of the script, maybe edited) with `costs`; an empty
// Finding when there is none.
Finding oomOn(const Joined& j, const source::SourceFile& file, const FileCosts& costs) {
  auto findings = confirmWithProfile({}, file, source::buildSourceIndex(file), costs, j.join->profile(),
                                     verdictOf(costs), RuleConfig{});
  auto it = std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "out-of-memory"; });
  return it == findings.end() ? Finding{} : *it;
}

TEST(MemoryFeatures, HintsShowTheBytesEachLineHoldsAtThePeak) {
  Joined j("gpt_oom_eval");
  ASSERT_TRUE(j.join);
  auto hints = computeInlayHints(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 0, 200);
  const LineHint* logits = hintOn(hints, 59);  // logits = self.head(self.ln_f(x))
  ASSERT_TRUE(logits);
  EXPECT_FALSE(logits->show_time);  // a snapshot has no time
  EXPECT_EQ(logits->memory_bytes, 27601666048);
  EXPECT_NEAR(logits->memory_share, 27601666048.0 / 68221917252.0, 1e-9);
  // Under the minimum share (0.5% of the peak): no hint. Line 65 holds 1 MiB.
  EXPECT_FALSE(hintOn(hints, 64));
  // Time only: a snapshot shows nothing.
  HintOptions time;
  time.figures = HintFigures::Time;
  EXPECT_TRUE(computeInlayHints(j.file, j.index, j.costs, j.join->profile(), time, 0, 200).empty());
}

TEST(MemoryFeatures, BothFiguresOnALineWithTimeAndMemory) {
  Joined j("gpt_oom_eval");
  ASSERT_TRUE(j.join);
  j.costs.total_gpu_ns = 10'000'000;
  j.costs.lines[60].gpu_ns = j.costs.lines[60].forward_ns = 4'000'000;
  auto hints = computeInlayHints(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 59, 59);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_TRUE(hints[0].show_time);
  EXPECT_EQ(hints[0].memory_bytes, 27601666048);
  HintOptions memory;
  memory.figures = HintFigures::Memory;
  hints = computeInlayHints(j.file, j.index, j.costs, j.join->profile(), memory, 59, 59);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_FALSE(hints[0].show_time);
  HintOptions time;
  time.figures = HintFigures::Time;
  hints = computeInlayHints(j.file, j.index, j.costs, j.join->profile(), time, 59, 59);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].memory_bytes, 0);
}

TEST(MemoryFeatures, HoverOfTheOutOfMemoryLineAndOfTheTopHolder) {
  Joined j("gpt_oom_eval");
  ASSERT_TRUE(j.join);
  auto oom = computeHover(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 72);
  ASSERT_TRUE(oom);
  EXPECT_TRUE(oom->oom_here);
  ASSERT_TRUE(oom->memory);
  EXPECT_EQ(oom->memory_bytes, 1048576);
  auto top = computeHover(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 59);
  ASSERT_TRUE(top);
  EXPECT_FALSE(top->oom_here);
  EXPECT_EQ(top->memory_rank, 1);
  EXPECT_EQ(top->memory_bytes, 27601666048);
  EXPECT_FALSE(computeHover(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 0));  // nothing there
}

TEST(MemoryFeatures, OutOfMemoryIsAnErrorOnItsLineWithTheLinesThatHoldThePeak) {
  Joined j("gpt_oom_eval");
  ASSERT_TRUE(j.join);
  auto findings = confirmWithProfile({}, j.file, j.index, j.costs, j.join->profile(), verdictOf(j.costs), RuleConfig{});
  auto it = std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "out-of-memory"; });
  ASSERT_NE(it, findings.end());
  EXPECT_EQ(it->severity, Severity::Error);
  EXPECT_EQ(j.file.lines().pointAt(it->range.begin).line, 72u);
  EXPECT_EQ(it->message.rfind(
                "out of memory here: asked 24.56 GiB with 14.16 GiB free (<module> line 159 → main line 132 → here); "
                "at the peak (63.54 GiB allocated) line 60 holds 25.71 GiB; ",
                0),
            0u)
      << it->message;
  ASSERT_GE(it->related.size(), 3u);
  EXPECT_EQ(it->related[0].line, 60);
  EXPECT_EQ(it->related[0].path, j.path);
  EXPECT_EQ(it->related[0].message, "holds 25.71 GiB at the peak");
  EXPECT_EQ(it->related.back().line, 132);  // main's call of evaluate
  // The advice that fits: evaluate() runs with autograd on; the logits hold 40% of the peak.
  EXPECT_NE(it->message.find("; evaluate() runs with autograd on"), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("; the logits on line 60 hold 25.71 GiB: compute the loss over chunks"),
            std::string::npos);
  ASSERT_EQ(it->fixes.size(), 1u);
  EXPECT_EQ(it->fixes[0].title, "Decorate evaluate() with @torch.no_grad()");
  EXPECT_EQ(it->fixes[0].edits[0].new_text, "@torch.no_grad()\n");
  EXPECT_EQ(j.file.lines().pointAt(it->fixes[0].edits[0].range.begin).line, 68u);  // above `def evaluate`
  // A script that already evaluates without autograd gets no such advice (the blank line above
  // the def made the decorator: the lines stay where the snapshot put them).
  std::string text = j.file.text();
  auto def = text.find("\n\ndef evaluate");
  ASSERT_NE(def, std::string::npos);
  text.replace(def + 1, 0, "@torch.no_grad()");
  Finding g = oomOn(j, source::SourceFile(text), j.costs);
  ASSERT_EQ(g.code, "out-of-memory");
  EXPECT_EQ(g.message.find("autograd on"), std::string::npos) << g.message;
  EXPECT_TRUE(g.fixes.empty());
  // Off in the configuration: none.
  RuleConfig off;
  off.rules["out-of-memory"].enabled = false;
  findings = confirmWithProfile({}, j.file, j.index, j.costs, j.join->profile(), verdictOf(j.costs), off);
  EXPECT_TRUE(
      std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "out-of-memory"; }));
}

TEST(MemoryFeatures, NoOutOfMemoryErrorWithoutOne) {
  Joined j("gpt_start");
  ASSERT_TRUE(j.join);
  auto findings = confirmWithProfile({}, j.file, j.index, j.costs, j.join->profile(), verdictOf(j.costs), RuleConfig{});
  EXPECT_TRUE(
      std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "out-of-memory"; }));
  // The weights (made once at the start) and AdamW's state (at the first step) stay alive: no growth.
  EXPECT_TRUE(
      std::none_of(findings.begin(), findings.end(), [](const Finding& f) { return f.code == "memory-growth"; }));
}

// Nsight Systems with --cuda-memory-usage=true has no tensor events: hints give the pool's growth
// by each line's cudaMalloc, beside its time (the report's "reserved" column).
TEST(MemoryFeatures, HintsFromNsightSystemsGiveThePoolsGrowth) {
  Joined j("gpt_nsys.sqlite.xz");
  ASSERT_TRUE(j.join);
  ASSERT_TRUE(j.costs.memory);
  EXPECT_FALSE(j.costs.memory->allocated_known);
  auto hints = computeInlayHints(j.file, j.index, j.costs, j.join->profile(), HintOptions{}, 0, 200);
  const LineHint* loss = hintOn(hints, 124);  // loss = F.cross_entropy(...)
  ASSERT_TRUE(loss);
  EXPECT_TRUE(loss->memory_reserved);
  EXPECT_EQ(loss->memory_bytes, j.costs.lines.at(125).memory_reserved_bytes);
  EXPECT_GT(loss->memory_bytes, 0);
  EXPECT_NEAR(loss->memory_share,
              static_cast<double>(loss->memory_bytes) / static_cast<double>(j.costs.memory->pool_growth_bytes), 1e-12);
  HintOptions time;
  time.figures = HintFigures::Time;
  for (const auto& h : computeInlayHints(j.file, j.index, j.costs, j.join->profile(), time, 0, 200))
    EXPECT_EQ(h.memory_bytes, 0);
}

// A larger model runs out in the training step's forward: the blocks' activations hold most of
// the peak, and checkpointing them is the advice (with the call as it would read); never where
// the script checkpoints already, nor for the evaluation that ran out (no backward to feed).
TEST(MemoryFeatures, ActivationsOfATrainingForwardGetCheckpointingAdvice) {
  Joined j("gpt_oom_fwd");
  ASSERT_TRUE(j.join);
  auto oomOf = [&](const source::SourceFile& file) { return oomOn(j, file, j.costs).message; };
  std::string message = oomOf(j.file);
  EXPECT_NE(message.find("; the activations Block.forward() keeps for backward hold 72.58 GiB at the peak: recompute "
                         "them in backward instead, calling it through torch.utils.checkpoint.checkpoint(..., "
                         "use_reentrant=False) on line 59 (`x = torch.utils.checkpoint.checkpoint(block, x, "
                         "use_reentrant=False)`)"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("no_grad"), std::string::npos) << message;
  std::string text = j.file.text();
  auto call = text.find("x = block(x)");
  ASSERT_NE(call, std::string::npos);
  text.replace(call, 12, "x = checkpoint(block, x)");
  message = oomOf(source::SourceFile(text));
  ASSERT_FALSE(message.empty());
  EXPECT_EQ(message.find("checkpoint"), std::string::npos) << message;

  Joined eval("gpt_oom_eval");
  ASSERT_TRUE(eval.join);
  auto findings = confirmWithProfile({}, eval.file, eval.index, eval.costs, eval.join->profile(), verdictOf(eval.costs),
                                     RuleConfig{});
  for (const auto& f : findings) EXPECT_EQ(f.message.find("checkpoint"), std::string::npos) << f.message;
}

// zero_grad(set_to_none=False) keeps the gradients allocated through the next forward: said
// (with a quick fix) where the forward's peak holds backward-made bytes, 5% of it or more.
TEST(MemoryFeatures, GradientsZeroedInPlaceGetSetToNoneAdvice) {
  Joined j("gpt_oom_eval");
  ASSERT_TRUE(j.join);
  std::string text = j.file.text();
  auto at = text.find("zero_grad(set_to_none=True)");
  ASSERT_NE(at, std::string::npos);
  text.replace(at + 22, 4, "False");
  source::SourceFile keeps(text);
  auto oomOf = [&](const FileCosts& costs) { return oomOn(j, keeps, costs); };
  // The run itself set the gradients to None: what backward made and the evaluation's peak still
  // holds is 32 MiB, under 5% of it. No advice.
  EXPECT_EQ(oomOf(j.costs).message.find("set_to_none"), std::string::npos);
  // Had the gradients been kept (6.35 GiB on the backward line at the peak): the advice and its fix.
  FileCosts kept = j.costs;
  kept.lines[128].memory_peak_by_phase[1] = 6821191725;
  Finding f = oomOf(kept);
  EXPECT_NE(f.message.find("; 6.35 GiB made by backward passes is still allocated in this forward: "
                           "zero_grad(set_to_none=False) on line 130 zeroes the gradients in place; set_to_none=True"),
            std::string::npos)
      << f.message;
  auto fix = std::find_if(f.fixes.begin(), f.fixes.end(),
                          [](const Fix& x) { return x.title.find("set_to_none=True") != std::string::npos; });
  ASSERT_NE(fix, f.fixes.end());
  ASSERT_EQ(fix->edits.size(), 1u);
  EXPECT_EQ(text.substr(fix->edits[0].range.begin, fix->edits[0].range.end - fix->edits[0].range.begin), "False");
  EXPECT_EQ(fix->edits[0].new_text, "True");
}

// gpt_mem.py --keep-logits appends every step's logits to a list: the logits line keeps 10.
TEST(MemoryFeatures, MemoryKeptStepAfterStepIsFoundOnTheLineThatMadeIt) {
  Joined j("gpt_keep");
  ASSERT_TRUE(j.join);
  auto findings = confirmWithProfile({}, j.file, j.index, j.costs, j.join->profile(), verdictOf(j.costs), RuleConfig{});
  std::vector<const Finding*> growth;
  for (const auto& f : findings)
    if (f.code == "memory-growth") growth.push_back(&f);
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_EQ(j.file.lines().pointAt(growth[0]->range.begin).line, 59u);  // logits = self.head(self.ln_f(x))
  EXPECT_EQ(growth[0]->message.rfind("memory grows step after step: 10 allocations made here in 10 steps (786.0 MiB "
                                     "per step, 7.68 GiB in all)",
                                     0),
            0u)
      << growth[0]->message;
}

}  // namespace
}  // namespace sightline::features
