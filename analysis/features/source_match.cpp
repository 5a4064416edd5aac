// Function anchors of a profile checked against a file's defs.
#include "analysis/features/source_match.h"

namespace sightline::features {
std::string sourceMismatchMessage(const SourceMatch& match, const std::string& file_name) {
  if (!match.differs()) return {};
  return file_name + " differs from the source the profile measured: " + std::to_string(match.mismatched) + " of " +
         std::to_string(match.checked) + " profiled lines are not where the profile saw them (" + match.example +
         "); line costs may be on the wrong lines. Profile again, or open the version that was profiled.";
}

std::optional<Finding> sourceMismatchFinding(const source::SourceFile& file, const source::SourceIndex& index,
                                             const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                                             const RuleConfig& config, const std::string& file_name,
                                             const source::LineTracker* tracker) {
  const std::string code = "profile-source-mismatch";
  if (!config.enabled(code) || anchors.empty()) return std::nullopt;
  auto match = join::matchSource(file, index, anchors, profile, tracker);
  if (!match.differs()) return std::nullopt;
  Finding f;
  f.code = code;
  f.severity = config.severityOf(code);
  f.range = file.lines().lineRange(0);
  f.message = sourceMismatchMessage(match, file_name);
  return f;
}

}  // namespace sightline::features
