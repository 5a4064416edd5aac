// Text edits over a SourceFile, and the helpers fixes and code actions build them with
// (adding a keyword argument, adding an import, re-indenting lines). Offsets are bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/source/source_index.h"

namespace sightline::features {

using source::ByteRange;

struct TextEdit {
  ByteRange range;  // bytes replaced
  std::string new_text;
  friend bool operator==(const TextEdit&, const TextEdit&) = default;
};

// Applies non-overlapping edits (any order) to `text`; overlapping edits are a caller bug and
// give nullopt rather than garbage.
std::optional<std::string> applyEdits(std::string_view text, std::vector<TextEdit> edits);

// `keyword=value` added to the call (after its last argument, on its own line when the
// arguments are one per line), or the existing keyword's value replaced.
TextEdit setKeywordArgument(const source::SourceFile& file, const source::CallInfo& call, std::string_view keyword,
                            std::string_view value);

// The edit that deletes one argument of a call together with its separating comma.
TextEdit removeArgument(const source::SourceFile& file, const source::CallInfo& call, size_t arg);

// `import module` after the file's leading imports, unless `module` is already bound as a
// name. Returns the name to use for the module (the existing alias when there is one).
struct ImportEdit {
  std::string name;
  std::optional<TextEdit> edit;
};
ImportEdit ensureImport(const source::SourceFile& file, const source::SourceIndex& index, std::string_view module);

// The indentation unit the file uses ("    " when it cannot tell).
std::string indentUnit(const source::SourceFile& file, const source::SourceIndex& index);
// The leading whitespace of a line.
std::string lineIndentation(const source::SourceFile& file, uint32_t line);

}  // namespace sightline::features
