// Quick fixes and refactors: exact results, valid Python afterwards, not offered twice.
#include "analysis/features/code_actions.h"

#include <gtest/gtest.h>

#include "tests/support/annotated_source.h"

namespace sightline::features {
namespace {

struct Snapshot {
  explicit Snapshot(const std::string& text) : file(text), index(source::buildSourceIndex(file)) {}
  source::SourceFile file;
  source::SourceIndex index;
};

std::string applyAction(const std::string& text, const CodeAction& action) {
  auto out = applyEdits(text, action.edits);
  EXPECT_TRUE(out.has_value()) << action.title;
  return out.value_or("");
}

std::vector<CodeAction> actionsAt(const std::string& text, source::ByteRange selection) {
  Snapshot s(text);
  auto findings = computeDiagnostics(s.file, s.index, {});
  return computeCodeActions(s.file, s.index, selection, findings, {});
}

const CodeAction* byTitle(const std::vector<CodeAction>& actions, const std::string& prefix) {
  for (const auto& a : actions)
    if (a.title.rfind(prefix, 0) == 0) return &a;
  return nullptr;
}

void expectValidPython(const std::string& text) {
  source::SourceFile f(text);
  EXPECT_FALSE(f.hasSyntaxErrors()) << text;
}

// Every quick fix of every finding: valid Python, and that finding is gone afterwards.
void checkAllQuickFixes(const std::string& text) {
  Snapshot s(text);
  auto findings = computeDiagnostics(s.file, s.index, {});
  ASSERT_FALSE(findings.empty());
  for (const auto& f : findings) {
    for (const auto& fix : f.fixes) {
      auto fixed = applyEdits(text, fix.edits);
      ASSERT_TRUE(fixed) << fix.title;
      expectValidPython(*fixed);
      Snapshot after(*fixed);
      size_t before_count = 0, after_count = 0;
      for (const auto& g : findings) before_count += g.code == f.code;
      for (const auto& g : computeDiagnostics(after.file, after.index, {})) after_count += g.code == f.code;
      EXPECT_EQ(after_count + 1, before_count) << fix.title << " did not remove " << f.code << ":\n" << *fixed;
    }
  }
}

TEST(QuickFixes, EachFixRemovesItsFindingAndKeepsPythonValid) {
  checkAllQuickFixes(R"py(import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds, batch_size=8)
opt.zero_grad(set_to_none=False)
w = torch.zeros(3, 4).to(device)
for x, y in loader:
    x = x.to(device)
    y = y.cuda()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    running += loss.item()
)py");
}

TEST(QuickFixes, ExactEdits) {
  std::string text =
      "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nfor x in loader:\n    x = x.cuda()\n";
  Snapshot s(text);
  auto findings = computeDiagnostics(s.file, s.index, {});
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].code, "dataloader-num-workers");
  EXPECT_EQ(*applyEdits(text, findings[0].fixes[0].edits),
            "from torch.utils.data import DataLoader\nimport os\nloader = DataLoader(ds, num_workers=min(8, "
            "os.cpu_count() or 1))\n"
            "for x in loader:\n    x = x.cuda()\n");
  EXPECT_EQ(*applyEdits(text, findings[1].fixes[0].edits),
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\nfor x in loader:\n    "
            "x = x.cuda()\n");
  EXPECT_EQ(*applyEdits(text, findings[2].fixes[0].edits),
            "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nfor x in loader:\n    x = "
            "x.cuda(non_blocking=True)\n");
}

TEST(QuickFixes, AccumulateOnTheGpu) {
  std::string text = "for x in loader:\n    loss = model(x)\n    loss.backward()\n    total += loss.item()\n";
  auto actions =
      actionsAt(text, {static_cast<uint32_t>(text.find("loss.item")), static_cast<uint32_t>(text.find("loss.item"))});
  const CodeAction* a = byTitle(actions, "Accumulate on the GPU");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->kind, "quickfix");
  EXPECT_EQ(applyAction(text, *a),
            "for x in loader:\n    loss = model(x)\n    loss.backward()\n    total += loss.detach()\n");
}

