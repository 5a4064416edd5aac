// SourceIndex: imports, definitions, loops (training or not), calls, assignments, withs, and
// what names hold.
#include "analysis/source/source_index.h"

#include <gtest/gtest.h>

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
