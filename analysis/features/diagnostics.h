// Static GPU-performance diagnostics: one pass of every enabled rule over a source index.
// Pure: no IO, no LSP types. Ranges are byte offsets; fixes carry their edits.
#pragma once

#include <string>
#include <vector>

#include "analysis/features/edits.h"
#include "analysis/features/rules.h"
#include "analysis/source/source_index.h"

namespace sightline::features {

struct Fix {
  std::string title;
  std::vector<TextEdit> edits;
  bool preferred = false;
};

struct Finding {
  std::string code;
  Severity severity = Severity::Warning;
  ByteRange range;  // the exact call or expression
  std::string message;
  std::vector<Fix> fixes;
};

// Findings in source order, suppressed ones (`# sightline: ignore[code]`) left out.
std::vector<Finding> computeDiagnostics(const source::SourceFile& file, const source::SourceIndex& index,
                                        const RuleConfig& config);

// A call's keyword argument (null: not given); whether it passes `*args`/`**kwargs`; whether it
// makes a torch.utils.data.DataLoader.
const source::Argument* keywordArg(const source::CallInfo& call, std::string_view keyword);
bool hasSplat(const source::CallInfo& call);
bool isDataLoaderCall(const source::CallInfo& call);

// True when a `# sightline: ignore` / `# sightline: ignore[a, b]` comment on one of the
// range's lines names `code` (or names nothing).
bool isSuppressed(const source::SourceFile& file, const source::SourceIndex& index, ByteRange range,
                  std::string_view code);

}  // namespace sightline::features
