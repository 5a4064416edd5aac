// LineIndex: offsets <-> points, CRLF, clamping.
#include "analysis/source/line_index.h"

#include <gtest/gtest.h>

namespace sightline::source {
namespace {

TEST(LineIndex, MapsOffsetsToPointsAndBack) {
  LineIndex idx("ab\ncd\n\nef");
  EXPECT_EQ(idx.lineCount(), 4u);
  EXPECT_EQ(idx.pointAt(0), (TextPoint{0, 0}));
  EXPECT_EQ(idx.pointAt(4), (TextPoint{1, 1}));
  EXPECT_EQ(idx.pointAt(6), (TextPoint{2, 0}));
  EXPECT_EQ(idx.pointAt(8), (TextPoint{3, 1}));
  EXPECT_EQ(idx.offsetAt({1, 1}), 4u);
  EXPECT_EQ(idx.offsetAt({3, 2}), 9u);
}

TEST(LineIndex, ClampsOutOfRange) {
  LineIndex idx("ab\ncd");
  EXPECT_EQ(idx.pointAt(100), (TextPoint{1, 2}));
  EXPECT_EQ(idx.offsetAt({0, 50}), 2u);  // past the line's end: its end, not the next line
  EXPECT_EQ(idx.offsetAt({7, 0}), 5u);
}

TEST(LineIndex, CrLfLinesExcludeTheTerminator) {
  LineIndex idx("ab\r\ncd\r\n");
  EXPECT_EQ(idx.lineRange(0), (ByteRange{0, 2}));
  EXPECT_EQ(idx.lineRange(1), (ByteRange{4, 6}));
  EXPECT_EQ(idx.lineStart(2), 8u);
}

TEST(LineIndex, ALoneCarriageReturnEndsALine) {
  LineIndex idx("ab\rcd\r\nef\ngh\r");
  EXPECT_EQ(idx.lineCount(), 5u);
  EXPECT_EQ(idx.lineRange(0), (ByteRange{0, 2}));
  EXPECT_EQ(idx.lineRange(1), (ByteRange{3, 5}));
  EXPECT_EQ(idx.lineRange(2), (ByteRange{7, 9}));
  EXPECT_EQ(idx.lineRange(3), (ByteRange{10, 12}));
  EXPECT_EQ(idx.pointAt(4), (TextPoint{1, 1}));
  EXPECT_EQ(countLineEnds("a\rb\r\nc\n"), 3u);
  EXPECT_TRUE(hasLoneCarriageReturn("a\rb"));
  EXPECT_FALSE(hasLoneCarriageReturn("a\r\nb"));
}

TEST(LineIndex, EmptyText) {
  LineIndex idx("");
  EXPECT_EQ(idx.lineCount(), 1u);
  EXPECT_EQ(idx.pointAt(0), (TextPoint{0, 0}));
}

}  // namespace
}  // namespace sightline::source
