// The story as typed chunks: text, code, a figure with its unit (milliseconds, bytes, a share), a
// place (path:line). Rows of them are built once here, from the numbers the features computed
// (the verdict, the job, the memory story, the profile's facts), and rendered at each edge
// (server/render/story_render.h): terminal columns, Markdown with links, JSON rows for the page
// and the panel, a diagnostic's message, the status line. A surface never formats a figure of the
// story itself, and never parses rendered text back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/features/step_verdict.h"

namespace sightline::features {

struct StoryChunk {
  enum class Kind : uint8_t { Text, Code, Milliseconds, Bytes, Share, Place, Delta, SignedBytes };
  Kind kind = Kind::Text;
  std::string text;  // Text; Code (a name from the program or a command, shown as code)
  // Milliseconds: ns (units.h formats it); Bytes: bytes; Share: a fraction of one; Delta: a change
  // in ns ("▲ +3.20 ms"); SignedBytes: a change in bytes ("+1.0 MiB").
  double value = 0;
  std::string path;  // Place: the path (a local file where the profile's maps onto one)
  int32_t line = 0;  // Place: 1-based

  static StoryChunk plain(std::string s) { return {Kind::Text, std::move(s), 0, "", 0}; }
  static StoryChunk code(std::string s) { return {Kind::Code, std::move(s), 0, "", 0}; }
  static StoryChunk ms(double ns) { return {Kind::Milliseconds, "", ns, "", 0}; }
  static StoryChunk bytes(int64_t n) { return {Kind::Bytes, "", static_cast<double>(n), "", 0}; }
  static StoryChunk share(double fraction) { return {Kind::Share, "", fraction, "", 0}; }
  static StoryChunk place(std::string path, int32_t line) { return {Kind::Place, "", 0, std::move(path), line}; }
  static StoryChunk delta(double ns) { return {Kind::Delta, "", ns, "", 0}; }
  static StoryChunk signedBytes(int64_t n) { return {Kind::SignedBytes, "", static_cast<double>(n), "", 0}; }
};
using StoryLine = std::vector<StoryChunk>;

// Appending: a string is a Text chunk (merged into a Text chunk before it).
StoryLine& operator<<(StoryLine& line, StoryChunk chunk);
StoryLine& operator<<(StoryLine& line, std::string_view text);
StoryLine& operator<<(StoryLine& line, const StoryLine& more);
// "train.py:33 2.05": a placed line and its figure in ms (ns / divisor).
StoryLine placedFigure(const join::PlacedLine& l, double divisor);

// What a row is to the reader: Markdown lists causes and numbers changes, the page colours warnings.
enum class RowRole : uint8_t {
  Fact,     // a label and what it says
  Cause,    // one cause of the step's idle or wait
  Change,   // a change to try
  Warning,  // something the capture lost or got wrong
  Note,     // a remark on the rows above
};
const char* rowRoleName(RowRole r);  // "fact", "cause", "change", "warning", "note"

// A table under a row (the ranks, a job's lines across ranks). `width` is the least a terminal
// column takes (cells wider than it push it); the first column is left-aligned where `left`.
struct StoryTable {
  struct Column {
    std::string name;
    bool left = false;
    size_t width = 0;
  };
  std::vector<Column> columns;
  std::vector<std::vector<StoryLine>> rows;  // cells, as many as columns
  StoryLine note;                            // under the table ("per rank over its steady steps: ...")
};

struct StoryRow {
  std::string label;  // "Step", "Try"; "" continues the row above
  RowRole role = RowRole::Fact;
  std::string title;      // where Markdown names the row otherwise ("Without the profiler"); "" = label
  std::string qualifier;  // said with the label ("as captured" for changes told from the capture)
  StoryLine line;
  std::optional<StoryTable> table;
};
using Story = std::vector<StoryRow>;

// A row of a label, its line and its role (a title, qualifier or table set after where needed).
StoryRow storyRow(std::string label, StoryLine line, RowRole role = RowRole::Fact);

// One cause of the verdict: "host launch overhead 3.19 ms/step, 32.9 as captured (gpt.py:32
// 0.45, gpt.py:28 0.44)" — "as captured: " before the first cause where the causes are the
// capture's, the captured figure where the cause was fitted to the step without the profiler,
// and up to `places` of its lines with their part per step.
StoryLine causeStory(const StepVerdict& v, const VerdictCause& c, bool first, size_t places);

// The line as plain text: figures by units.h, places as `file:line` (the file's name alone).
std::string plainText(const StoryLine& line);
// The first row labelled `label` (nullptr: none), for surfaces that show one row alone.
const StoryRow* findRow(const Story& story, std::string_view label);

}  // namespace sightline::features
