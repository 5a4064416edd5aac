// Settings: rule toggles, severities, profiling window, junk tolerated with warnings.
#include "server/workspace/settings.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

TEST(Settings, ParsesRulesAndWindow) {
  std::vector<std::string> warnings;
  auto s = parseSettings(nlohmann::json::parse(R"({
    "rules": {"sync-in-loop": "error", "dataloader-num-workers": "off",
              "missing-non-blocking": {"enabled": true, "severity": "hint"}, "zero-grad-set-to-none": false},
    "profileWindow": {"firstStep": 2, "lastStep": 4}, "docsBaseUrl": "https://example.org/rules/"})"),
                         warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s.rules.severityOf("sync-in-loop"), features::Severity::Error);
  EXPECT_FALSE(s.rules.enabled("dataloader-num-workers"));
  EXPECT_FALSE(s.rules.enabled("zero-grad-set-to-none"));
  EXPECT_EQ(s.rules.severityOf("missing-non-blocking"), features::Severity::Hint);
  EXPECT_EQ(s.actions.profile_first_step, 2u);
  EXPECT_EQ(s.actions.profile_last_step, 4u);
  EXPECT_EQ(ruleDocumentationUrl(s, "sync-in-loop"), "https://example.org/rules/sync-in-loop.md");
}

TEST(Settings, JunkIsSkippedWithWarnings) {
  std::vector<std::string> warnings;
  auto s = parseSettings(nlohmann::json::parse(R"({"rules": {"made-up": "error", "sync-in-loop": "loud",
                                                   "cuda-synchronize-in-loop": 3},
                                                   "profileWindow": {"firstStep": 9, "lastStep": 1}})"),
                         warnings);
  EXPECT_EQ(warnings.size(), 4u);
  EXPECT_EQ(s.rules.severityOf("sync-in-loop"), features::Severity::Warning);
  EXPECT_EQ(s.actions.profile_first_step, 25u);
  warnings.clear();
  parseSettings(nlohmann::json::array(), warnings);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(Settings, RuleBudget) {
  std::vector<std::string> warnings;
  EXPECT_EQ(parseSettings(nlohmann::json::object(), warnings).rule_budget_ms, 1000);
  EXPECT_EQ(parseSettings({{"ruleBudgetMs", 250}}, warnings).rule_budget_ms, 250);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(parseSettings({{"ruleBudgetMs", 0}}, warnings).rule_budget_ms, 1000);
  EXPECT_EQ(parseSettings({{"ruleBudgetMs", "fast"}}, warnings).rule_budget_ms, 1000);
  EXPECT_EQ(warnings.size(), 2u);
}

TEST(Settings, Thresholds) {
  std::vector<std::string> warnings;
  auto s = parseSettings(nlohmann::json::parse(R"({"thresholds": {"gpuIdleGapMs": 2.5, "gpuIdleMsPerStep": 0,
                                                   "pageableKiBPerStep": 1, "syncApiMsPerStep": 0.25,
                                                   "launchBoundKernelsPerStep": 10, "launchBoundMeanUs": 20}})"),
                         warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s.thresholds.gpu_idle_gap_ns, 2'500'000);
  EXPECT_EQ(s.thresholds.gpu_idle_min_ns, 0);
  EXPECT_EQ(s.thresholds.pageable_min_bytes, 1024u);
  EXPECT_EQ(s.thresholds.sync_api_min_ns, 250'000);
  EXPECT_EQ(s.thresholds.launch_bound_min_kernels, 10);
  EXPECT_EQ(s.thresholds.launch_bound_max_mean_ns, 20'000);
  // Bad values keep the defaults and say why.
  s = parseSettings(nlohmann::json::parse(R"({"thresholds": {"gpuIdleGapMs": 0, "syncApiMsPerStep": -1,
                                               "launchBoundMeanUs": "fast", "idle": 3}})"),
                    warnings);
  EXPECT_EQ(warnings.size(), 4u);
  features::ProfileRuleThresholds defaults;
  EXPECT_EQ(s.thresholds.gpu_idle_gap_ns, defaults.gpu_idle_gap_ns);
  EXPECT_EQ(s.thresholds.sync_api_min_ns, defaults.sync_api_min_ns);
  EXPECT_EQ(s.thresholds.launch_bound_max_mean_ns, defaults.launch_bound_max_mean_ns);
}

TEST(Settings, DefaultDocsPointAtTheBundledRulePages) {
  Settings s;
  std::string url = ruleDocumentationUrl(s, "sync-in-loop");
  EXPECT_EQ(url.rfind("file://", 0), 0u);
  EXPECT_NE(url.find("/docs/rules/sync-in-loop.md"), std::string::npos);
}

}  // namespace
}  // namespace sightline::server

namespace sightline::server {
namespace {

TEST(Settings, CompiledCodeFolders) {
  std::vector<std::string> warnings;
  auto one = parseSettings(nlohmann::json::parse(R"({"compiledCode": ".inductor"})"), warnings);
  EXPECT_EQ(one.compiled_code, std::vector<std::string>{".inductor"});
  auto two = parseSettings(nlohmann::json::parse(R"({"compiledCode": ["a", 3, "b"]})"), warnings);
  EXPECT_EQ(two.compiled_code, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(warnings.size(), 1u);
  parseSettings(nlohmann::json::parse(R"({"compiledCode": 7})"), warnings);
  EXPECT_EQ(warnings.size(), 2u);
}

}  // namespace
}  // namespace sightline::server
