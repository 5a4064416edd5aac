#include "analysis/features/story.h"

#include <algorithm>

#include "analysis/features/units.h"

namespace sightline::features {

StoryLine& operator<<(StoryLine& line, StoryChunk chunk) {
  if (chunk.kind == StoryChunk::Kind::Text) {
    if (chunk.text.empty()) return line;
    if (!line.empty() && line.back().kind == StoryChunk::Kind::Text) {
      line.back().text += chunk.text;
      return line;
    }
  }
  line.push_back(std::move(chunk));
  return line;
}

StoryLine& operator<<(StoryLine& line, std::string_view text) { return line << StoryChunk::plain(std::string(text)); }

StoryLine& operator<<(StoryLine& line, const StoryLine& more) {
  for (const auto& c : more) line << c;
  return line;
}

StoryLine placedFigure(const join::PlacedLine& l, double divisor) {
  StoryLine out;
  out << StoryChunk::place(l.path, l.line) << " " << StoryChunk::ms(static_cast<double>(l.ns) / std::max(1.0, divisor));
  return out;
}

const char* rowRoleName(RowRole r) {
  switch (r) {
    case RowRole::Fact:
      return "fact";
    case RowRole::Cause:
      return "cause";
    case RowRole::Change:
      return "change";
    case RowRole::Warning:
      return "warning";
    case RowRole::Note:
      return "note";
  }
  return "fact";
}

StoryLine causeStory(const StepVerdict& v, const VerdictCause& c, bool first, size_t places) {
  StoryLine out;
  // Without the step measured, the causes are the capture's (its host slowed by the profiler).
  if (first && !v.unprofiled.wall_ns) out << "as captured: ";
  out << causeName(c.kind) + " " << StoryChunk::ms(c.ns) << " ms/step";
  if (c.measured) out << " measured without the profiler";
  // Fitted to the step without the profiler: the figure the step bars draw, beside it.
  if (auto captured = capturedFigure(v, c)) out << ", " << StoryChunk::ms(*captured) << " as captured";
  for (size_t i = 0; i < c.lines.size() && i < places; ++i)
    out << (i ? ", " : " (") << placedFigure(c.lines[i], std::max(1, v.steady));
  if (places > 0 && !c.lines.empty()) out << ")";
  return out;
}

std::string plainText(const StoryLine& line) {
  std::string out;
  for (const auto& c : line) {
    switch (c.kind) {
      case StoryChunk::Kind::Text:
      case StoryChunk::Kind::Code:
        out += c.text;
        break;
      case StoryChunk::Kind::Milliseconds:
        out += formatMilliseconds(c.value);
        break;
      case StoryChunk::Kind::Bytes:
        out += formatBytes(static_cast<int64_t>(c.value));
        break;
      case StoryChunk::Kind::Share:
        out += formatShare(c.value);
        break;
      case StoryChunk::Kind::Place:
        out += c.path.substr(c.path.find_last_of('/') + 1) + ":" + std::to_string(c.line);
        break;
      case StoryChunk::Kind::Delta:
        out += formatDelta(c.value);
        break;
      case StoryChunk::Kind::SignedBytes:
        out += formatSignedBytes(static_cast<int64_t>(c.value));
        break;
    }
  }
  return out;
}

const StoryRow* findRow(const Story& story, std::string_view label) {
  for (const auto& row : story)
    if (row.label == label) return &row;
  return nullptr;
}

StoryRow storyRow(std::string label, StoryLine line, RowRole role) {
  StoryRow r;
  r.label = std::move(label);
  r.role = role;
  r.line = std::move(line);
  return r;
}

}  // namespace sightline::features
