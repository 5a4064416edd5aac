// SourceIndex: imports, definitions, loops (training or not), calls, assignments, withs, and
// what names hold.
#include "analysis/source/source_index.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "bench/scaled_script.h"
#include "tests/support/test_paths.h"

namespace sightline::source {
namespace {

SourceIndex indexOf(const std::string& text) {
  SourceFile f(text);
  return buildSourceIndex(f);
}

const CallInfo* findCall(const SourceIndex& idx, const std::string& callee) {
  for (const auto& c : idx.calls)
    if (c.callee_text == callee) return &c;
  return nullptr;
}

TEST(SourceIndex, ResolvesImportAliases) {
  auto idx = indexOf(
      "import torch.nn.functional as F\n"
      "import torch.nn\n"
      "from torch.utils.data import DataLoader as DL, Dataset\n"
      "import torch.cuda.nvtx as nvtx\n");
  EXPECT_EQ(idx.resolve("F.relu"), "torch.nn.functional.relu");
  EXPECT_EQ(idx.resolve("DL"), "torch.utils.data.DataLoader");
  EXPECT_EQ(idx.resolve("Dataset"), "torch.utils.data.Dataset");
  EXPECT_EQ(idx.resolve("nvtx.range_push"), "torch.cuda.nvtx.range_push");
  EXPECT_EQ(idx.resolve("torch.nn.Linear"), "torch.nn.Linear");
  EXPECT_EQ(idx.resolve("numpy.zeros"), "numpy.zeros");
  EXPECT_EQ(idx.localNameFor("torch"), "torch");
  EXPECT_EQ(idx.localNameFor("torch.utils.data.DataLoader"), "DL");
}

TEST(SourceIndex, FunctionsAndClassesHaveQualifiedNamesAndLines) {
  auto idx = indexOf(
      "import torch.nn as nn\n"
      "class Net(nn.Module):\n"
      "    def forward(self, x):\n"
      "        def inner(y):\n"
      "            return y\n"
      "        return inner(x)\n"
      "class Head(Net):\n"
      "    pass\n"
      "def main():\n"
      "    pass\n");
  ASSERT_EQ(idx.classes.size(), 2u);
  EXPECT_EQ(idx.classes[0].name, "Net");
  EXPECT_TRUE(idx.classes[0].is_module);
  EXPECT_TRUE(idx.classes[1].is_module) << "derives from a module class of the same file";
  ASSERT_EQ(idx.functions.size(), 3u);
  EXPECT_EQ(idx.functions[0].qualified_name, "Net.forward");
  EXPECT_EQ(idx.functions[0].def_line, 2u);
  EXPECT_EQ(idx.functions[0].end_line, 5u);
  EXPECT_EQ(idx.functions[0].class_index, 0);
  EXPECT_EQ(idx.functions[1].qualified_name, "Net.forward.inner");
  EXPECT_EQ(idx.functions[1].parent_function, 0);
  EXPECT_EQ(idx.functions[2].qualified_name, "main");
  EXPECT_EQ(idx.functions[2].parameters.size(), 0u);
  EXPECT_EQ(idx.functions[0].parameters, (std::vector<std::string>{"self", "x"}));
}

TEST(SourceIndex, LoopsNestAndKnowWhetherTheyTrain) {
  auto idx = indexOf(
      "import torch\n"
      "def step(model, opt, x):\n"
      "    loss = model(x).sum()\n"
      "    loss.backward()\n"
      "    opt.step()\n"
      "def main(model, opt, data):\n"
      "    for epoch in range(3):\n"
      "        for x in data:\n"
      "            step(model, opt, x)\n"
      "    for layer in model.layers:\n"
      "        print(layer)\n"
      "    while True:\n"
      "        break\n");
  ASSERT_EQ(idx.loops.size(), 4u);
  EXPECT_EQ(idx.loops[0].depth, 0);
  EXPECT_EQ(idx.loops[1].depth, 1);
  EXPECT_EQ(idx.loops[1].parent_loop, 0);
  EXPECT_EQ(idx.loops[1].targets, (std::vector<std::string>{"x"}));
  EXPECT_EQ(idx.loops[1].iterable, "data");
  EXPECT_TRUE(idx.loops[1].is_training) << "calls a function that calls backward()";
  EXPECT_TRUE(idx.loops[0].is_training) << "holds a training loop";
  EXPECT_FALSE(idx.loops[2].is_training);
  EXPECT_EQ(idx.loops[3].kind, LoopKind::While);
  EXPECT_FALSE(idx.loops[3].is_training);
  EXPECT_TRUE(idx.functions[0].trains);
  EXPECT_TRUE(idx.functions[0].reached_from_training_loop);
  EXPECT_FALSE(idx.functions[1].reached_from_training_loop);
}

TEST(SourceIndex, ADataLoaderLoopIsATrainingLoopAndItsTargetsAreTensors) {
  auto idx = indexOf(
      "from torch.utils.data import DataLoader as DL\n"
      "loader = DL(ds, batch_size=4)\n"
      "for i, (x, y) in enumerate(loader):\n"
      "    pass\n");
  ASSERT_EQ(idx.loops.size(), 1u);
  EXPECT_TRUE(idx.loops[0].iterates_dataloader);
  EXPECT_TRUE(idx.loops[0].is_training);
  EXPECT_EQ(idx.kindOf("loader", -1), ValueKind::DataLoader);
  EXPECT_EQ(idx.kindOf("x", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("y", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("i", -1), ValueKind::Unknown) << "enumerate's index is an int";
}

TEST(SourceIndex, SelfMethodsAndAnnotatedParametersConnectTraining) {
  auto idx = indexOf(
      "from torch.utils.data import DataLoader\n"
      "class T:\n"
      "    def __init__(self, data: DataLoader):\n"
      "        self.data = data\n"
      "    def batch(self, x):\n"
      "        self.optimizer.step()\n"
      "    def epoch(self):\n"
      "        for x in self.data:\n"
      "            self.batch(x)\n");
  ASSERT_EQ(idx.loops.size(), 1u);
  EXPECT_TRUE(idx.loops[0].iterates_dataloader);
  EXPECT_TRUE(idx.loops[0].is_training);
  EXPECT_TRUE(idx.functions[1].trains);
  EXPECT_EQ(idx.kindOf("x", 2), ValueKind::Tensor);
}

TEST(SourceIndex, CallsRecordCalleeReceiverAndArguments) {
  std::string text = "y = x.to(device, non_blocking=True)\nz = torch.zeros(3).cuda()\n";
  auto idx = indexOf(text);
  const CallInfo* to = findCall(idx, "x.to");
  ASSERT_NE(to, nullptr);
  EXPECT_EQ(to->method, "to");
  EXPECT_EQ(to->receiver_text, "x");
  ASSERT_EQ(to->args.size(), 2u);
  EXPECT_EQ(to->args[0].keyword, "");
  EXPECT_EQ(to->args[0].value_text, "device");
  EXPECT_EQ(to->args[1].keyword, "non_blocking");
  EXPECT_EQ(to->args[1].value_text, "True");
  EXPECT_EQ(text.substr(to->args[1].range.begin, to->args[1].range.end - to->args[1].range.begin), "non_blocking=True");
  EXPECT_EQ(text.substr(to->arguments.begin, to->arguments.end - to->arguments.begin), "(device, non_blocking=True)");
  const CallInfo* cuda = findCall(idx, "torch.zeros(3).cuda");
  ASSERT_NE(cuda, nullptr);
  ASSERT_GE(cuda->receiver_call, 0);
  EXPECT_EQ(idx.calls[static_cast<size_t>(cuda->receiver_call)].resolved, "torch.zeros");
}

TEST(SourceIndex, AssignmentsWithsAndStatements) {
  auto idx = indexOf(
      "import torch\n"
      "a = b = torch.ones(2)\n"
      "total += a\n"
      "with torch.no_grad(), open('f') as fh:\n"
      "    c = a * 2\n");
  ASSERT_GE(idx.assignments.size(), 3u);
  // `a = b = value`: the inner assignment is recorded (and binds) first.
  EXPECT_EQ(idx.assignments[0].targets, (std::vector<std::string>{"b"}));
  EXPECT_EQ(idx.assignments[1].targets, (std::vector<std::string>{"a"}));
  EXPECT_EQ(idx.kindOf("a", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.assignments[2].op, "+=");
  ASSERT_EQ(idx.withs.size(), 1u);
  EXPECT_EQ(idx.withs[0].item_calls.size(), 2u);
  EXPECT_EQ(idx.kindOf("c", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.blocks[0].statements.size(), 4u);
  EXPECT_EQ(idx.statements.back().kind, "expression_statement");
  EXPECT_EQ(idx.statements.back().indent, 4u);
}

TEST(SourceIndex, KnowsTensorsModulesAndOptimizers) {
  auto idx = indexOf(
      "import torch, torch.nn as nn\n"
      "import torch.nn.functional as F\n"
      "class Net(nn.Module):\n"
      "    pass\n"
      "def get():\n"
      "    return torch.randn(2), torch.randn(2)\n"
      "model = Net().to('cuda')\n"
      "opt = torch.optim.AdamW(model.parameters())\n"
      "crit = nn.CrossEntropyLoss()\n"
      "out = model(x)\n"
      "loss = crit(out, y)\n"
      "act = F.relu(out)\n"
      "moved = batch.to(dev)\n"
      "p, q = get()\n"
      "n = loss.item()\n"
      "dev = torch.device('cuda')\n"
      "s = 'cuda:0'\n");
  EXPECT_EQ(idx.kindOf("model", -1), ValueKind::Module);
  EXPECT_EQ(idx.kindOf("opt", -1), ValueKind::Optimizer);
  EXPECT_EQ(idx.kindOf("crit", -1), ValueKind::Module);
  EXPECT_EQ(idx.kindOf("out", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("loss", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("act", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("moved", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("p", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("q", -1), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("n", -1), ValueKind::Unknown);
  EXPECT_EQ(idx.kindOf("dev", -1), ValueKind::Device);
  EXPECT_EQ(idx.kindOf("s", -1), ValueKind::Device);
  EXPECT_TRUE(idx.functions[0].returns_tensor);
}

TEST(SourceIndex, RealScripts) {
  SourceFile gpt(testing::readFile(testing::testDataPath("h200/nsys/train_gpt.py")));
  auto idx = buildSourceIndex(gpt);
  EXPECT_FALSE(idx.has_syntax_errors);
  // `for layer in self.layers` (model code) is not a training loop; the step loop is.
  ASSERT_EQ(idx.loops.size(), 2u);
  EXPECT_FALSE(idx.loops[0].is_training);
  EXPECT_TRUE(idx.loops[1].is_training);
  EXPECT_EQ(gpt.lines().pointAt(idx.loops[1].range.begin).line + 1, 97u);
  // x, y come from get_batch(), a function of this file returning tensors.
  int main_fn = -1;
  for (size_t f = 0; f < idx.functions.size(); ++f)
    if (idx.functions[f].name == "main") main_fn = static_cast<int>(f);
  EXPECT_EQ(idx.kindOf("x", main_fn), ValueKind::Tensor);
  EXPECT_EQ(idx.kindOf("model", main_fn), ValueKind::Module);
}

TEST(SourceIndex, BrokenPythonGivesAPartialIndex) {
  auto idx = indexOf("import torch\nfor x in loader:\n    x = x.to('cuda'\n    loss.backward(\ndef (:\n");
  EXPECT_TRUE(idx.has_syntax_errors);
  EXPECT_EQ(idx.localNameFor("torch"), "torch");
}

}  // namespace
}  // namespace sightline::source

namespace sightline::source {
namespace {

TEST(SourceIndex, AnIndexSeededByThePreviousVersionMatchesAFreshOne) {
  SourceFile file(testing::readFile(testing::testDataPath("h200/nsys/train_gpt.py")));
  auto before = buildSourceIndex(file);
  auto at = static_cast<uint32_t>(file.text().find("opt.step()"));
  file.applyEdit(at, at, "# tuned\n            ");
  auto seeded = buildSourceIndex(file, &before);
  auto fresh = buildSourceIndex(file);
  ASSERT_EQ(seeded.functions.size(), fresh.functions.size());
  for (size_t f = 0; f < fresh.functions.size(); ++f) {
    EXPECT_EQ(seeded.functions[f].returns_tensor, fresh.functions[f].returns_tensor)
        << fresh.functions[f].qualified_name;
    EXPECT_EQ(seeded.functions[f].trains, fresh.functions[f].trains);
  }
  ASSERT_EQ(seeded.loops.size(), fresh.loops.size());
  for (size_t l = 0; l < fresh.loops.size(); ++l) EXPECT_EQ(seeded.loops[l].is_training, fresh.loops[l].is_training);
  EXPECT_EQ(seeded.scope_values, fresh.scope_values);
}

}  // namespace
}  // namespace sightline::source

namespace sightline::source {
namespace {

// The index of a chunked parse equals the index of one tree of the same text.
TEST(SourceIndex, ChunkedParseGivesTheSameIndex) {
  std::string text = bench::scaledTrainScript(1500);
  SourceFile chunked(text);
  SourceFile whole(text, /*chunked=*/false);
  ASSERT_GT(chunked.treeCount(), 1u);
  SourceIndex a = buildSourceIndex(chunked);
  SourceIndex b = buildSourceIndex(whole);
  ASSERT_EQ(a.functions.size(), b.functions.size());
  for (size_t i = 0; i < a.functions.size(); ++i) {
    EXPECT_EQ(a.functions[i].qualified_name, b.functions[i].qualified_name);
    EXPECT_EQ(a.functions[i].def_line, b.functions[i].def_line);
    EXPECT_EQ(a.functions[i].returns_tensor, b.functions[i].returns_tensor);
    EXPECT_EQ(a.functions[i].trains, b.functions[i].trains);
    EXPECT_EQ(a.functions[i].reached_from_training_loop, b.functions[i].reached_from_training_loop);
  }
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].range, b.calls[i].range);
    EXPECT_EQ(a.calls[i].resolved, b.calls[i].resolved);
    EXPECT_EQ(a.calls[i].loop, b.calls[i].loop);
  }
  ASSERT_EQ(a.loops.size(), b.loops.size());
  for (size_t i = 0; i < a.loops.size(); ++i) EXPECT_EQ(a.loops[i].is_training, b.loops[i].is_training);
  EXPECT_EQ(a.statements.size(), b.statements.size());
  EXPECT_EQ(a.blocks.size(), b.blocks.size());
  EXPECT_EQ(a.blocks[0].statements, b.blocks[0].statements);
  EXPECT_EQ(a.assignments.size(), b.assignments.size());
  EXPECT_EQ(a.comments.size(), b.comments.size());
  EXPECT_EQ(a.value_uses.size(), b.value_uses.size());
  EXPECT_EQ(a.scope_values, b.scope_values);
}

}  // namespace
}  // namespace sightline::source

namespace sightline::source {
namespace {

// Every field of an index as text, one entry per line: two indexes are equal when these are.
std::string dumpIndex(const SourceIndex& x) {
  std::ostringstream o;
  auto r = [&](ByteRange b) { o << '[' << b.begin << ',' << b.end << ')'; };
  for (const auto& i : x.imports)
    o << "import " << i.local_name << '=' << i.qualified_name << ' ', r(i.range), o << '\n';
  for (const auto& c : x.classes) {
    o << "class " << c.qualified_name << ' ' << c.is_module << ' ';
    for (const auto& b : c.bases) o << b << ',';
    r(c.range);
    o << '\n';
  }
  for (const auto& f : x.functions) {
    o << "def " << f.qualified_name << ' ' << f.def_line << '-' << f.end_line << ' ' << f.class_index << ' '
      << f.parent_function << ' ' << f.returns_tensor << f.trains << f.reached_from_training_loop << ' ';
    r(f.range), r(f.body);
    for (const auto& p : f.parameters) o << ' ' << p;
    o << '\n';
  }
  for (const auto& l : x.loops) {
    o << "loop " << static_cast<int>(l.kind) << ' ' << l.parent_loop << ' ' << l.function << ' ' << l.depth << ' '
      << l.iterable << ' ' << l.iterates_dataloader << l.is_training << ' ';
    r(l.range), r(l.header), r(l.body);
    for (const auto& t : l.targets) o << ' ' << t;
    o << '\n';
  }
  for (const auto& c : x.calls) {
    o << "call " << c.callee_text << ' ' << c.resolved << ' ' << c.method << ' ' << c.receiver_text << ' '
      << c.receiver_call << ' ' << c.function << ' ' << c.loop << ' ' << c.statement << ' ' << c.in_fstring << ' ';
    r(c.range), r(c.callee), r(c.arguments);
    for (const auto& a : c.args) o << ' ' << a.keyword << '=' << a.value_text << a.is_splat, r(a.range), r(a.value);
    o << '\n';
  }
  for (const auto& a : x.assignments) {
    o << "assign " << a.op << ' ' << a.value_text << ' ' << a.value_call << ' ' << a.function << ' ' << a.loop << ' '
      << a.statement << ' ';
    r(a.range), r(a.value);
    for (const auto& t : a.targets) o << ' ' << t;
    o << '\n';
  }
  for (const auto& w : x.withs) {
    o << "with " << w.function << ' ' << w.statement << ' ';
    r(w.range), r(w.body);
    for (int c : w.item_calls) o << ' ' << c;
    o << '\n';
  }
  for (const auto& s : x.statements)
    o << "stmt " << s.kind << ' ' << s.first_line << '-' << s.last_line << ' ' << s.indent << ' ' << s.block << ' ',
        r(s.range), o << '\n';
  for (const auto& b : x.blocks) {
    o << "block " << b.owner_statement << ' ';
    r(b.range);
    for (int s : b.statements) o << ' ' << s;
    o << '\n';
  }
  for (const auto& u : x.value_uses)
    o << "use " << static_cast<int>(u.kind) << ' ' << u.expression << ' ' << u.function << ' ' << u.loop << ' ',
        r(u.range), o << '\n';
  for (auto c : x.comments) o << "comment ", r(c), o << '\n';
  for (auto c : x.multiline_strings) o << "string ", r(c), o << '\n';
  for (size_t i = 0; i < x.scope_values.size(); ++i)
    for (const auto& [name, kind] : x.scope_values[i])
      o << "scope " << i << ' ' << name << ' ' << static_cast<int>(kind) << '\n';
  for (size_t i = 0; i < x.class_attribute_values.size(); ++i)
    for (const auto& [name, kind] : x.class_attribute_values[i])
      o << "attr " << i << ' ' << name << ' ' << static_cast<int>(kind) << '\n';
  o << "errors " << x.has_syntax_errors << '\n';
  return o.str();
}

// The first line where two dumps differ, for a readable failure.
std::string firstDifference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool ga = static_cast<bool>(std::getline(x, la)), gb = static_cast<bool>(std::getline(y, lb));
    if (!ga && !gb) return "";
    if (la != lb || ga != gb) return "line " + std::to_string(n) + ":\n  edited: " + la + "\n  fresh:  " + lb;
  }
}

// Edits on a chunked file: the index built from the previous one (only the edited chunk walked
// again) equals a fresh index of the new text, entry by entry.
TEST(SourceIndex, IncrementalIndexEqualsAFreshOne) {
  SourceFile f(bench::scaledTrainScript(1500));
  ASSERT_GT(f.treeCount(), 2u);
  SourceIndex index = buildSourceIndex(f);
  auto check = [&](const std::string& what, size_t walked = 1) {
    SourceIndex next = buildSourceIndex(f, &index);
    if (walked == 1) {
      EXPECT_EQ(next.chunks_walked, 1u) << what;
    } else if (walked > 1) {
      EXPECT_GT(next.chunks_walked, 1u) << what;
    }
    SourceIndex fresh = buildSourceIndex(f);
    std::string a = dumpIndex(next), b = dumpIndex(fresh);
    EXPECT_EQ(a, b) << what << ": " << firstDifference(a, b);
    // Taking the previous index apart (as the server does) gives the same.
    SourceIndex moved = buildSourceIndex(f, std::move(index));
    std::string m = dumpIndex(moved);
    EXPECT_EQ(m, b) << what << " (moved): " << firstDifference(m, b);
    index = std::move(next);
  };
  check("no edit (the first build after a fresh one may walk all: its knowledge settles)", 0);
  auto find = [&](const std::string& needle, size_t from = 0) {
    return static_cast<uint32_t>(f.text().find(needle, from));
  };
  uint32_t second = f.chunkRange(1).begin;
  uint32_t in_loop = find("            loss = train_step", second);
  f.applyEdit(in_loop, in_loop, "            torch.cuda.synchronize()\n");
  check("a line added in a loop");
  uint32_t item = find(".item()", second);
  f.applyEdit(item, item + 7, "");
  check("an .item() removed");
  uint32_t first_def = find("def ", second + 1);
  f.applyEdit(first_def, first_def, "\n\n");
  check("blank lines above a def");
  uint32_t imp = find("import torch\n", f.chunkRange(1).begin);
  if (imp < f.text().size()) {
    f.applyEdit(imp, imp, "import numpy as torch_np\n");
    check("an import added mid-file (later chunks walked again)", 2);
  }
  uint32_t name = find("pin_memory", 0);
  if (name < f.text().size()) {
    f.applyEdit(name, name, "x");
    check("a keyword renamed");
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    // A line start inside a function body, so the file stays valid Python.
    auto size = static_cast<uint32_t>(f.text().size());
    uint32_t at = find("\n        ", static_cast<uint32_t>(rng() % size));
    if (at >= size) continue;
    f.applyEdit(at + 1, at + 1, i % 2 ? "        w = x.cuda()\n" : "        print(loss)\n");
    check("random line " + std::to_string(i));
  }
}

}  // namespace
}  // namespace sightline::source
