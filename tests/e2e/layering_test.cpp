// Architecture invariants (docs/architecture.md): dependencies point one way.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

// Files under `dir` with an #include matching `pattern`.
std::vector<std::string> offenders(const std::string& dir, const std::regex& pattern) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(sourcePath(dir))) {
    auto ext = entry.path().extension();
    if (entry.path().string().find("node_modules") != std::string::npos) continue;
    if (ext != ".h" && ext != ".cpp") continue;
    std::string text = readFile(entry.path().string());
    if (std::regex_search(text, pattern)) out.push_back(entry.path().string());
  }
  return out;
}

TEST(Layering, AnalysisKnowsNoProtocolJsonOrAsio) {
  std::regex bad(R"(#include\s*[<"](nlohmann/|boost/|protocol/|server/))");
  EXPECT_EQ(offenders("analysis", bad), std::vector<std::string>{});
}

TEST(Layering, ProtocolKnowsNoAnalysisServerOrAsio) {
  std::regex bad(R"(#include\s*[<"](analysis/|server/|boost/))");
  EXPECT_EQ(offenders("protocol", bad), std::vector<std::string>{});
}

TEST(Layering, TreeSitterStaysInAnalysisSource) {
  std::regex ts(R"(#include\s*[<"]tree_sitter/)");
  for (const char* dir : {"analysis/features", "protocol", "server"})
    EXPECT_EQ(offenders(dir, ts), std::vector<std::string>{}) << dir;
}

}  // namespace
}  // namespace sightline::testing
