// SourceFile: owns the text and the tree; the only place that calls ts_parser_parse/ts_tree_edit.
// It does not interpret the tree (source_index does).
#include "analysis/source/source_file.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

extern "C" const TSLanguage* tree_sitter_python();

namespace sightline::source {
namespace {

// One parser per thread: ts_parser objects are not thread-safe, and creating one is cheap but
// not free.
TSParser* threadParser() {
  thread_local struct Holder {
    TSParser* parser = nullptr;
    ~Holder() {
      if (parser) ts_parser_delete(parser);
    }
  } holder;
  if (!holder.parser) {
    holder.parser = ts_parser_new();
    ts_parser_set_language(holder.parser, tree_sitter_python());
  }
  return holder.parser;
}

TSPoint toTsPoint(TextPoint p) { return {p.line, p.column}; }

// Where `point` moves to after `text` is inserted at it.
TSPoint pointAfter(TSPoint start, std::string_view text) {
  TSPoint p = start;
  for (char c : text) {
    if (c == '\n') {
      ++p.row;
      p.column = 0;
    } else {
      ++p.column;
    }
  }
  return p;
}

}  // namespace

std::string checkGrammarCompatibility() {
  uint32_t version = ts_language_version(tree_sitter_python());
  if (version < TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION || version > TREE_SITTER_LANGUAGE_VERSION) {
    return "the Python grammar has tree-sitter ABI " + std::to_string(version) +
           ", but the tree-sitter library reads ABI " + std::to_string(TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION) +
           " to " + std::to_string(TREE_SITTER_LANGUAGE_VERSION) +
           "; rebuild with the pinned tree-sitter-python (analysis/source/grammar)";
  }
  return {};
}

SourceFile::SourceFile(std::string text, bool chunked, TaskRunner* runner)
    : text_(std::move(text)), lines_(text_), chunking_failed_(!chunked), runner_(runner) {
  refreshParseText();
  parseFresh();
}

void SourceFile::refreshParseText() {
  if (!hasLoneCarriageReturn(text_)) {
    parse_text_.clear();
    parse_text_.shrink_to_fit();
    return;
  }
  parse_text_ = text_;
  for (size_t i = 0; i < parse_text_.size(); ++i)
    if (parse_text_[i] == '\r' && (i + 1 == parse_text_.size() || parse_text_[i + 1] != '\n')) parse_text_[i] = '\n';
}

SourceFile::~SourceFile() { freeTrees(); }

SourceFile::SourceFile(SourceFile&& other) noexcept
    : text_(std::move(other.text_)),
      parse_text_(std::move(other.parse_text_)),
      lines_(std::move(other.lines_)),
      chunks_(std::move(other.chunks_)),
      chunking_failed_(other.chunking_failed_),
      runner_(other.runner_) {
  other.chunks_.clear();
}

SourceFile& SourceFile::operator=(SourceFile&& other) noexcept {
  if (this != &other) {
    freeTrees();
    text_ = std::move(other.text_);
    parse_text_ = std::move(other.parse_text_);
    lines_ = std::move(other.lines_);
    chunks_ = std::move(other.chunks_);
    chunking_failed_ = other.chunking_failed_;
    runner_ = other.runner_;
    other.chunks_.clear();
  }
  return *this;
}

void SourceFile::freeTrees() {
  for (auto& c : chunks_)
    if (c.tree) ts_tree_delete(c.tree);
  chunks_.clear();
}

void SourceFile::parseChunk(const std::string& text, const LineIndex& lines, Chunk& chunk, const TSTree* old_tree) {
  static std::atomic<uint64_t> next_id{1};
  chunk.id = next_id++;
  TSParser* parser = threadParser();
  bool whole = chunk.begin == 0 && chunk.end == text.size();
  if (!whole) {
    TSRange range{toTsPoint(lines.pointAt(chunk.begin)), toTsPoint(lines.pointAt(chunk.end)), chunk.begin, chunk.end};
    ts_parser_set_included_ranges(parser, &range, 1);
  }
  TSTree* tree = ts_parser_parse_string(parser, old_tree, text.data(), static_cast<uint32_t>(text.size()));
  if (!whole) ts_parser_set_included_ranges(parser, nullptr, 0);
  if (!tree) std::abort();  // only happens on cancellation or timeout, neither of which we set
  if (chunk.tree) ts_tree_delete(chunk.tree);
  chunk.tree = tree;
}

void SourceFile::parseWhole() {
  freeTrees();
  chunks_.push_back({0, static_cast<uint32_t>(text_.size()), nullptr});
  parseChunk(parseText(), lines_, chunks_[0], nullptr);
}

void SourceFile::parseFresh() {
  if (!chunking_failed_ && parseChunked()) return;
  bool tried = chunks_.size() > 1;
  parseWhole();
  // Chunks with errors in a clean file: a boundary inside a string. Do not chunk this one again.
  if (tried && !hasSyntaxErrors()) chunking_failed_ = true;
}

namespace {

// A line where a chunk may start: column 0, `def`/`class`/`async def`/a decorator, and not
// the definition under a decorator.
bool startsDefinition(std::string_view line) {
  return line.starts_with("def ") || line.starts_with("class ") || line.starts_with("async def ") ||
         line.starts_with("@");
}

// Whether the first line of `text` that holds code starts at column 0 (blank and comment
// lines skipped): then, after a clean chunk, it starts a top-level statement.
bool startsAtTopLevel(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    size_t first = line.find_first_not_of(" \t\r\f");
    if (first != std::string_view::npos && line[first] != '#') return first == 0;
    at = end + 1;
  }
  return true;
}

// Chunk starts: 0, then the first boundary line at least kChunkBytes after the previous start.
std::vector<uint32_t> chunkStarts(const std::string& text, const LineIndex& lines, uint32_t chunk_bytes) {
  std::vector<uint32_t> starts{0};
  bool previous_decorator = false;  // the last non-blank line was a column-0 decorator
  for (uint32_t line = 0; line < lines.lineCount(); ++line) {
    ByteRange r = lines.lineRange(line);
    std::string_view content(text.data() + r.begin, r.end - r.begin);
    if (content.empty()) continue;
    bool boundary = startsDefinition(content) && !previous_decorator;
    if (content[0] != ' ' && content[0] != '\t' && content[0] != '#') previous_decorator = content[0] == '@';
    if (boundary && r.begin >= starts.back() + chunk_bytes && text.size() - r.begin >= chunk_bytes / 2)
      starts.push_back(r.begin);
  }
  return starts;
}

}  // namespace

