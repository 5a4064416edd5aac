// SourceFile: owns the text and the tree; the only place that calls ts_parser_parse/ts_tree_edit.
// It does not interpret the tree (source_index does).
#include "analysis/source/source_file.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cstdlib>

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

SourceFile::SourceFile(std::string text) : text_(std::move(text)), lines_(text_) { reparse(nullptr); }

SourceFile::~SourceFile() {
  if (tree_) ts_tree_delete(tree_);
}

SourceFile::SourceFile(SourceFile&& other) noexcept
    : text_(std::move(other.text_)), lines_(std::move(other.lines_)), tree_(other.tree_) {
  other.tree_ = nullptr;
}

SourceFile& SourceFile::operator=(SourceFile&& other) noexcept {
  if (this != &other) {
    if (tree_) ts_tree_delete(tree_);
    text_ = std::move(other.text_);
    lines_ = std::move(other.lines_);
    tree_ = other.tree_;
    other.tree_ = nullptr;
  }
  return *this;
}

void SourceFile::reparse(const TSTree* old_tree) {
  TSTree* tree = ts_parser_parse_string(threadParser(), old_tree, text_.data(), static_cast<uint32_t>(text_.size()));
  if (!tree) std::abort();  // only happens on cancellation or timeout, neither of which we set
  if (tree_) ts_tree_delete(tree_);
  tree_ = tree;
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

  text_.replace(begin, old_end - begin, replacement);
  lines_ = LineIndex(text_);
  ts_tree_edit(tree_, &edit);
  reparse(tree_);
}

bool SourceFile::hasSyntaxErrors() const { return ts_node_has_error(ts_tree_root_node(tree_)); }

std::string SourceFile::syntaxTreeString() const {
  char* s = ts_node_string(ts_tree_root_node(tree_));
  std::string out(s);
  std::free(s);
  return out;
}

}  // namespace sightline::source
