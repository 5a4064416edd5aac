// The check verb in-process: formats, flags and exit codes on a real script.
#include "server/cli/check_command.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "analysis/features/rules.h"
#include "tests/support/test_paths.h"

namespace sightline::server {
namespace {

struct Run {
  int code;
  std::string out, err;
};

Run check(std::vector<std::string> args) {
  std::ostringstream out, err;
  int code = runCheckCommand(args, out, err);
  return {code, out.str(), err.str()};
}

const std::string kScript = testing::testDataPath("h200/nsys/train_small.py");

TEST(CheckCommand, TextFormat) {
  auto r = check({kScript});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find(kScript + ":109:28: warning: `.item()` waits for the GPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[sync-in-loop]\n"), std::string::npos);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 5);
}

TEST(CheckCommand, JsonFormat) {
  auto r = check({"--format", "json", kScript});
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["files"].size(), 1u);
  EXPECT_EQ(j["files"][0]["path"], kScript);
  auto& d = j["files"][0]["diagnostics"][4];
  EXPECT_EQ(d["code"], "sync-in-loop");
  EXPECT_EQ(d["line"], 109);
  EXPECT_EQ(d["column"], 28);
  EXPECT_EQ(d["end_line"], 109);
  EXPECT_EQ(d["end_column"], 39);
  EXPECT_EQ(d["severity"], "warning");
}

TEST(CheckCommand, SarifFormat) {
  auto r = check({"--format", "sarif", kScript});
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], "2.1.0");
  auto& run = j["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "sightline");
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), features::allRules().size());
  EXPECT_EQ(run["results"].size(), 5u);
  auto& res = run["results"][4];
  EXPECT_EQ(res["ruleId"], "sync-in-loop");
  EXPECT_EQ(res["level"], "warning");
  EXPECT_EQ(res["locations"][0]["physicalLocation"]["region"]["startLine"], 109);
}

TEST(CheckCommand, FlagsAndExitCodes) {
  auto quiet = check({"--disable", "sync-in-loop", "--disable", "missing-non-blocking", "--severity",
                      "dataloader-pin-memory=information", "--severity", "dataloader-num-workers=hint", kScript});
  EXPECT_EQ(quiet.code, 0) << "only information and hints left";
  EXPECT_NE(quiet.out.find("information: DataLoader without pin_memory"), std::string::npos);
  EXPECT_EQ(check({"--format", "xml", kScript}).code, 2);
  EXPECT_EQ(check({"--disable", "nope", kScript}).code, 2);
  EXPECT_EQ(check({"--severity", "sync-in-loop", kScript}).code, 2);
  EXPECT_EQ(check({}).code, 2);
  auto missing = check({"/nonexistent/file.py"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot read /nonexistent/file.py"), std::string::npos);
  auto help = check({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--format text|json|sarif"), std::string::npos);
}

}  // namespace
}  // namespace sightline::server
