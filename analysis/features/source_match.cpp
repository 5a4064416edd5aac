// Function anchors of a profile checked against a file's defs.
#include "analysis/features/source_match.h"

#include <cstdlib>

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
                                             const source::LineTracker* tracker, const join::FileCosts* costs) {
  const std::string code = "profile-source-mismatch";
  if (!config.enabled(code)) return std::nullopt;
  Finding f;
  f.code = code;
  f.severity = config.severityOf(code);
  f.range = file.lines().lineRange(0);
  auto match = anchors.empty() ? SourceMatch{} : join::matchSource(file, index, anchors, profile, tracker);
  if (match.differs()) {
    f.message = sourceMismatchMessage(match, file_name);
  } else if (costs && costs->off_code_lines > 0) {
    f.message = file_name + " changed since it was profiled: " + std::to_string(costs->off_code_lines) +
                " of the profile's lines fall on no code of it (blank, comment or past its end), and their costs are "
                "not shown; profile it again for lines that match";
  } else if (costs && costs->realigned_by != 0) {
    int32_t n = std::abs(costs->realigned_by);
    f.severity = Severity::Information;
    f.message = file_name + " changed since it was profiled: its code moved " +
                (costs->realigned_by > 0 ? "down " : "up ") + std::to_string(n) + (n == 1 ? " line" : " lines") +
                " (the profile's function names and lines say so), and the costs are shown where it is now";
  } else {
    return std::nullopt;
  }
  return f;
}

}  // namespace sightline::features
