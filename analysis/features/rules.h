// The static rules: their codes (part of the interface; users filter on them), default
// severities, and the per-rule configuration a caller passes to computeDiagnostics.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::features {

enum class Severity { Error = 1, Warning = 2, Information = 3, Hint = 4 };

struct RuleInfo {
  std::string_view code;
  Severity default_severity;
  std::string_view summary;  // one line, for --help and docs
  std::string_view why;      // why it costs (hover on the diagnostic)
  std::string_view fix;      // what to do about it
};

const std::vector<RuleInfo>& allRules();
const RuleInfo* findRule(std::string_view code);

// "error", "warning", "information" (or "info"), "hint"; nullopt otherwise.
std::optional<Severity> parseSeverity(std::string_view name);
std::string_view severityName(Severity severity);

struct RuleSetting {
  bool enabled = true;
  std::optional<Severity> severity;  // nullopt: the rule's default
};

struct RuleConfig {
  std::map<std::string, RuleSetting, std::less<>> rules;  // by code; absent: defaults
  bool enabled(std::string_view code) const;
  Severity severityOf(std::string_view code) const;
};

}  // namespace sightline::features
