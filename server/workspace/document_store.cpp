// Document bookkeeping; all text edits go through SourceFile::applyEdit (one incremental path).
#include "server/workspace/document_store.h"

#include <algorithm>
#include <chrono>

namespace sightline::server {

const source::SourceIndex& Document::index() {
  if (!index_) {
    index_ = previous_index_ ? source::buildSourceIndex(file_, std::move(*previous_index_))
                             : source::buildSourceIndex(file_);
    previous_index_.reset();
  }
  return *index_;
}

const std::vector<features::Finding>& Document::findings(const features::RuleConfig& config, uint64_t config_generation,
                                                         double budget_ms) {
  if (!findings_ || findings_generation_ != config_generation) {
    features::RuleBudget budget;
    if (budget_ms > 0) {
      budget.per_rule_ns = static_cast<int64_t>(budget_ms * 1e6);
      budget.now = [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
      };
    }
    auto run = features::computeDiagnostics(file_, index(), config, budget);
    if (auto stopped = features::rulesStoppedFinding(run.stopped, config)) {
      auto at = std::lower_bound(run.findings.begin(), run.findings.end(), stopped->range.begin,
                                 [](const features::Finding& f, uint32_t b) { return f.range.begin < b; });
      run.findings.insert(at, std::move(*stopped));
    }
    findings_ = std::move(run.findings);
    stopped_ = std::move(run.stopped);
    findings_generation_ = config_generation;
  }
  return *findings_;
}

void Document::applyChanges(int64_t version, const std::vector<protocol::TextDocumentContentChangeEvent>& changes,
                            PositionEncoding encoding) {
  for (const auto& change : changes) {
    const auto& text = file_.text();
    if (!change.range) {
      lines_.replaceAll(text, change.text);
      file_.applyEdit(0, static_cast<uint32_t>(text.size()), change.text);
      continue;
    }
    uint32_t begin = toOffset(text, file_.lines(), change.range->start, encoding);
    uint32_t end = toOffset(text, file_.lines(), change.range->end, encoding);
    if (end < begin) std::swap(begin, end);
    // Beside a "\r" the edit may join or split a "\r\n": compare the lines whole.
    bool beside_cr = (begin > 0 && text[begin - 1] == '\r') || (!change.text.empty() && change.text.back() == '\r');
    if (beside_cr)
      lines_.replaceAll(text, text.substr(0, begin) + change.text + text.substr(end));
    else
      lines_.edit(file_.lines(), begin, end, change.text);
    file_.applyEdit(begin, end, change.text);
  }
  version_ = version;
  ++line_generation_;
  if (index_) previous_index_ = std::move(index_);
  index_.reset();
  findings_.reset();
}

Document& DocumentStore::open(const std::string& uri, int64_t version, std::string text) {
  auto doc = std::make_unique<Document>(uri, version, std::move(text));
  Document& ref = *doc;
  documents_[uri] = std::move(doc);
  return ref;
}

Document* DocumentStore::find(const std::string& uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : it->second.get();
}

bool DocumentStore::close(const std::string& uri) { return documents_.erase(uri) > 0; }

std::vector<Document*> DocumentStore::all() {
  std::vector<Document*> out;
  for (auto& [uri, doc] : documents_) out.push_back(doc.get());
  return out;
}

}  // namespace sightline::server
