// Architecture invariants (docs/architecture.md): dependencies point one way, between the top
// layers and between the parts of analysis/, and the analysis core does no IO of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

// Our C++ sources under `dir` (the grammar's node_modules left out).
std::vector<std::filesystem::path> sources(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(sourcePath(dir))) {
    auto ext = entry.path().extension();
    if (entry.path().string().find("node_modules") != std::string::npos) continue;
    if (ext == ".h" || ext == ".cpp") out.push_back(entry.path());
  }
  return out;
}

// Files under `dir` whose text matches `pattern`.
std::vector<std::string> offenders(const std::string& dir, const std::regex& pattern) {
  std::vector<std::string> out;
  for (const auto& path : sources(dir))
    if (std::regex_search(readFile(path.string()), pattern)) out.push_back(path.string());
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
  for (const char* dir : {"analysis/features", "analysis/join", "analysis/attribution", "protocol", "server"})
    EXPECT_EQ(offenders(dir, ts), std::vector<std::string>{}) << dir;
}

// Inside analysis/, as docs/architecture.md states them: each part includes only itself and
// the parts listed for it.
TEST(Layering, AnalysisPartsPointOneWay) {
  const std::map<std::string, std::set<std::string>> allowed = {
      {"model", {"model"}},
      {"source", {"source"}},
      {"ingest", {"ingest", "model"}},
      {"attribution", {"attribution", "model", "source"}},
      {"join", {"join", "attribution", "model", "source"}},
      {"features", {"features", "join", "attribution", "model", "source"}},
  };
  std::regex include(R"(#include\s*"analysis/([a-z_]+)/)");
  for (const auto& [part, may] : allowed) {
    for (const auto& path : sources("analysis/" + part)) {
      std::string text = readFile(path.string());
      for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it)
        EXPECT_TRUE(may.count((*it)[1].str())) << path.string() << " includes analysis/" << (*it)[1].str();
    }
  }
  // Every part of analysis/ is listed above (a new one must say where it stands).
  for (const auto& entry : std::filesystem::directory_iterator(sourcePath("analysis"))) {
    if (entry.is_directory()) {
      EXPECT_TRUE(allowed.count(entry.path().filename().string())) << entry.path();
    }
  }
}

// The analysis core does no IO: outside the readers nothing opens, writes or spawns, and
// nothing starts threads (their owners lend them). The readers open profile files and may
// read on a second thread, but never write or spawn.
TEST(Layering, AnalysisDoesNoIoOutsideTheReaders) {
  std::regex spawns_or_writes(
      R"(std::system\s*\(|\bpopen\s*\(|\bfork\s*\(|\bexec[lv]p?e?\s*\(|posix_spawn|std::ofstream|\bofstream\b|)"
      R"(create_director|filesystem::rename|fs::rename|filesystem::remove|fs::remove|\bfwrite\s*\()");
  std::regex opens_or_threads(R"(std::ifstream|\bifstream\b|std::fstream|\bfopen\s*\(|\bopen\s*\(|gzopen|sqlite3_open|)"
                              R"(std::thread|std::jthread|std::async|pthread_create|#include\s*<filesystem>)");
  for (const char* part : {"model", "source", "attribution", "join", "features"}) {
    EXPECT_EQ(offenders(std::string("analysis/") + part, spawns_or_writes), std::vector<std::string>{}) << part;
    EXPECT_EQ(offenders(std::string("analysis/") + part, opens_or_threads), std::vector<std::string>{}) << part;
  }
  EXPECT_EQ(offenders("analysis/ingest", spawns_or_writes), std::vector<std::string>{});
}

// Text is made at the edge: the analysis core's strings hold no Markdown (emphasis, links,
// tables, HTML), and it knows no LSP position encoding, so a surface never re-renders text the
// core formatted for another. (Code actions write Python, whose `**kwargs` and `# comments`
// are code, not Markdown; the readers match the text of the files they read.)
TEST(Layering, AnalysisStringsHoldNoMarkdownOrLspTerms) {
  std::regex literal(R"("(?:[^"\\\n]|\\.)*")");
  std::regex markdown(R"(\*\*|\]\(|<br|&nbsp;|\|---|<b>|<code>)");
  std::regex lsp(R"(\bprotocol::|\blsp::|MarkupContent|[Uu][Tt][Ff]-?16)");
  for (const char* part : {"model", "source", "attribution", "join", "features"})
    for (const auto& path : sources(std::string("analysis/") + part)) {
      if (path.filename() == "code_actions.cpp") continue;
      std::string text = readFile(path.string());
      // Code only: a comment may say where the encoding lives.
      EXPECT_FALSE(std::regex_search(std::regex_replace(text, std::regex("//[^\n]*"), ""), lsp)) << path.string();
      for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it)
        EXPECT_FALSE(std::regex_search(it->str(), markdown)) << path.string() << ": " << it->str();
    }
  EXPECT_TRUE(std::regex_search(std::string("\"**Step** \""), markdown));
  EXPECT_TRUE(std::regex_search(std::string("[a](b)"), markdown));
}

// The checks above can fail: they find what they look for in text that has it.
TEST(Layering, PatternsCatchWhatTheyLookFor) {
  std::regex spawns(R"(std::system\s*\(|\bpopen\s*\(|posix_spawn)");
  EXPECT_TRUE(std::regex_search(std::string("int rc = std::system(cmd.c_str());"), spawns));
  EXPECT_FALSE(offenders("server", spawns).empty()) << "server/platform/child_process.cpp runs nsys export";
}

}  // namespace
}  // namespace sightline::testing
