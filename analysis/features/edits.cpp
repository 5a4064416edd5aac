// Edit helpers. Everything works on byte offsets of the file's current text and never
// re-parses: callers that need to know the result is valid Python parse it themselves.
#include "analysis/features/edits.h"

#include <algorithm>

namespace sightline::features {

std::optional<std::string> applyEdits(std::string_view text, std::vector<TextEdit> edits) {
  std::stable_sort(edits.begin(), edits.end(),
                   [](const TextEdit& a, const TextEdit& b) { return a.range.begin < b.range.begin; });
  std::string out;
  out.reserve(text.size());
  uint32_t cursor = 0;
  for (const auto& e : edits) {
    if (e.range.begin < cursor || e.range.end < e.range.begin || e.range.end > text.size()) return std::nullopt;
    out.append(text.substr(cursor, e.range.begin - cursor));
    out.append(e.new_text);
    cursor = e.range.end;
  }
  out.append(text.substr(cursor));
  return out;
}

std::string lineIndentation(const source::SourceFile& file, uint32_t line) {
  ByteRange r = file.lines().lineRange(line);
  uint32_t end = r.begin;
  while (end < r.end && (file.text()[end] == ' ' || file.text()[end] == '\t')) ++end;
  return file.text().substr(r.begin, end - r.begin);
}

TextEdit setKeywordArgument(const source::SourceFile& file, const source::CallInfo& call, std::string_view keyword,
                            std::string_view value) {
  for (const auto& arg : call.args)
    if (arg.keyword == keyword) return {arg.value, std::string(value)};
  std::string kw = std::string(keyword) + "=" + std::string(value);
  if (call.args.empty()) return {{call.arguments.begin + 1, call.arguments.begin + 1}, kw};
  const auto& last = call.args.back();
  const auto& lines = file.lines();
  uint32_t paren_line = lines.pointAt(call.arguments.begin).line;
  uint32_t last_line = lines.pointAt(last.range.begin).line;
  bool one_per_line = last_line != paren_line;
  if (call.args.size() > 1)
    one_per_line = one_per_line && lines.pointAt(call.args[call.args.size() - 2].range.begin).line != last_line;
  if (one_per_line) return {{last.range.end, last.range.end}, ",\n" + lineIndentation(file, last_line) + kw};
  return {{last.range.end, last.range.end}, ", " + kw};
}

TextEdit removeArgument(const source::SourceFile&, const source::CallInfo& call, size_t arg) {
  const auto& args = call.args;
  if (args.size() == 1) return {{call.arguments.begin + 1, call.arguments.end - 1}, ""};
  if (arg + 1 < args.size()) return {{args[arg].range.begin, args[arg + 1].range.begin}, ""};
  return {{args[arg - 1].range.end, args[arg].range.end}, ""};
}

ImportEdit ensureImport(const source::SourceFile& file, const source::SourceIndex& index, std::string_view module) {
  for (const auto& imp : index.imports)
    if (imp.qualified_name == module) return {imp.local_name, std::nullopt};
  std::string line = "import " + std::string(module) + "\n";
  // After the module docstring and the leading run of imports.
  int last_header = -1;
  for (int s : index.blocks.at(0).statements) {
    const auto& st = index.statements[static_cast<size_t>(s)];
    bool is_import =
        st.kind == "import_statement" || st.kind == "import_from_statement" || st.kind == "future_import_statement";
    bool is_docstring = last_header < 0 && st.kind == "expression_statement" &&
                        (file.text()[st.range.begin] == '"' || file.text()[st.range.begin] == '\'');
    if (!is_import && !is_docstring) break;
    last_header = s;
  }
  if (last_header < 0) return {std::string(module), TextEdit{{0, 0}, line}};
  uint32_t after = index.statements[static_cast<size_t>(last_header)].last_line + 1;
  if (after >= file.lines().lineCount() || file.lines().lineStart(after) >= file.text().size()) {
    auto end = static_cast<uint32_t>(file.text().size());
    bool ends_with_newline = !file.text().empty() && file.text().back() == '\n';
    return {std::string(module),
            TextEdit{{end, end}, ends_with_newline ? line : "\n" + line.substr(0, line.size() - 1)}};
  }
  uint32_t at = file.lines().lineStart(after);
  return {std::string(module), TextEdit{{at, at}, line}};
}

std::string indentUnit(const source::SourceFile& file, const source::SourceIndex& index) {
  for (size_t b = 1; b < index.blocks.size(); ++b) {
    const auto& block = index.blocks[b];
    if (block.owner_statement < 0 || block.statements.empty()) continue;
    const auto& owner = index.statements[static_cast<size_t>(block.owner_statement)];
    const auto& first = index.statements[static_cast<size_t>(block.statements.front())];
    if (first.first_line == owner.first_line || first.indent <= owner.indent) continue;
    std::string inner = lineIndentation(file, first.first_line);
    std::string outer = lineIndentation(file, owner.first_line);
    if (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0) return inner.substr(outer.size());
  }
  return "    ";
}

}  // namespace sightline::features
