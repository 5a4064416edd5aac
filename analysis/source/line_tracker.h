// Where the lines of a baseline text (the one a profile measured) are after edits: a line
// inserted above shifts them, a deleted line drops its own, an edited line keeps its place and
// is marked stale. Fed with the same byte edits as SourceFile, before they are applied.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/source/line_index.h"

namespace sightline::source {

class LineTracker {
 public:
  explicit LineTracker(uint32_t line_count = 0) { reset(line_count); }

  // The current text becomes the baseline.
  void reset(uint32_t line_count);

  // Bytes [begin, old_end) of the text that `before` indexes are replaced by `replacement`.
  void edit(const LineIndex& before, uint32_t begin, uint32_t old_end, std::string_view replacement);
  // The whole text is replaced (full-document sync): lines common to the start and the end of
  // both texts keep their origins, the lines between are paired off as edited.
  void replaceAll(std::string_view old_text, std::string_view new_text);
  // Every baseline line moves by `delta` (> 0: lines were added above them; < 0: the first
  // -delta lines were removed).
  void shift(int32_t delta);

  // 0-based current line of a 0-based baseline line; -1 when it was deleted.
  int32_t currentLine(uint32_t baseline_line) const;
  // 0-based baseline line of a current line; -1 for a line typed since.
  int32_t baselineLine(uint32_t current_line) const;
  // True when the current line came from the baseline but its text was edited.
  bool stale(uint32_t current_line) const;
  // True while the text is still the baseline, line for line.
  bool unchanged() const { return unchanged_; }

 private:
  void replaceLines(uint32_t first, uint32_t old_count, uint32_t new_count, bool pair_as_stale);

  std::vector<int32_t> origin_;  // per current line: its baseline line, or -1
  std::vector<uint8_t> stale_;   // per current line
  mutable std::vector<int32_t> current_of_baseline_;
  mutable bool inverse_valid_ = false;
  uint32_t baseline_lines_ = 0;
  bool unchanged_ = true;
};

}  // namespace sightline::source
