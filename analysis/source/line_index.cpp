// LineIndex: one pass over the text records where lines start and where their content ends.
#include "analysis/source/line_index.h"

#include <algorithm>

namespace sightline::source {

bool hasLoneCarriageReturn(std::string_view text) {
  for (size_t at = text.find('\r'); at != std::string_view::npos; at = text.find('\r', at + 1))
    if (at + 1 == text.size() || text[at + 1] != '\n') return true;
  return false;
}

uint32_t countLineEnds(std::string_view text) {
  uint32_t n = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) ++n;
  return n;
}

LineIndex::LineIndex(std::string_view text) : size_(static_cast<uint32_t>(text.size())) {
  starts_.push_back(0);
  // "\n", "\r\n" and a lone "\r" each end a line, as LSP counts them.
  for (uint32_t i = 0; i < size_; ++i) {
    if (text[i] == '\n') {
      content_ends_.push_back(i > 0 && text[i - 1] == '\r' ? i - 1 : i);
      starts_.push_back(i + 1);
    } else if (text[i] == '\r' && (i + 1 == size_ || text[i + 1] != '\n')) {
      content_ends_.push_back(i);
      starts_.push_back(i + 1);
    }
  }
  content_ends_.push_back(size_);
}

TextPoint LineIndex::pointAt(uint32_t offset) const {
  offset = std::min(offset, size_);
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  auto line = static_cast<uint32_t>(it - starts_.begin()) - 1;
  return {line, offset - starts_[line]};
}

uint32_t LineIndex::offsetAt(TextPoint point) const {
  if (point.line >= starts_.size()) return size_;
  uint32_t start = starts_[point.line];
  uint32_t end = content_ends_[point.line];
  return std::min(start + point.column, end);
}

ByteRange LineIndex::lineRange(uint32_t line) const {
  if (line >= starts_.size()) return {size_, size_};
  return {starts_[line], content_ends_[line]};
}

uint32_t LineIndex::lineStart(uint32_t line) const { return line >= starts_.size() ? size_ : starts_[line]; }

}  // namespace sightline::source
