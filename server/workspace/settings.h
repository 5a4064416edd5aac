// The `sightline` settings section (workspace/configuration, didChangeConfiguration, and
// the check command's flags) turned into the analysis layer's configuration structs.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analysis/attribution/path_mapping.h"
#include "analysis/features/code_actions.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/rules.h"

namespace sightline::server {

struct Settings {
  features::RuleConfig rules;
  features::ActionOptions actions;
  std::string docs_base_url;  // where rule pages live; "" means the bundled docs/rules
  // Profiles: paths or globs relative to the workspace; empty means discover them.
  std::vector<std::string> profiles;
  std::vector<attribution::PathRule> path_mappings;  // "to" may use ${workspaceFolder}
  bool hints_enabled = true;
  features::HintOptions hints;
  std::string compare_with;
  features::ProfileRuleThresholds thresholds;
  bool all_steps = false;  // count every step, warm-up and outliers too ("allSteps")
  // torch.compile's generated code: Inductor cache or TORCH_TRACE folders, relative to the
  // workspace ("compiledCode": a path or a list of paths).
  std::vector<std::string> compiled_code;
  // How long each static rule may run on one document in the editor before it stops
  // ("ruleBudgetMs"); `check` runs every rule in full.
  double rule_budget_ms = 1000;
};

// Reads a settings object:
//   {"rules": {"sync-in-loop": "off" | "error" | ... | {"enabled": bool, "severity": "..."}},
//    "profileWindow": {"firstStep": 10, "lastStep": 14}, "docsBaseUrl": "https://...",
//    "profiles": ["runs/*.sqlite"], "pathMappings": [{"from": "/scratch/u/proj", "to": "${workspaceFolder}"}],
//    "hints": {"enabled": true, "minShare": 0.005, "unit": "perStep" | "total", "showBackward": true,
//              "show": "both" | "time" | "memory"},
//    "compareWith": "runs/before.sqlite", "allSteps": false, "compiledCode": ".inductor-cache", "ruleBudgetMs": 1000,
//    "thresholds": {"gpuIdleGapMs": 1, "gpuIdleMsPerStep": 0.5, "pageableKiBPerStep": 64,
//                   "syncApiMsPerStep": 0.1, "launchBoundKernelsPerStep": 50, "launchBoundMeanUs": 10}}
// Unknown keys are ignored; bad values are skipped and described in `warnings`.
Settings parseSettings(const nlohmann::json& section, std::vector<std::string>& warnings);

// Reads the `thresholds` object into `out` (keys as in parseSettings; each a number >= 0;
// gpuIdleGapMs > 0). Bad keys and values are described in `warnings` and leave `out` as it was.
void parseThresholds(const nlohmann::json& object, features::ProfileRuleThresholds& out,
                     std::vector<std::string>& warnings);

// The page documenting a rule: base + "/" + code + ".md", or the bundled file's URI.
std::string ruleDocumentationUrl(const Settings& settings, std::string_view code);

}  // namespace sightline::server
