// Rule table and configuration.
#include "analysis/features/rules.h"

#include <gtest/gtest.h>

#include <set>

namespace sightline::features {
namespace {

TEST(Rules, CodesAreUniqueAndDocumented) {
  std::set<std::string_view> codes;
  for (const auto& r : allRules()) {
    EXPECT_TRUE(codes.insert(r.code).second) << r.code;
    EXPECT_FALSE(r.summary.empty());
  }
  EXPECT_EQ(codes.size(), 23u);  // 7 static rules, rules-stopped, 14 that need a profile
  EXPECT_NE(findRule("sync-in-loop"), nullptr);
  EXPECT_EQ(findRule("nope"), nullptr);
}

TEST(Rules, ConfigOverridesDefaults) {
  RuleConfig config;
  EXPECT_TRUE(config.enabled("sync-in-loop"));
  EXPECT_EQ(config.severityOf("sync-in-loop"), Severity::Warning);
  config.rules["sync-in-loop"] = {true, Severity::Error};
  config.rules["dataloader-num-workers"] = {false, std::nullopt};
  EXPECT_EQ(config.severityOf("sync-in-loop"), Severity::Error);
  EXPECT_FALSE(config.enabled("dataloader-num-workers"));
}

TEST(Rules, SeverityNamesRoundTrip) {
  for (auto s : {Severity::Error, Severity::Warning, Severity::Information, Severity::Hint})
    EXPECT_EQ(parseSeverity(severityName(s)), s);
  EXPECT_EQ(parseSeverity("info"), Severity::Information);
  EXPECT_EQ(parseSeverity("loud"), std::nullopt);
}

}  // namespace
}  // namespace sightline::features
