// A Python file as text plus its tree-sitter syntax trees, kept in step through edits.
// Edits go through applyEdit only (ts_tree_edit + incremental reparse). Parsing always yields
// trees, also for broken Python. The trees stay inside analysis/source.
//
// A large file is parsed as chunks: runs of top-level statements (each starting at column 0
// with `def`, `class`, `async def` or a decorator), one tree per chunk over its byte range
// (ts_parser_set_included_ranges, so positions stay absolute), parsed on all cores. An
// error-free chunk parses exactly as the same bytes inside the whole file would. When a chunk
// has errors the file falls back to one tree for the whole text (and is chunked again once the
// whole text parses cleanly), so a broken file reads exactly as tree-sitter reads it. An edit
// inside one chunk reparses only that chunk.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/source/line_index.h"
#include "analysis/source/task_runner.h"

struct TSTree;

namespace sightline::source {

// Empty when the linked Python grammar can be read by the linked tree-sitter library, else a
// message naming both ABI versions.
std::string checkGrammarCompatibility();

class SourceFile {
 public:
  // `chunked` false: always one tree for the whole text (tests compare the two). Chunks are
  // parsed through `runner` (kept for later re-chunking; it must outlive the file), else one
  // after the other on the calling thread.
  explicit SourceFile(std::string text, bool chunked = true, TaskRunner* runner = nullptr);
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
  // The tree as an S-expression (one `module` over all chunks): lets tests compare an edited
  // tree with a fresh parse.
  std::string syntaxTreeString() const;

  // For analysis/source internals (the index walk); other layers never see TSTree.
  // The chunks' trees in text order; their top-level children are the module's statements.
  size_t treeCount() const { return chunks_.size(); }
  const TSTree* tree(size_t chunk) const { return chunks_[chunk].tree; }
  ByteRange chunkRange(size_t chunk) const { return {chunks_[chunk].begin, chunks_[chunk].end}; }
  // Changes whenever the chunk's text changes (unique across files): a chunk with the same id
  // as before an edit holds the same text, perhaps at a shifted offset.
  uint64_t chunkId(size_t chunk) const { return chunks_[chunk].id; }

  // Files at least this large are parsed as chunks of about this size.
  static constexpr uint32_t kChunkBytes = 16 * 1024;

 private:
  struct Chunk {
    uint32_t begin = 0;
    uint32_t end = 0;
    TSTree* tree = nullptr;
    uint64_t id = 0;
  };
  void parseFresh();
  bool parseChunked();
  void parseWhole();
  static void parseChunk(const std::string& text, const LineIndex& lines, Chunk& chunk, const TSTree* old_tree);
  void freeTrees();
  void refreshParseText();
  const std::string& parseText() const { return parse_text_.empty() ? text_ : parse_text_; }

  std::string text_;
  // text_ with each lone "\r" as "\n" (same offsets): tree-sitter ends lines at "\n" only, LSP
  // at a lone "\r" too. Empty when the text has none (the usual case: no copy).
  std::string parse_text_;
  LineIndex lines_;
  std::vector<Chunk> chunks_;     // contiguous, covering the whole text
  bool chunking_failed_ = false;  // a clean text whose chunks had errors: parse it whole
  TaskRunner* runner_ = nullptr;  // not owned; null: parse on the calling thread
};

}  // namespace sightline::source