bool SourceFile::parseChunked() {
  if (text_.size() < 2 * kChunkBytes) return false;
  auto starts = chunkStarts(text_, lines_, kChunkBytes);
  if (starts.size() < 2) return false;
  freeTrees();
  for (size_t i = 0; i < starts.size(); ++i)
    chunks_.push_back(
        {starts[i], i + 1 < starts.size() ? starts[i + 1] : static_cast<uint32_t>(text_.size()), nullptr});
  // Chunks on the owner's cores when it lent some; each chunk has its own tree and parser.
  auto parseOne = [this](size_t i) { parseChunk(parseText(), lines_, chunks_[i], nullptr); };
  if (runner_) {
    runner_->runAll(chunks_.size(), parseOne);
  } else {
    for (size_t i = 0; i < chunks_.size(); ++i) parseOne(i);
  }
  return !hasSyntaxErrors();
}

void SourceFile::applyEdit(uint32_t begin, uint32_t old_end, std::string_view replacement) {
  auto size = static_cast<uint32_t>(text_.size());
  begin = std::min(begin, size);
  old_end = std::clamp(old_end, begin, size);

  TSInputEdit edit{};
  edit.start_byte = begin;
  edit.old_end_byte = old_end;
  edit.new_end_byte = begin + static_cast<uint32_t>(replacement.size());
  edit.start_point = toTsPoint(lines_.pointAt(begin));
  edit.old_end_point = toTsPoint(lines_.pointAt(old_end));
  edit.new_end_point = pointAfter(edit.start_point, replacement);

  // The chunk holding the edit (an insertion at a chunk's start belongs to that chunk).
  size_t c = 0;
  while (c + 1 < chunks_.size() && chunks_[c + 1].begin <= begin) ++c;
  bool within = old_end <= chunks_[c].end;

  text_.replace(begin, old_end - begin, replacement);
  lines_ = LineIndex(text_);
  // A lone "\r" before or after: tree-sitter reads another text; parse it afresh.
  bool had_lone_cr = !parse_text_.empty();
  refreshParseText();
  if (had_lone_cr || !parse_text_.empty()) {
    parseFresh();
    return;
  }
  if (chunks_.size() == 1) {
    ts_tree_edit(chunks_[0].tree, &edit);
    chunks_[0].end = static_cast<uint32_t>(text_.size());
    parseChunk(text_, lines_, chunks_[0], chunks_[0].tree);
    // A large file that parses cleanly again is chunked again, unless chunking it failed.
    if (!chunking_failed_ && text_.size() >= 2 * kChunkBytes && !hasSyntaxErrors()) parseFresh();
    return;
  }
  if (!within) {  // across chunks (a paste, a full replacement): parse afresh
    parseFresh();
    return;
  }
  int64_t delta = static_cast<int64_t>(replacement.size()) - static_cast<int64_t>(old_end - begin);
  for (size_t i = c; i < chunks_.size(); ++i) {
    ts_tree_edit(chunks_[i].tree, &edit);
    if (i > c) chunks_[i].begin = static_cast<uint32_t>(chunks_[i].begin + delta);
    chunks_[i].end = static_cast<uint32_t>(chunks_[i].end + delta);
  }
  parseChunk(text_, lines_, chunks_[c], chunks_[c].tree);
  // An error may reach past the chunk in the whole text: read it as tree-sitter reads the file.
  bool boundary_ok =
      c == 0 || startsAtTopLevel(std::string_view(text_).substr(chunks_[c].begin, chunks_[c].end - chunks_[c].begin));
  if (!boundary_ok || ts_node_has_error(ts_tree_root_node(chunks_[c].tree)) || chunks_[c].end == chunks_[c].begin)
    parseWhole();
}

bool SourceFile::hasSyntaxErrors() const {
  for (const auto& c : chunks_)
    if (ts_node_has_error(ts_tree_root_node(c.tree))) return true;
  return false;
}

std::string SourceFile::syntaxTreeString() const {
  std::string out = "(module";
  for (const auto& c : chunks_) {
    TSNode root = ts_tree_root_node(c.tree);
    for (uint32_t i = 0; i < ts_node_child_count(root); ++i) {
      TSNode child = ts_node_child(root, i);
      if (!ts_node_is_named(child)) continue;
      char* s = ts_node_string(child);
      out += " ";
      out += s;
      std::free(s);
    }
  }
  return out + ")";
}

}  // namespace sightline::source
