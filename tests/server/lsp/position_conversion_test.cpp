// UTF-16 and UTF-8 positions <-> byte offsets, including astral characters and bad bytes.
#include "server/lsp/position_conversion.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

TEST(PositionConversion, Utf16CountsSurrogatePairs) {
  std::string text = "a = \"é🚀\"; x.item()\nnext";
  source::LineIndex lines(text);
  // `a = "` is 5 units, é 1 unit (2 bytes), 🚀 2 units (4 bytes), `"; ` 3 units.
  uint32_t item = static_cast<uint32_t>(text.find("x.item"));
  auto p = toPosition(text, lines, item, PositionEncoding::Utf16);
  EXPECT_EQ(p.line, 0u);
  EXPECT_EQ(p.character, 11u);
  EXPECT_EQ(toOffset(text, lines, p, PositionEncoding::Utf16), item);
  auto p8 = toPosition(text, lines, item, PositionEncoding::Utf8);
  EXPECT_EQ(p8.character, item);
  EXPECT_EQ(toOffset(text, lines, p8, PositionEncoding::Utf8), item);
}

TEST(PositionConversion, ClampsAndSurvivesInvalidUtf8) {
  std::string text =
      "ab\xff\xfe"
      "cd\n";
  source::LineIndex lines(text);
  EXPECT_EQ(toOffset(text, lines, {0, 4}, PositionEncoding::Utf16), 4u);
  EXPECT_EQ(toOffset(text, lines, {0, 99}, PositionEncoding::Utf16), 6u);
  EXPECT_EQ(toOffset(text, lines, {9, 0}, PositionEncoding::Utf16), static_cast<uint32_t>(text.size()));
  EXPECT_EQ(toPosition(text, lines, 6, PositionEncoding::Utf16).character, 6u);
  // A truncated 4-byte sequence at the end of the text.
  std::string cut = "x\xf0\x9f";
  source::LineIndex cut_lines(cut);
  EXPECT_EQ(toPosition(cut, cut_lines, 3, PositionEncoding::Utf16).character, 3u);
}

}  // namespace
TEST(PositionConversion, ExtremeCharactersClampInEveryEncoding) {
  // A character of 2^32 - 1 on line 1 once wrapped in UTF-8 (begin + character overflowed) and
  // landed on line 0: every encoding clamps to the line's end.
  std::string text = "abc\ndef\n";
  source::LineIndex lines(text);
  for (auto encoding : {PositionEncoding::Utf8, PositionEncoding::Utf16}) {
    EXPECT_EQ(toOffset(text, lines, {1, UINT32_MAX}, encoding), 7u);
    EXPECT_EQ(toOffset(text, lines, {1, UINT32_MAX - 2}, encoding), 7u);
    EXPECT_EQ(toOffset(text, lines, {UINT32_MAX, UINT32_MAX}, encoding), static_cast<uint32_t>(text.size()));
  }
}

}  // namespace sightline::server
