// SourceFile: parsing, broken Python, and incremental edits checked against fresh parses.
#include "analysis/source/source_file.h"

#include <gtest/gtest.h>

#include <random>

#include "bench/scaled_script.h"
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

// The edited file reads as a fresh parse of its text would, and as one tree of it would.
void expectSameAsFreshParse(const SourceFile& edited) {
  SourceFile fresh(edited.text());
  SourceFile whole(edited.text(), /*chunked=*/false);
  std::string tree = edited.syntaxTreeString();
  ASSERT_EQ(tree, fresh.syntaxTreeString()) << "after edits, text:\n" << edited.text();
  ASSERT_EQ(tree, whole.syntaxTreeString()) << "after edits, text:\n" << edited.text();
  ASSERT_EQ(edited.hasSyntaxErrors(), whole.hasSyntaxErrors());
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

// A large file parses as chunks of top-level definitions, which together read as one tree.
TEST(SourceFile, LargeFilesParseAsChunksLikeOneTree) {
  std::string text = bench::scaledTrainScript(3000);
  SourceFile chunked(text);
  SourceFile whole(text, /*chunked=*/false);
  EXPECT_GT(chunked.treeCount(), 2u);
  EXPECT_EQ(whole.treeCount(), 1u);
  EXPECT_FALSE(chunked.hasSyntaxErrors());
  EXPECT_EQ(chunked.syntaxTreeString(), whole.syntaxTreeString());
  for (size_t i = 1; i < chunked.treeCount(); ++i) {
    EXPECT_EQ(chunked.chunkRange(i).begin, chunked.chunkRange(i - 1).end);
    EXPECT_TRUE(text.compare(chunked.chunkRange(i).begin, 4, "def ") == 0 ||
                text.compare(chunked.chunkRange(i).begin, 6, "class ") == 0)
        << text.substr(chunked.chunkRange(i).begin, 40);
  }
  EXPECT_EQ(chunked.chunkRange(chunked.treeCount() - 1).end, text.size());
}

// Edits as a user makes them on a chunked file: typing in a name, Enter above a `def`,
// indenting a `def` into the class above, breaking the syntax and repairing it, deleting
// across chunks, and random ones. After each, the trees read as one fresh tree of the text.
TEST(SourceFile, EditsOnAChunkedFileMatchAWholeParse) {
  SourceFile f(bench::scaledTrainScript(1800));
  ASSERT_GT(f.treeCount(), 2u);
  auto at = [&](const std::string& needle, size_t from = 0) {
    auto p = f.text().find(needle, from);
    EXPECT_NE(p, std::string::npos) << needle;
    return static_cast<uint32_t>(p);
  };
  uint32_t second = static_cast<uint32_t>(f.chunkRange(1).begin);
  uint32_t name = second + (f.text().compare(second, 6, "class ") == 0 ? 6 : 4);
  f.applyEdit(name, name, "x");  // a letter typed into the chunk's first definition's name
  EXPECT_GT(f.treeCount(), 2u);
  expectSameAsFreshParse(f);
  f.applyEdit(second, second, "\n# a comment\n");  // lines above it
  expectSameAsFreshParse(f);
  EXPECT_GT(f.treeCount(), 2u);
  uint32_t third = static_cast<uint32_t>(f.chunkRange(2).begin);
  f.applyEdit(third, third, "    ");  // the definition moves into the class or function above
  expectSameAsFreshParse(f);
  f.applyEdit(third, third + 4, "");
  expectSameAsFreshParse(f);
  uint32_t call = at("train_step_", f.chunkRange(1).end);
  f.applyEdit(call, call, "(");  // broken: read whole, as tree-sitter reads it
  EXPECT_TRUE(f.hasSyntaxErrors());
  expectSameAsFreshParse(f);
  f.applyEdit(call, call + 1, "");  // repaired: chunked again
  EXPECT_FALSE(f.hasSyntaxErrors());
  EXPECT_GT(f.treeCount(), 2u);
  expectSameAsFreshParse(f);
  uint32_t quote = at("def ", f.chunkRange(1).begin + 10);
  f.applyEdit(quote, quote, "\"\"\"\n");  // a string opened above code in later chunks
  expectSameAsFreshParse(f);
  f.applyEdit(quote, quote + 4, "");
  expectSameAsFreshParse(f);
  uint32_t from = f.chunkRange(1).end - 20;
  f.applyEdit(from, f.chunkRange(2).begin + 30, "");  // across a chunk boundary
  expectSameAsFreshParse(f);
  std::mt19937 rng(99);
  const char* snippets[] = {"", "x", "\n", "(", ")", "    ", "def f():\n    pass\n", "@dec\n", "\"\"\"", ":"};
  for (int i = 0; i < 12; ++i) {
    auto size = static_cast<uint32_t>(f.text().size());
    uint32_t begin = static_cast<uint32_t>(rng() % (size + 1));
    uint32_t end = std::min<uint32_t>(size, begin + static_cast<uint32_t>(rng() % 12));
    f.applyEdit(begin, end, snippets[rng() % std::size(snippets)]);
    expectSameAsFreshParse(f);
  }
}

// A `def` at column 0 inside a string: the chunk boundary there is wrong, so the file is read
// as one tree.
TEST(SourceFile, ADefInsideAStringIsNoChunkBoundary) {
  std::string body = bench::scaledTrainScript(1200);
  std::string text = body + "DOC = '''\n" + "def not_code():\n" + body + "'''\n" + body;
  SourceFile f(text);
  SourceFile whole(text, /*chunked=*/false);
  EXPECT_FALSE(f.hasSyntaxErrors());
  EXPECT_EQ(f.syntaxTreeString(), whole.syntaxTreeString());
  uint32_t end = static_cast<uint32_t>(f.text().size());
  f.applyEdit(end, end, "x = 1\n");
  expectSameAsFreshParse(f);
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
