// `sightline diff`'s renderers: the one features::RunDiff as text, Markdown, HTML and JSON
// (server/cli/diff_command.cpp reads the runs, compares them and writes SARIF).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/features/regression.h"

namespace sightline::server::diff {

// What a rendering shows: the runs as given (bases, then the new one), and how many lines.
struct DiffPage {
  std::vector<std::string> inputs;
  std::string format = "text";
  size_t lines = 10;  // SIZE_MAX: all
  // How the reader asks for every line, for a gate, and compares with several base runs (the
  // MCP tool words them by its arguments).
  std::string more = "--lines 0";
  std::string gate_hint = "add --fail-on (step:+5%,line:+1ms, say) to gate";
  std::string several_hint = "give several (docs/ci.md)";
};

void writeDiffText(const features::RunDiff& d, const DiffPage& page, std::ostream& out);
void writeDiffMarkdown(const features::RunDiff& d, const DiffPage& page, std::ostream& out);
// One self-contained page: the runs' step bars side by side, then the parts, lines and gate.
void writeDiffHtml(const features::RunDiff& d, const DiffPage& page, std::ostream& out);
nlohmann::json diffJson(const features::RunDiff& d, const DiffPage& page);

// Text a summary carried (a line's source, a path, a kernel's name) on one line: line breaks
// and tabs as spaces, other control characters as U+FFFD, bidirectional controls dropped.
std::string inert(const std::string& s);
std::string markdownCell(const std::string& raw);  // inert, and escaped for a table cell
// "+0.79 ms", "-1.20 ms"; "+1.2%"; "+0.10 ms .. +0.30 ms" (an interval, or why there is none).
std::string signedMs(double ns);
std::string signedPercent(double share);
std::string interval(const features::MedianChange& c);
// A line's notes: it now synchronizes more often; its costliest kernel changed ("" if not).
std::string syncNote(const features::LineChange& l);
std::string kernelNote(const features::LineChange& l);

}  // namespace sightline::server::diff
