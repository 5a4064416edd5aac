// Static GPU-performance diagnostics: one pass of every enabled rule over a source index.
// Pure: no IO, no LSP types. Ranges are byte offsets; fixes carry their edits.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/edits.h"
#include "analysis/features/rules.h"
#include "analysis/join/loader_settings.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

struct Fix {
  std::string title;
  std::vector<TextEdit> edits;
  bool preferred = false;
};

// A line elsewhere that a finding points to (the lines holding memory at an out-of-memory error).
struct RelatedLine {
  std::string path;  // local path (or the profile's, when it maps onto no local file)
  int32_t line = 0;  // 1-based
  std::string message;
};

struct Finding {
  std::string code;
  Severity severity = Severity::Warning;
  ByteRange range;  // the exact call or expression
  std::string message;
  std::vector<Fix> fixes;
  std::vector<RelatedLine> related;
};

// Findings in source order, suppressed ones (`# sightline: ignore[code]`) left out.
std::vector<Finding> computeDiagnostics(const source::SourceFile& file, const source::SourceIndex& index,
                                        const RuleConfig& config);

// A time budget for each rule of one run, so that no rule can hold its caller (the server's
// thread) for long on a huge file: a rule that has used its budget stops where it is, its
// findings so far kept. `now` reads a monotonic clock in nanoseconds (tests pass their own).
struct RuleBudget {
  int64_t per_rule_ns = 0;  // 0: no limit
  std::function<int64_t()> now;
};

// A rule the budget stopped: its codes, how long it ran, and the first byte it did not check.
struct StoppedRule {
  std::string codes;  // "sync-in-loop", or "dataloader-pin-memory, dataloader-num-workers"
  int64_t used_ns = 0;
  uint32_t stopped_at = 0;
};

struct DiagnosticsRun {
  std::vector<Finding> findings;
  std::vector<StoppedRule> stopped;
};

DiagnosticsRun computeDiagnostics(const source::SourceFile& file, const source::SourceIndex& index,
                                  const RuleConfig& config, const RuleBudget& budget);

// The `rules-stopped` finding (Information, where the first stopped rule stopped) that tells the
// user the findings are incomplete; nullopt when no rule stopped or the rule is off.
std::optional<Finding> rulesStoppedFinding(const std::vector<StoppedRule>& stopped, const RuleConfig& config);

// A call's keyword argument (null: not given); whether it passes `*args`/`**kwargs`; whether it
// makes a torch.utils.data.DataLoader (join/loader_settings.h).
using join::hasSplat;
using join::isDataLoaderCall;
using join::keywordArg;

// True when a `# sightline: ignore` / `# sightline: ignore[a, b]` comment on one of the
// range's lines names `code` (or names nothing).
bool isSuppressed(const source::SourceFile& file, const source::SourceIndex& index, ByteRange range,
                  std::string_view code);

}  // namespace sightline::features
