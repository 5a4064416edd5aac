// The story as typed chunks: text, a figure with its unit, a place (path:line). Built once here
// from the verdict's numbers and rendered at each edge: plain text for the terminal and the
// diagnostics (`plainText`), Markdown with links for the summary and hovers
// (server/render/story_markdown.h). A surface never formats a figure of the story itself, and
// never parses rendered text back. So far the verdict's causes are told this way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/features/step_verdict.h"

namespace sightline::features {

struct StoryChunk {
  enum class Kind : uint8_t { Text, Milliseconds, Place };
  Kind kind = Kind::Text;
  std::string text;  // Text
  double ns = 0;     // Milliseconds: the figure (units.h formats it)
  std::string path;  // Place: a placed path and its 1-based line
  int32_t line = 0;
};
using StoryLine = std::vector<StoryChunk>;

// One cause of the verdict: "host launch overhead 3.19 ms/step, 32.9 as captured (gpt.py:32
// 0.45, gpt.py:28 0.44)" — "as captured: " before the first cause where the causes are the
// capture's, the captured figure where the cause was fitted to the step without the profiler,
// and up to `places` of its lines with their part per step.
StoryLine causeStory(const StepVerdict& v, const VerdictCause& c, bool first, size_t places);

// The line as plain text: figures by units.h, places as `file:line` (the file's name alone).
std::string plainText(const StoryLine& line);

}  // namespace sightline::features
