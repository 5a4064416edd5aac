// LineTracker: baseline lines followed through edits of a real training script.
#include "analysis/source/line_tracker.h"

#include <gtest/gtest.h>

#include <random>

#include "analysis/source/source_file.h"
#include "tests/support/test_paths.h"

namespace sightline::source {
namespace {

std::string lineText(const SourceFile& f, uint32_t line) {
  auto r = f.lines().lineRange(line);
  return f.text().substr(r.begin, r.end - r.begin);
}

// Applies an edit to both the file and the tracker, as the server does.
void edit(SourceFile& file, LineTracker& tracker, uint32_t begin, uint32_t end, std::string_view text) {
  tracker.edit(file.lines(), begin, end, text);
  file.applyEdit(begin, end, text);
}

class LineTrackerOnScript : public ::testing::Test {
 protected:
  void SetUp() override {
    base_text = testing::readFile(testing::testDataPath("h200/nsys/train_small.py"));
    file = std::make_unique<SourceFile>(base_text);
    base = std::make_unique<SourceFile>(base_text);
    tracker.reset(file->lines().lineCount());
  }
  // Every line that claims a baseline origin and is not stale has that line's text.
  void expectConsistent() {
    for (uint32_t line = 0; line < file->lines().lineCount(); ++line) {
      int32_t origin = tracker.baselineLine(line);
      if (origin < 0 || tracker.stale(line)) continue;
      ASSERT_EQ(lineText(*file, line), lineText(*base, static_cast<uint32_t>(origin))) << "current line " << line;
      ASSERT_EQ(tracker.currentLine(static_cast<uint32_t>(origin)), static_cast<int32_t>(line));
    }
  }
  std::string base_text;
  std::unique_ptr<SourceFile> file, base;
  LineTracker tracker;
};

TEST_F(LineTrackerOnScript, ALineInsertedAboveShiftsEverythingBelow) {
  // Line 33 (1-based) is the conv/bn/relu line; insert two lines at the top of the file.
  edit(*file, tracker, 0, 0, "# one\n# two\n");
  EXPECT_EQ(tracker.currentLine(32), 34);
  EXPECT_FALSE(tracker.stale(34));
  EXPECT_EQ(tracker.baselineLine(0), -1);
  EXPECT_EQ(tracker.baselineLine(1), -1);
  EXPECT_EQ(tracker.currentLine(0), 2);
  EXPECT_FALSE(tracker.unchanged());
  expectConsistent();
}

TEST_F(LineTrackerOnScript, EnterAtTheEndOfALineKeepsItAndShiftsTheRest) {
  uint32_t end_of_10 = file->lines().lineRange(9).end;
  edit(*file, tracker, end_of_10, end_of_10, "\n    y = 1");
  EXPECT_EQ(tracker.currentLine(9), 9);
  EXPECT_FALSE(tracker.stale(9));
  EXPECT_EQ(tracker.baselineLine(10), -1);
  EXPECT_EQ(tracker.currentLine(32), 33);
  expectConsistent();
}

TEST_F(LineTrackerOnScript, AnEditedLineKeepsItsPlaceButIsStale) {
  uint32_t in_33 = file->lines().lineStart(32) + 4;
  edit(*file, tracker, in_33, in_33, "z");
  EXPECT_EQ(tracker.currentLine(32), 32);
  EXPECT_TRUE(tracker.stale(32));
  EXPECT_FALSE(tracker.stale(31));
  expectConsistent();
}

TEST_F(LineTrackerOnScript, DeletedLinesLoseTheirOriginsAndTheRestMovesUp) {
  edit(*file, tracker, file->lines().lineStart(2), file->lines().lineStart(5), "");
  EXPECT_EQ(tracker.currentLine(2), -1);
  EXPECT_EQ(tracker.currentLine(4), -1);
  EXPECT_EQ(tracker.currentLine(5), 2);
  EXPECT_EQ(tracker.currentLine(32), 29);
  expectConsistent();
}

TEST_F(LineTrackerOnScript, FullReplacementMatchesCommonStartAndEnd) {
  std::string text = "import os\n" + base_text;
  tracker.replaceAll(base_text, text);
  file = std::make_unique<SourceFile>(text);
  EXPECT_EQ(tracker.currentLine(32), 33);
  EXPECT_FALSE(tracker.stale(33));
  expectConsistent();
}

TEST_F(LineTrackerOnScript, RandomEditsNeverClaimAWrongUnchangedLine) {
  std::mt19937 gen(7);
  auto rng = [&] { return static_cast<uint32_t>(gen()); };
  const char* pieces[] = {"x", "\n", "\n    pass", "# c\n", "", "  ", "foo(\n)\n"};
  for (int i = 0; i < 150; ++i) {
    auto size = static_cast<uint32_t>(file->text().size());
    uint32_t begin, end;
    if (rng() % 2) {  // at line boundaries
      uint32_t line = rng() % file->lines().lineCount();
      begin = rng() % 2 ? file->lines().lineStart(line) : file->lines().lineRange(line).end;
      end = begin;
      if (rng() % 3 == 0) end = file->lines().lineStart(std::min(line + 1 + rng() % 3, file->lines().lineCount() - 1));
    } else {
      begin = size ? rng() % size : 0;
      end = std::min(size, begin + rng() % 12);
    }
    if (end < begin) std::swap(begin, end);
    edit(*file, tracker, begin, end, pieces[rng() % std::size(pieces)]);
    expectConsistent();
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace sightline::source
