// Function anchors of a profile checked against a file's defs.
#include "analysis/join/function_anchors.h"

#include <algorithm>
#include <set>

namespace sightline::join {
namespace {

bool checkable(const std::string& function) {
  // `<module>` is checked by line count only; `<lambda>`, `<listcomp>`, ... have no def, nor
  // the functions torch.compile's Dynamo makes to resume after a graph break
  // (`torch_dynamo_resume_in_forward_at_22`: lines of `forward`).
  if (function.starts_with("torch_dynamo_resume_in_")) return false;
  return !function.empty() && (function[0] != '<' || function == "<module>");
}

// First line of a def counting its decorators (a traced frame of a decorated function starts
// at the first decorator).
uint32_t firstLineWithDecorators(const source::SourceFile& file, uint32_t def_line) {
  while (def_line > 0) {
    auto r = file.lines().lineRange(def_line - 1);
    std::string_view text(file.text().data() + r.begin, r.end - r.begin);
    size_t first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos || text[first] != '@') break;
    --def_line;
  }
  return def_line;
}

}  // namespace

std::map<model::StringId, std::vector<FunctionAnchor>> collectFunctionAnchors(const model::Profile& profile) {
  std::map<model::StringId, std::set<std::pair<model::StringId, int32_t>>> seen;
  for (const auto& f : profile.frames)
    if (f.line > 0) seen[f.file].insert({f.function, f.line});
  for (const auto& c : profile.calls)
    if (c.kind == model::CallKind::Function && c.line > 0) seen[c.file].insert({c.function, c.line});
  std::map<model::StringId, std::vector<FunctionAnchor>> out;
  for (const auto& [file, pairs] : seen) {
    auto& v = out[file];
    for (const auto& [function, line] : pairs) v.push_back({function, line});
  }
  return out;
}

SourceMatch matchSource(const source::SourceFile& file, const source::SourceIndex& index,
                        const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                        const source::LineTracker* tracker) {
  SourceMatch out;
  uint32_t line_count = file.lines().lineCount();
  for (const auto& a : anchors) {
    const std::string& function = profile.strings[a.function];
    if (!checkable(function)) continue;
    int32_t line = a.line - 1;  // 0-based, current
    if (tracker && !tracker->unchanged()) {
      line = tracker->currentLine(static_cast<uint32_t>(line));
      if (line < 0 || tracker->stale(static_cast<uint32_t>(line))) continue;  // edited in the editor
    }
    ++out.checked;
    bool ok = false;
    if (line >= 0 && static_cast<uint32_t>(line) < line_count) {
      if (function == "<module>") {
        ok = true;
      } else {
        auto l = static_cast<uint32_t>(line);
        ok = std::any_of(index.functions.begin(), index.functions.end(), [&](const source::FunctionInfo& f) {
          return f.name == function && firstLineWithDecorators(file, f.def_line) <= l && l <= f.end_line;
        });
      }
    }
    if (!ok) {
      ++out.mismatched;
      if (out.example.empty())
        out.example = static_cast<uint32_t>(std::max(line, 0)) >= line_count
                          ? "line " + std::to_string(a.line) + " is past the end of the file"
                          : "line " + std::to_string(line + 1) + " is not in `" + function + "`";
    }
  }
  return out;
}

}  // namespace sightline::join
