// Edit helpers: keyword arguments, argument removal, imports, indentation.
#include "analysis/features/edits.h"

#include <gtest/gtest.h>

namespace sightline::features {
namespace {

std::string withKeyword(const std::string& text, const std::string& callee, const char* kw, const char* value) {
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  for (const auto& c : index.calls)
    if (c.callee_text == callee) return *applyEdits(text, {setKeywordArgument(file, c, kw, value)});
  return "<no call>";
}

TEST(Edits, ApplyEditsInAnyOrderAndRejectOverlaps) {
  EXPECT_EQ(applyEdits("abcdef", {{{4, 5}, "E"}, {{0, 1}, "A"}}), "AbcdEf");
  EXPECT_EQ(applyEdits("abc", {{{1, 1}, "x"}, {{1, 1}, "y"}}), "axybc");
  EXPECT_EQ(applyEdits("abcdef", {{{0, 3}, ""}, {{2, 4}, ""}}), std::nullopt);
  EXPECT_EQ(applyEdits("abc", {{{2, 9}, ""}}), std::nullopt);
}

TEST(Edits, SetKeywordArgument) {
  EXPECT_EQ(withKeyword("f()\n", "f", "a", "1"), "f(a=1)\n");
  EXPECT_EQ(withKeyword("x.to(d)\n", "x.to", "non_blocking", "True"), "x.to(d, non_blocking=True)\n");
  EXPECT_EQ(withKeyword("f(a, b,)\n", "f", "c", "1"), "f(a, b, c=1,)\n");
  EXPECT_EQ(withKeyword("f(a, pin_memory=False)\n", "f", "pin_memory", "True"), "f(a, pin_memory=True)\n");
  EXPECT_EQ(withKeyword("f(\n    a,\n    b\n)\n", "f", "c", "1"), "f(\n    a,\n    b,\n    c=1\n)\n");
  EXPECT_EQ(withKeyword("f(a,\n  b=2)\n", "f", "c", "1"), "f(a,\n  b=2,\n  c=1)\n");
}

TEST(Edits, RemoveArgument) {
  std::string text = "g(a, b=1, c)\nh(x=1)\n";
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  EXPECT_EQ(applyEdits(text, {removeArgument(file, index.calls[0], 1)}), "g(a, c)\nh(x=1)\n");
  EXPECT_EQ(applyEdits(text, {removeArgument(file, index.calls[0], 2)}), "g(a, b=1)\nh(x=1)\n");
  EXPECT_EQ(applyEdits(text, {removeArgument(file, index.calls[1], 0)}), "g(a, b=1, c)\nh()\n");
}

TEST(Edits, EnsureImport) {
  auto run = [](const std::string& text, const char* module) {
    source::SourceFile file(text);
    auto index = source::buildSourceIndex(file);
    auto imp = ensureImport(file, index, module);
    return std::make_pair(imp.name, imp.edit ? *applyEdits(text, {*imp.edit}) : text);
  };
  EXPECT_EQ(run("import argparse, os\nx = 1\n", "os"),
            std::make_pair(std::string("os"), std::string("import argparse, os\nx = 1\n")));
  EXPECT_EQ(run("import os as _os\n", "os").first, "_os");
  EXPECT_EQ(run("\"\"\"Doc.\"\"\"\nimport sys\nfrom a import b\n\nx = 1\n", "os").second,
            "\"\"\"Doc.\"\"\"\nimport sys\nfrom a import b\nimport os\n\nx = 1\n");
  EXPECT_EQ(run("x = 1\n", "torch").second, "import torch\nx = 1\n");
  EXPECT_EQ(run("import sys", "os").second, "import sys\nimport os");
  EXPECT_EQ(run("import torch.nn as nn\n", "torch").second, "import torch.nn as nn\nimport torch\n");
  EXPECT_EQ(run("import torch.nn\n", "torch").first, "torch");
}

TEST(Edits, IndentUnit) {
  auto unit = [](const std::string& text) {
    source::SourceFile file(text);
    auto index = source::buildSourceIndex(file);
    return indentUnit(file, index);
  };
  EXPECT_EQ(unit("def f():\n  return 1\n"), "  ");
  EXPECT_EQ(unit("def f():\n\treturn 1\n"), "\t");
  EXPECT_EQ(unit("x = 1\n"), "    ");
}

}  // namespace
}  // namespace sightline::features
