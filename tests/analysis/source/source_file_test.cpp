// SourceFile: parsing, broken Python, and incremental edits checked against fresh parses.
#include "analysis/source/source_file.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/support/test_paths.h"

namespace sightline::source {
namespace {

TEST(SourceFile, GrammarMatchesTheLibrary) { EXPECT_EQ(checkGrammarCompatibility(), ""); }

TEST(SourceFile, ParsesValidPython) {
  SourceFile f("import torch\nx = torch.zeros(3)\n");
  EXPECT_FALSE(f.hasSyntaxErrors());
  EXPECT_NE(f.syntaxTreeString().find("(call"), std::string::npos);
}

TEST(SourceFile, BrokenPythonStillGivesATree) {
  SourceFile f("def f(:\n  x = = 1\n  for in :\n\x01\xff(((\n");
  EXPECT_TRUE(f.hasSyntaxErrors());
  EXPECT_NE(f.syntaxTreeString().find("module"), std::string::npos);
}

void expectSameAsFreshParse(const SourceFile& edited) {
  SourceFile fresh(edited.text());
  ASSERT_EQ(edited.syntaxTreeString(), fresh.syntaxTreeString()) << "after edits, text:\n" << edited.text();
}

TEST(SourceFile, IncrementalEditsMatchAFreshParseOnARealScript) {
  SourceFile f(testing::readFile(testing::testDataPath("h200/nsys/train_small.py")));
  const std::string& t = f.text();
  // Insert a line inside the training loop.
  auto loop = static_cast<uint32_t>(t.find("            loss = train_step"));
  f.applyEdit(loop, loop, "            torch.cuda.synchronize()\n");
  expectSameAsFreshParse(f);
  // Change a keyword argument.
  auto bs = static_cast<uint32_t>(f.text().find("batch_size=64"));
  f.applyEdit(bs + 11, bs + 13, "128");
  expectSameAsFreshParse(f);
  // Delete a whole method.
  auto len_def = static_cast<uint32_t>(f.text().find("    def __len__"));
  auto next_def = static_cast<uint32_t>(f.text().find("    def __getitem__"));
  f.applyEdit(len_def, next_def, "");
  expectSameAsFreshParse(f);
  // Break the syntax, then repair it.
  auto colon = static_cast<uint32_t>(f.text().find("def train_step(model, opt, x, y):") + 32);
  f.applyEdit(colon, colon + 1, "");
  EXPECT_TRUE(f.hasSyntaxErrors());
  expectSameAsFreshParse(f);
  f.applyEdit(colon, colon, ":");
  EXPECT_FALSE(f.hasSyntaxErrors());
  expectSameAsFreshParse(f);
  // Multi-byte text and an edit at the very end.
  f.applyEdit(0, 0, "# état — ünïcode 🚀\n");
  auto end = static_cast<uint32_t>(f.text().size());
  f.applyEdit(end, end, "print('fin')\n");
  expectSameAsFreshParse(f);
}

TEST(SourceFile, RandomEditsMatchAFreshParse) {
  SourceFile f(testing::readFile(testing::testDataPath("h200/nsys/train_gpt.py")));
  std::mt19937 rng(1234);
  const char* snippets[] = {"", "x", "\n", "(", ")", "    ", "for i in range(3):\n    pass\n", "loss.item()", ":"};
  for (int i = 0; i < 60; ++i) {
    auto size = static_cast<uint32_t>(f.text().size());
    uint32_t begin = static_cast<uint32_t>(rng() % (size + 1));
    uint32_t end = std::min<uint32_t>(size, begin + static_cast<uint32_t>(rng() % 12));
    f.applyEdit(begin, end, snippets[rng() % std::size(snippets)]);
    expectSameAsFreshParse(f);
  }
}

TEST(SourceFile, EditOffsetsAreClamped) {
  SourceFile f("abc\n");
  f.applyEdit(100, 200, "x");
  EXPECT_EQ(f.text(), "abc\nx");
  f.applyEdit(3, 1, "!");
  EXPECT_EQ(f.text(), "abc!\nx");
}

}  // namespace
}  // namespace sightline::source