TEST(QuickFixes, CpuTensorThenCopyCreatesOnTheDevice) {
  std::string text = "import torch\na = torch.zeros(3, 4).cuda()\nb = torch.arange(5).to(dev, non_blocking=True)\n";
  auto actions = actionsAt(text, {0, static_cast<uint32_t>(text.size())});
  ASSERT_NE(byTitle(actions, "Create it on the device (device=\"cuda\")"), nullptr);
  EXPECT_EQ(applyAction(text, *byTitle(actions, "Create it on the device (device=\"cuda\")")),
            "import torch\na = torch.zeros(3, 4, device=\"cuda\")\nb = torch.arange(5).to(dev, non_blocking=True)\n");
  EXPECT_EQ(applyAction(text, *byTitle(actions, "Create it on the device (device=dev)")),
            "import torch\na = torch.zeros(3, 4).cuda()\nb = torch.arange(5, device=dev)\n");
}

TEST(WrapInNvtxRange, StatementAtTheCursor) {
  auto src = testing::parseAnnotatedSource("import torch\ndef step(x):\n    y = mo$0del(x)\n    return y\n");
  Snapshot s(src.text);
  auto cursor = static_cast<uint32_t>(src.cursor);
  auto action = wrapInNvtxRange(s.file, s.index, {cursor, cursor});
  ASSERT_TRUE(action);
  std::string out = applyAction(src.text, *action);
  EXPECT_EQ(
      out,
      "import torch\ndef step(x):\n    with torch.cuda.nvtx.range(\"model\"):\n        y = model(x)\n    return y\n");
  expectValidPython(out);
  // Not offered again on the wrapped statement.
  Snapshot after(out);
  auto again = static_cast<uint32_t>(out.find("y = model"));
  EXPECT_FALSE(wrapInNvtxRange(after.file, after.index, {again, again}));
}

TEST(WrapInNvtxRange, SelectionOfSeveralStatementsAddsTheImport) {
  std::string text = "import numpy as np\n\nfor i in range(3):\n    a = f(i)\n    '''doc\nstring'''\n    b = g(a)\n";
  Snapshot s(text);
  auto begin = static_cast<uint32_t>(text.find("a = f"));
  auto end = static_cast<uint32_t>(text.find("b = g") + 3);
  auto action = wrapInNvtxRange(s.file, s.index, {begin, end});
  ASSERT_TRUE(action);
  std::string out = applyAction(text, *action);
  EXPECT_EQ(out,
            "import numpy as np\nimport torch\n\nfor i in range(3):\n    with torch.cuda.nvtx.range(\"f\"):\n"
            "        a = f(i)\n        '''doc\nstring'''\n        b = g(a)\n");
  expectValidPython(out);
}

TEST(WrapInNvtxRange, NotOnDefinitionsOrOneLineBodies) {
  std::string text = "def f():\n    pass\nfor x in y: g(x)\n";
  Snapshot s(text);
  EXPECT_FALSE(wrapInNvtxRange(s.file, s.index, {1, 1}));
  auto g = static_cast<uint32_t>(text.find("g(x)"));
  EXPECT_FALSE(wrapInNvtxRange(s.file, s.index, {g, g}));
}

TEST(AnnotateTrainingStep, WrapsForwardLossBackwardAndStep) {
  std::string text = R"py(import torch
import torch.nn.functional as F
for x, y in loader:
    opt.zero_grad()
    with torch.autocast("cuda"):
        out = model(x)
        loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
)py";
  Snapshot s(text);
  auto action = annotateTrainingStep(s.file, s.index, static_cast<uint32_t>(text.find("opt.zero")));
  ASSERT_TRUE(action);
  std::string out = applyAction(text, *action);
  EXPECT_EQ(out, R"py(import torch
import torch.nn.functional as F
for x, y in loader:
    opt.zero_grad()
    with torch.autocast("cuda"):
        with torch.cuda.nvtx.range("forward"):
            out = model(x)
        with torch.cuda.nvtx.range("loss"):
            loss = F.cross_entropy(out, y)
    with torch.cuda.nvtx.range("backward"):
        loss.backward()
    with torch.cuda.nvtx.range("optimizer_step"):
        opt.step()
)py");
  expectValidPython(out);
  Snapshot after(out);
  EXPECT_FALSE(annotateTrainingStep(after.file, after.index, static_cast<uint32_t>(out.find("opt.zero"))));
}

