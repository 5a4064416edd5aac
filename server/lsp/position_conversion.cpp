// UTF-8 <-> UTF-16 column arithmetic over one line at a time.
#include "server/lsp/position_conversion.h"

namespace sightline::server {
namespace {

// Length in bytes of the UTF-8 sequence starting at s[i], 1 for an invalid lead byte or a
// truncated sequence.
uint32_t sequenceLength(std::string_view s, uint32_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  uint32_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (uint32_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

}  // namespace

uint32_t toOffset(std::string_view text, const source::LineIndex& lines, const protocol::Position& position,
                  PositionEncoding encoding) {
  if (position.line >= lines.lineCount()) return static_cast<uint32_t>(text.size());
  source::ByteRange line = lines.lineRange(position.line);
  // Clamped before adding: a character near 2^32 must not wrap onto an earlier line.
  if (encoding == PositionEncoding::Utf8)
    return line.begin + std::min<uint32_t>(position.character, line.end - line.begin);
  uint32_t units = 0;
  uint32_t i = line.begin;
  while (i < line.end && units < position.character) {
    uint32_t n = sequenceLength(text, i);
    units += n == 4 ? 2 : 1;
    i += n;
  }
  return std::min(i, line.end);
}

protocol::Position toPosition(std::string_view text, const source::LineIndex& lines, uint32_t offset,
                              PositionEncoding encoding) {
  source::TextPoint p = lines.pointAt(offset);
  if (encoding == PositionEncoding::Utf8) return {p.line, p.column};
  uint32_t begin = lines.lineStart(p.line);
  uint32_t end = begin + p.column;
  uint32_t units = 0;
  for (uint32_t i = begin; i < end;) {
    uint32_t n = sequenceLength(text, i);
    units += n == 4 ? 2 : 1;
    i += n;
  }
  return {p.line, units};
}

protocol::Range toRange(std::string_view text, const source::LineIndex& lines, source::ByteRange range,
                        PositionEncoding encoding) {
  return {toPosition(text, lines, range.begin, encoding), toPosition(text, lines, range.end, encoding)};
}

}  // namespace sightline::server
