#include "server/render/story_render.h"

#include <filesystem>

#include "analysis/features/units.h"
#include "server/lsp/uri.h"
#include "server/render/markdown.h"

namespace sightline::server {
namespace {

using features::RowRole;
using features::Story;
using features::StoryChunk;
using features::StoryLine;
using features::StoryRow;
using nlohmann::json;

constexpr size_t kLabelColumn = 10;

// Terminal cells of UTF-8 text: code points, so bars, arrows and Σ count once.
size_t cells(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, size_t width, bool left) {
  size_t n = cells(s);
  if (n >= width) return s;
  return left ? s + std::string(width - n, ' ') : std::string(width - n, ' ') + s;
}

// "Step      ", "Unprofiled ", "Out of memory  ": a label in its column, or the column's indent.
std::string labelColumn(const StoryRow& row) {
  if (row.label.empty()) return std::string(kLabelColumn, ' ');
  if (cells(row.label) < kLabelColumn) return pad(row.label, kLabelColumn, true);
  // A longer label stands apart from its text: two spaces after one of several words.
  return row.label + (row.label.find(' ') != std::string::npos ? "  " : " ");
}

std::string chunkText(const StoryChunk& c) { return features::plainText({c}); }

// Cells padded to their columns' widths; a left-aligned column after the first stands two
// spaces apart from the right-aligned figures before it.
std::string terminalRow(const features::StoryTable& t, const std::vector<std::string>& texts) {
  std::string out = std::string(kLabelColumn, ' ');
  for (size_t i = 0; i < t.columns.size() && i < texts.size(); ++i)
    out += (i > 0 && t.columns[i].left ? "  " : "") + pad(texts[i], t.columns[i].width, t.columns[i].left);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "\n";
}

std::string terminalTable(const features::StoryTable& t) {
  std::vector<std::string> names;
  for (const auto& col : t.columns) names.push_back(col.name);
  std::string out = terminalRow(t, names);
  for (const auto& r : t.rows) {
    std::vector<std::string> texts;
    for (const auto& c : r) texts.push_back(features::plainText(c));
    out += terminalRow(t, texts);
  }
  if (!t.note.empty()) out += std::string(kLabelColumn, ' ') + features::plainText(t.note) + "\n";
  return out;
}

std::string markdownTable(const features::StoryTable& t) {
  std::string out = "|";
  std::string rule = "|";
  for (const auto& col : t.columns) {
    out += " " + md::text(col.name) + " |";
    rule += col.left ? "---|" : "---:|";
  }
  out += "\n" + rule + "\n";
  for (const auto& r : t.rows) {
    out += "|";
    for (size_t i = 0; i < t.columns.size(); ++i) out += " " + (i < r.size() ? storyMarkdown(r[i]) : "") + " |";
    out += "\n";
  }
  if (!t.note.empty()) out += "\n*" + storyMarkdown(t.note) + "*\n";
  return out;
}

std::string markdownLabel(const StoryRow& row) {
  std::string title = row.title.empty() ? row.label : row.title;
  if (title.empty()) return "";
  if (row.qualifier.empty()) return "**" + md::text(title) + ":**";
  return "**" + md::text(title) + "** (" + md::text(row.qualifier) + "):";
}

json partsJson(const StoryLine& line) {
  json out = json::array();
  for (const auto& c : line) {
    json part = {{"kind", c.kind == StoryChunk::Kind::Text    ? "text"
                          : c.kind == StoryChunk::Kind::Code  ? "code"
                          : c.kind == StoryChunk::Kind::Place ? "place"
                                                              : "figure"},
                 {"text", chunkText(c)}};
    if (c.kind == StoryChunk::Kind::Place) part["path"] = c.path, part["line"] = c.line;
    out.push_back(std::move(part));
  }
  return out;
}

}  // namespace

std::string terminalText(const Story& story) {
  std::string out;
  for (const auto& row : story) {
    out += labelColumn(row);
    if (!row.label.empty() && !row.qualifier.empty()) out += "(" + row.qualifier + ") ";
    out += features::plainText(row.line) + "\n";
    if (row.table) out += terminalTable(*row.table);
  }
  return out;
}

std::string storyMarkdown(const StoryLine& line) {
  std::string out;
  for (const auto& c : line) {
    switch (c.kind) {
      case StoryChunk::Kind::Text:
        out += md::text(c.text);
        break;
      case StoryChunk::Kind::Code:
        out += md::code(c.text);
        break;
      case StoryChunk::Kind::Place: {
        std::string name = std::filesystem::path(c.path).filename().string() + ":" + std::to_string(c.line);
        out += c.path.empty() || c.path.front() != '/'
                   ? md::code(name)
                   : md::link(name, pathToUri(c.path) + "#L" + std::to_string(c.line));
        break;
      }
      case StoryChunk::Kind::Milliseconds:
      case StoryChunk::Kind::Bytes:
      case StoryChunk::Kind::Share:
      case StoryChunk::Kind::Delta:
      case StoryChunk::Kind::SignedBytes:
        out += chunkText(c);
        break;
    }
  }
  return out;
}

std::string storyMarkdown(const Story& story) {
  std::string out;
  int numbered = 0;
  for (size_t i = 0; i < story.size(); ++i) {
    const auto& row = story[i];
    // A list (causes, changes) ends before the next row that is not of it.
    const auto& before = i > 0 ? story[i - 1].role : RowRole::Fact;
    if ((before == RowRole::Cause || before == RowRole::Change) && row.role != before) out += "\n";
    std::string line = storyMarkdown(row.line);
    switch (row.role) {
      case RowRole::Cause:
        out += "- " + line + "\n";
        break;
      case RowRole::Change:
        if (!row.label.empty()) out += markdownLabel(row) + "\n\n", numbered = 0;
        out += std::to_string(++numbered) + ". " + line + "\n";
        break;
      case RowRole::Note:
        out += "*" + line + "*\n\n";
        break;
      case RowRole::Warning:
        out += (row.label.empty() ? std::string("**Warning:**") : markdownLabel(row)) + " " + line + "\n\n";
        break;
      case RowRole::Fact: {
        std::string label = markdownLabel(row);
        out += (label.empty() ? "" : label + " ") + line + "\n\n";
        break;
      }
    }
    if (row.table) out += markdownTable(*row.table) + "\n";
  }
  if (!story.empty() && (story.back().role == RowRole::Cause || story.back().role == RowRole::Change)) out += "\n";
  return out;
}

json storyRowsJson(const Story& story) {
  json out = json::array();
  for (const auto& row : story) {
    json entry = {{"label", row.label},
                  {"role", features::rowRoleName(row.role)},
                  {"lines", json::array({features::plainText(row.line)})},
                  {"parts", json::array({partsJson(row.line)})}};
    if (!row.qualifier.empty()) entry["qualifier"] = row.qualifier;
    if (!row.title.empty()) entry["title"] = row.title;
    if (row.table) {
      const auto& t = *row.table;
      json columns = json::array(), rows = json::array();
      for (const auto& c : t.columns) columns.push_back({{"name", c.name}, {"left", c.left}});
      for (const auto& r : t.rows) {
        json cells_json = json::array();
        for (const auto& c : r) cells_json.push_back(features::plainText(c));
        rows.push_back(std::move(cells_json));
      }
      entry["table"] = {{"columns", columns}, {"rows", rows}, {"note", features::plainText(t.note)}};
    }
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace sightline::server
