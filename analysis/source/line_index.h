// Maps byte offsets of a text to (line, byte column) points and back.
// Columns are bytes of the UTF-8 text; UTF-16 conversion lives in server/ only.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sightline::source {

// A position in a text: 0-based line, 0-based column counted in bytes.
struct TextPoint {
  uint32_t line = 0;
  uint32_t column = 0;  // bytes from the start of the line
  friend bool operator==(const TextPoint&, const TextPoint&) = default;
};

// A half-open range [begin, end) of byte offsets into one text.
struct ByteRange {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool contains(uint32_t offset) const { return begin <= offset && offset < end; }
  bool overlaps(ByteRange other) const { return begin < other.end && other.begin < end; }
  bool encloses(ByteRange other) const { return begin <= other.begin && other.end <= end; }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

// Whether `text` holds a "\r" that no "\n" follows: a line end tree-sitter would not see.
bool hasLoneCarriageReturn(std::string_view text);
// The number of line ends in `text` ("\n", "\r\n", lone "\r").
uint32_t countLineEnds(std::string_view text);

class LineIndex {
 public:
  LineIndex() : starts_{0}, size_(0) {}
  explicit LineIndex(std::string_view text);

  uint32_t lineCount() const { return static_cast<uint32_t>(starts_.size()); }
  // Clamps offsets past the end to the end of the text.
  TextPoint pointAt(uint32_t offset) const;
  // Clamps lines past the end to the end, columns past the line's end to its end.
  uint32_t offsetAt(TextPoint point) const;
  // The line's bytes without its line terminator ("\n", "\r\n" or a lone "\r").
  ByteRange lineRange(uint32_t line) const;
  uint32_t lineStart(uint32_t line) const;

 private:
  std::vector<uint32_t> starts_;        // byte offset where each line begins
  std::vector<uint32_t> content_ends_;  // byte offset where each line's content ends
  uint32_t size_;
};

}  // namespace sightline::source
