// Open documents: text + tree (SourceFile), with the index and findings computed on demand
// and dropped on every change. LSP content changes are turned into byte edits here.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"
#include "protocol/lsp_types.h"
#include "server/lsp/position_conversion.h"
#include "server/platform/worker_pool.h"

namespace sightline::server {

class Document {
 public:
  // A large text is parsed in chunks on the server's worker pool.
  Document(std::string uri, int64_t version, std::string text)
      : uri_(std::move(uri)),
        version_(version),
        file_(std::move(text), /*chunked=*/true, &WorkerPool::shared()),
        lines_(file_.lines().lineCount()) {}

  const std::string& uri() const { return uri_; }
  int64_t version() const { return version_; }
  const source::SourceFile& file() const { return file_; }
  const source::SourceIndex& index();
  // Findings for `config`; recomputed after a change or when `config_generation` moves on.
  // Each rule runs for at most `budget_ms` (a `rules-stopped` finding says where one stopped).
  const std::vector<features::Finding>& findings(const features::RuleConfig& config, uint64_t config_generation,
                                                 double budget_ms = 0);
  // The rules the budget stopped in the last computation.
  const std::vector<features::StoppedRule>& stoppedRules() const { return stopped_; }

  // Where the lines of the text a profile measured are now (see LineTracker). The baseline is
  // the text at open, or at the last rebaseLines (a profile (re)load).
  const source::LineTracker& lineTracker() const { return lines_; }
  void rebaseLines() {
    lines_.reset(file_.lines().lineCount());
    ++line_generation_;
  }
  // Moves on with every change and every rebase: caches of remapped costs key on it.
  uint64_t lineGeneration() const { return line_generation_; }

  // Applies the changes in order; ranges are clamped to the text.
  void applyChanges(int64_t version, const std::vector<protocol::TextDocumentContentChangeEvent>& changes,
                    PositionEncoding encoding);

 private:
  std::string uri_;
  int64_t version_;
  source::SourceFile file_;
  source::LineTracker lines_;
  uint64_t line_generation_ = 0;
  std::optional<source::SourceIndex> index_;
  std::optional<source::SourceIndex> previous_index_;  // before the last change: seeds the next build
  std::optional<std::vector<features::Finding>> findings_;
  std::vector<features::StoppedRule> stopped_;
  uint64_t findings_generation_ = 0;
};

class DocumentStore {
 public:
  Document& open(const std::string& uri, int64_t version, std::string text);
  Document* find(const std::string& uri);
  bool close(const std::string& uri);
  std::vector<Document*> all();

 private:
  std::map<std::string, std::unique_ptr<Document>> documents_;
};

}  // namespace sightline::server
