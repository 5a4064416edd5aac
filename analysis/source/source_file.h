// A Python file as text plus its tree-sitter syntax tree, kept in step through edits.
// Edits go through applyEdit only (ts_tree_edit + incremental reparse). Parsing always yields a
// tree, also for broken Python. The tree itself stays inside analysis/source.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "analysis/source/line_index.h"

struct TSTree;

namespace sightline::source {

// Empty when the linked Python grammar can be read by the linked tree-sitter library, else a
// message naming both ABI versions.
std::string checkGrammarCompatibility();

class SourceFile {
 public:
  explicit SourceFile(std::string text);
  ~SourceFile();
  SourceFile(SourceFile&&) noexcept;
  SourceFile& operator=(SourceFile&&) noexcept;
  SourceFile(const SourceFile&) = delete;
  SourceFile& operator=(const SourceFile&) = delete;

  const std::string& text() const { return text_; }
  const LineIndex& lines() const { return lines_; }

  // Replaces bytes [begin, old_end) with `replacement` and reparses incrementally.
  // Offsets past the end are clamped; begin > old_end is treated as an insertion at begin.
  void applyEdit(uint32_t begin, uint32_t old_end, std::string_view replacement);

  bool hasSyntaxErrors() const;
  // The tree as an S-expression: lets tests compare an edited tree with a fresh parse.
  std::string syntaxTreeString() const;

  // For analysis/source internals (the index walk); other layers never see TSTree.
  const TSTree* tree() const { return tree_; }

 private:
  void reparse(const TSTree* old_tree);

  std::string text_;
  LineIndex lines_;
  TSTree* tree_ = nullptr;
};

}  // namespace sightline::source