TEST(AnnotateTrainingStep, FollowsTheStepIntoAFunction) {
  std::string text = R"py(def train_step(model, opt, x, y):
    out = model(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    return loss
for x, y in loader:
    loss = train_step(model, opt, x, y)
)py";
  Snapshot s(text);
  auto action =
      annotateTrainingStep(s.file, s.index, static_cast<uint32_t>(text.find("train_step(model, opt, x, y)\n")));
  ASSERT_TRUE(action);
  std::string out = applyAction(text, *action);
  EXPECT_NE(out.find("    with torch.cuda.nvtx.range(\"forward\"):\n        out = model(x)\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("    with torch.cuda.nvtx.range(\"optimizer_step\"):\n        opt.step()\n"), std::string::npos);
  EXPECT_EQ(out.rfind("import torch\n", 0), 0u) << "torch import added at the top";
  expectValidPython(out);
}

TEST(LimitProfilingWindow, InsertsTheTimedThenProfiledWindow) {
  std::string text = "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n";
  Snapshot s(text);
  auto action = limitProfilingWindow(s.file, s.index, static_cast<uint32_t>(text.find("loss =")), 25, 29);
  ASSERT_TRUE(action);
  EXPECT_EQ(action->title,
            "Time steps 5..24, then profile steps 25..29 (CUDA events; nsys --capture-range=cudaProfilerApi)");
  std::string out = applyAction(text, *action);
  expectValidPython(out);
  // A function before the loop, one call at the top of its body (tests/e2e/capture_test.cpp runs it).
  EXPECT_EQ(
      out.rfind("import torch\n# Sightline's window (docs/capture.md): iterations before 5 warm up, 5..24 are\n", 0),
      0u)
      << out;
  EXPECT_NE(out.find("\ndef profile_window(step, marks):\n    import json, os, pathlib, socket, sys, time\n"
                     "    if not 5 <= step <= 30:\n        return\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("        event = torch.cuda.Event(enable_timing=True)\n        event.record()\n"),
            std::string::npos);
  EXPECT_NE(out.find("    if step == 25:  # the timed steps end here, the profiled ones start once the range is open\n"
                     "        torch.cuda.profiler.start()\n        mark()\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("    if step == 30:\n        torch.cuda.synchronize()\n        torch.cuda.profiler.stop()\n"),
            std::string::npos);
  EXPECT_NE(out.find("\"warmup\": 5, \"timed\": 20, \"profiled\": 5,"), std::string::npos) << out;
  EXPECT_NE(out.find("profile_step, profile_marks = 0, []  # iterations seen, their marks\nfor x in loader:\n"
                     "    profile_window(profile_step, profile_marks)\n    profile_step += 1\n    loss = model(x)\n"),
            std::string::npos)
      << out;
  Snapshot after(out);  // offered once: the file opens a capture range now
  EXPECT_FALSE(limitProfilingWindow(after.file, after.index, static_cast<uint32_t>(out.find("loss =")), 25, 29));
}

TEST(LimitProfilingWindow, LeavesOneWarmUpStepAndTimesWhatFits) {
  std::string text = "import torch as th\nwhile True:\n    loss = model(x)\n    loss.backward()\n";
  Snapshot s(text);
  uint32_t at = static_cast<uint32_t>(text.find("loss ="));
  auto short_window = limitProfilingWindow(s.file, s.index, at, 3, 5);
  ASSERT_TRUE(short_window);
  EXPECT_EQ(short_window->title,
            "Time steps 1..2, then profile steps 3..5 (CUDA events; nsys --capture-range=cudaProfilerApi)");
  std::string out = applyAction(text, *short_window);
  expectValidPython(out);
  EXPECT_NE(out.find("    if not 1 <= step <= 6:\n"), std::string::npos) << out;
  EXPECT_NE(out.find("th.cuda.profiler.start()"), std::string::npos) << "torch's own name in the file";
  EXPECT_NE(out.find("\"warmup\": 1, \"timed\": 2, \"profiled\": 3"), std::string::npos) << out;
  auto from_the_start = limitProfilingWindow(s.file, s.index, at, 0, 1);
  ASSERT_TRUE(from_the_start);
  EXPECT_EQ(from_the_start->title, "Profile steps 0..1 (CUDA events; nsys --capture-range=cudaProfilerApi)");
  expectValidPython(applyAction(text, *from_the_start));
  auto fewer_timed = limitProfilingWindow(s.file, s.index, at, 25, 29, 4);
  ASSERT_TRUE(fewer_timed);
  EXPECT_EQ(fewer_timed->title.rfind("Time steps 21..24, then profile steps 25..29", 0), 0u) << fewer_timed->title;
}

TEST(RecordMemoryHistory, RecordsAWindowAndDumpsOnOutOfMemory) {
  std::string text = "import torch\nfor x in loader:\n    loss = model(x)\n    loss.backward()\n";
  Snapshot s(text);
  auto action = recordMemoryHistory(s.file, s.index, static_cast<uint32_t>(text.find("loss =")), 3, 5);
  ASSERT_TRUE(action);
  EXPECT_EQ(action->title, "Record GPU memory for steps 3..5 (a snapshot at the end, and on out-of-memory)");
  std::string out = applyAction(text, *action);
  EXPECT_EQ(out,
            "import torch\n"
            "def dump_memory_on_oom(device, alloc, device_alloc, device_free):\n"
            "    torch.cuda.memory._dump_snapshot(\"oom_snapshot.pickle\")\n"
            "torch._C._cuda_attach_out_of_memory_observer(dump_memory_on_oom)\n"
            "memory_step = 0  # iterations seen, for the memory history window\n"
            "for x in loader:\n"
            "    if memory_step == 3:\n"
            "        torch.cuda.memory._record_memory_history(max_entries=100000, stacks=\"python\")\n"
            "    elif memory_step == 6:\n"
            "        torch.cuda.memory._dump_snapshot(\"memory_snapshot.pickle\")\n"
            "        torch.cuda.memory._record_memory_history(enabled=None)\n"
            "    memory_step += 1\n"
            "    loss = model(x)\n    loss.backward()\n");
  expectValidPython(out);
  Snapshot after(out);  // offered once: the file records memory now
  EXPECT_FALSE(recordMemoryHistory(after.file, after.index, static_cast<uint32_t>(out.find("loss =")), 3, 5));
  // Not outside a training loop.
  Snapshot plain("for i in range(3):\n    print(i)\n");
  EXPECT_FALSE(recordMemoryHistory(plain.file, plain.index, 20, 1, 2));
}

TEST(LimitProfilingWindow, OnlyInTrainingLoops) {
  std::string text = "for i in range(3):\n    print(i)\n";
  Snapshot s(text);
  EXPECT_FALSE(limitProfilingWindow(s.file, s.index, 20, 1, 2));
}

TEST(CodeActions, OffersQuickFixesOnlyWhereAsked) {
  std::string text = "opt.zero_grad(set_to_none=False)\nx = 1\n";
  auto here = actionsAt(text, {2, 2});
  ASSERT_NE(byTitle(here, "Remove set_to_none=False"), nullptr);
  EXPECT_TRUE(byTitle(here, "Remove set_to_none=False")->preferred);
  auto elsewhere =
      actionsAt(text, {static_cast<uint32_t>(text.find("x = 1")), static_cast<uint32_t>(text.find("x = 1"))});
  EXPECT_EQ(byTitle(elsewhere, "Remove set_to_none=False"), nullptr);
}

}  // namespace
}  // namespace sightline::features
