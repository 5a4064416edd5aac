// LineTracker: line origins through edits. An edit touching lines [sl, el] becomes lines
// [sl, sl + k] (k newlines inserted). Whole-line edits (both ends at a line start, or both at a
// line end with the inserted text starting a new line) leave the neighbouring line untouched;
// any other edit marks the lines it touches stale, pairing old and new lines in order.
#include "analysis/source/line_tracker.h"

#include <algorithm>

namespace sightline::source {
namespace {

uint32_t newlines(std::string_view text) { return countLineEnds(text); }

bool endsLine(char c) { return c == '\n' || c == '\r'; }

// Lines as LineIndex reads them: "\n", "\r\n" and a lone "\r" end one.
std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t nl = text.find_first_of("\r\n", start);
    if (nl == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, nl - start));
    start = nl + (text[nl] == '\r' && nl + 1 < text.size() && text[nl + 1] == '\n' ? 2 : 1);
  }
}

}  // namespace

void LineTracker::reset(uint32_t line_count) {
  origin_.resize(line_count);
  for (uint32_t i = 0; i < line_count; ++i) origin_[i] = static_cast<int32_t>(i);
  stale_.assign(line_count, 0);
  baseline_lines_ = line_count;
  inverse_valid_ = false;
  unchanged_ = true;
}

void LineTracker::shift(int32_t delta) {
  if (delta > 0) replaceLines(0, 0, static_cast<uint32_t>(delta), false);
  if (delta < 0) replaceLines(0, static_cast<uint32_t>(-delta), 0, false);
}

void LineTracker::replaceLines(uint32_t first, uint32_t old_count, uint32_t new_count, bool pair_as_stale) {
  first = std::min<uint32_t>(first, static_cast<uint32_t>(origin_.size()));
  old_count = std::min<uint32_t>(old_count, static_cast<uint32_t>(origin_.size()) - first);
  std::vector<int32_t> origins(new_count, -1);
  std::vector<uint8_t> stale(new_count, 0);
  if (pair_as_stale) {
    for (uint32_t j = 0; j < std::min(old_count, new_count); ++j) {
      origins[j] = origin_[first + j];
      stale[j] = origins[j] >= 0;
    }
  }
  origin_.erase(origin_.begin() + first, origin_.begin() + first + old_count);
  stale_.erase(stale_.begin() + first, stale_.begin() + first + old_count);
  origin_.insert(origin_.begin() + first, origins.begin(), origins.end());
  stale_.insert(stale_.begin() + first, stale.begin(), stale.end());
  inverse_valid_ = false;
  unchanged_ = false;
}

void LineTracker::edit(const LineIndex& before, uint32_t begin, uint32_t old_end, std::string_view replacement) {
  if (begin == old_end && replacement.empty()) return;
  TextPoint start = before.pointAt(begin);
  TextPoint end = before.pointAt(old_end);
  uint32_t k = newlines(replacement);
  uint32_t removed = end.line - start.line;  // line breaks removed
  auto lineEnd = [&](uint32_t line) { return before.lineRange(line).end - before.lineStart(line); };
  bool whole_from_start = start.column == 0 && end.column == 0 && (replacement.empty() || endsLine(replacement.back()));
  bool whole_from_end = start.column == lineEnd(start.line) && end.column == lineEnd(end.line) &&
                        (replacement.empty() || endsLine(replacement.front()));
  if (whole_from_start) {
    // Lines [sl, el) replaced by k whole lines; line el moves, untouched.
    replaceLines(start.line, removed, k, true);
  } else if (whole_from_end) {
    // Lines (sl, el] replaced by k whole lines; line sl stays, untouched.
    replaceLines(start.line + 1, removed, k, true);
  } else {
    replaceLines(start.line, removed + 1, k + 1, true);
  }
}

void LineTracker::replaceAll(std::string_view old_text, std::string_view new_text) {
  auto old_lines = splitLines(old_text);
  auto new_lines = splitLines(new_text);
  size_t prefix = 0;
  while (prefix < old_lines.size() && prefix < new_lines.size() && old_lines[prefix] == new_lines[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < old_lines.size() - prefix && suffix < new_lines.size() - prefix &&
         old_lines[old_lines.size() - 1 - suffix] == new_lines[new_lines.size() - 1 - suffix])
    ++suffix;
  size_t old_middle = old_lines.size() - prefix - suffix;
  size_t new_middle = new_lines.size() - prefix - suffix;
  if (old_middle == 0 && new_middle == 0) return;
  replaceLines(static_cast<uint32_t>(prefix), static_cast<uint32_t>(old_middle), static_cast<uint32_t>(new_middle),
               true);
}

int32_t LineTracker::currentLine(uint32_t baseline_line) const {
  if (!inverse_valid_) {
    current_of_baseline_.assign(baseline_lines_, -1);
    for (size_t i = 0; i < origin_.size(); ++i)
      if (origin_[i] >= 0 && static_cast<uint32_t>(origin_[i]) < baseline_lines_)
        current_of_baseline_[static_cast<size_t>(origin_[i])] = static_cast<int32_t>(i);
    inverse_valid_ = true;
  }
  return baseline_line < current_of_baseline_.size() ? current_of_baseline_[baseline_line] : -1;
}

int32_t LineTracker::baselineLine(uint32_t current_line) const {
  return current_line < origin_.size() ? origin_[current_line] : -1;
}

bool LineTracker::stale(uint32_t current_line) const { return current_line < stale_.size() && stale_[current_line]; }

}  // namespace sightline::source
