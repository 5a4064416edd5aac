#include "analysis/features/story.h"

#include "analysis/features/units.h"

namespace sightline::features {
namespace {

StoryChunk text(std::string s) { return {StoryChunk::Kind::Text, std::move(s), 0, "", 0}; }
StoryChunk milliseconds(double ns) { return {StoryChunk::Kind::Milliseconds, "", ns, "", 0}; }
StoryChunk place(const join::PlacedLine& l) { return {StoryChunk::Kind::Place, "", 0, l.path, l.line}; }

}  // namespace

StoryLine causeStory(const StepVerdict& v, const VerdictCause& c, bool first, size_t places) {
  StoryLine out;
  // Without the step measured, the causes are the capture's (its host slowed by the profiler).
  if (first && !v.unprofiled.wall_ns) out.push_back(text("as captured: "));
  out.push_back(text(causeName(c.kind) + " "));
  out.push_back(milliseconds(c.ns));
  out.push_back(text(" ms/step"));
  // Fitted to the step without the profiler: the figure the step bars draw, beside it.
  if (auto captured = capturedFigure(v, c)) {
    out.push_back(text(", "));
    out.push_back(milliseconds(*captured));
    out.push_back(text(" as captured"));
  }
  for (size_t i = 0; i < c.lines.size() && i < places; ++i) {
    out.push_back(text(i ? ", " : " ("));
    out.push_back(place(c.lines[i]));
    out.push_back(text(" "));
    out.push_back(milliseconds(static_cast<double>(c.lines[i].ns) / std::max(1, v.steady)));
  }
  if (places > 0 && !c.lines.empty()) out.push_back(text(")"));
  return out;
}

std::string plainText(const StoryLine& line) {
  std::string out;
  for (const auto& c : line) {
    switch (c.kind) {
      case StoryChunk::Kind::Text:
        out += c.text;
        break;
      case StoryChunk::Kind::Milliseconds:
        out += formatMilliseconds(c.ns);
        break;
      case StoryChunk::Kind::Place:
        out += c.path.substr(c.path.find_last_of('/') + 1) + ":" + std::to_string(c.line);
        break;
    }
  }
  return out;
}

}  // namespace sightline::features
