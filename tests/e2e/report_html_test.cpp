// `sightline report --format html`: one self-contained page whose data are the JSON report's
// step view, written whole or not at all. (The page drawn in a browser, its bars checked
// against these figures: editors/vscode/test/report_html.mjs, run by scripts/test.sh.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

CommandOutput run(const std::string& args) { return runSightline(args, sourcePath("")); }

json pageData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"sightline-data\">";
  size_t at = html.find(open);
  if (at == std::string::npos) return nullptr;
  at += open.size();
  size_t end = html.find("</script>", at);
  if (end == std::string::npos) return nullptr;
  return json::parse(html.substr(at, end - at));
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("sightline-html-" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(ReportHtml, OneSelfContainedPageWithTheJsonReportsFigures) {
  TempDir dir;
  std::string profile = repoProfile("examples/train_small_naive.sqlite.xz");
  std::string out = (dir.path / "report.html").string();
  auto r = run("report --format html -o '" + out + "' --profile '" + profile + "' examples/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "");  // the page went to the file
  std::string html = readFile(out);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_LT(html.size(), 2u << 20);
  // Nothing fetched: no remote or local references, and a policy that allows none.
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  for (const char* ref : {"src=\"", "href=\"", "https://", "@import", "url("})
    EXPECT_EQ(html.find(ref), std::string::npos) << ref;
  // The one http:// is SVG's namespace name, which names and fetches nothing.
  for (size_t at = html.find("http://"); at != std::string::npos; at = html.find("http://", at + 1))
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0) << html.substr(at, 60);
  EXPECT_NE(html.find("SightlineStepView"), std::string::npos) << "the renderer is inlined";
  json page = pageData(html);
  ASSERT_TRUE(page.is_object());
  auto j = run("report --format json --profile '" + profile + "' examples/train_small.py");
  ASSERT_EQ(j.code, 0) << j.out;
  json report = json::parse(j.out)["step_view"];
  // The same bars and lines as the JSON report (which leaves the timeline's spans out).
  EXPECT_EQ(page["ranks"], report["ranks"]);
  EXPECT_EQ(page["lines"], report["lines"]);
  EXPECT_EQ(page["topLines"], report["topLines"]);
  ASSERT_EQ(page["ranks"].size(), 1u);
  EXPECT_EQ(page["ranks"][0]["steps"].size(), 6u);
  EXPECT_EQ(page["timelines"].size(), 1u);
  EXPECT_FALSE(report.contains("timelines"));
  // The named script's hot lines, with their text.
  ASSERT_EQ(page["sources"].size(), 1u);
  bool hot = false;
  for (const auto& l : page["sources"][0]["lines"])
    hot = hot || (l["line"] == 33 && l["text"].get<std::string>().find("self.conv(x)") != std::string::npos &&
                  l["line_index"].get<int>() >= 0);
  EXPECT_TRUE(hot) << page["sources"].dump();
}

TEST(ReportHtml, WritesNothingWhereItCannot) {
  TempDir dir;
  std::string profile = repoProfile("examples/train_small_naive.sqlite.xz");
  std::string out = (dir.path / "missing" / "report.html").string();
  auto r = run("report --format html -o '" + out + "' --profile '" + profile + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot write " + out), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  // A profile that cannot be read leaves no page (nor a partial one) behind.
  std::string page = (dir.path / "r.html").string();
  auto bad = run("report --format html -o '" + page + "' --profile tests/data/broken.py");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_FALSE(fs::exists(page));
  EXPECT_FALSE(fs::exists(page + ".partial"));
  auto help = run("report --help");
  EXPECT_NE(help.out.find("--format text|json|html"), std::string::npos) << help.out;
}

// Text from the profile cannot end the page's script elements: a kernel named
// `</script><img src=x onerror=alert(1)>` stays inside the JSON, written \u003c.
TEST(ReportHtml, ProfileTextCannotCloseTheScript) {
  TempDir dir;
  std::string trace = (dir.path / "t.pt.trace.json").string();
  ASSERT_EQ(std::system(
                ("gzip -dc '" + testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz") + "' > '" + trace + "'")
                    .c_str()),
            0);
  json t = json::parse(readFile(trace));
  const std::string payload = "</script><img src=x onerror=alert(1)><!--";
  for (auto& e : t["traceEvents"])
    if (e.value("cat", "") == "kernel") e["name"] = e["name"].get<std::string>() + payload;
  t["deviceProperties"][0]["name"] = "H200" + payload;
  std::ofstream(trace) << t.dump();
  std::string out = (dir.path / "r.html").string();
  auto r = run("report --format html -o '" + out + "' --profile '" + trace + "' tests/data/h200/kineto/train_small.py");
  ASSERT_EQ(r.code, 0) << r.out;
  std::string html = readFile(out);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  size_t closes = 0;
  for (size_t at = html.find("</script"); at != std::string::npos; at = html.find("</script", at + 1)) ++closes;
  EXPECT_EQ(closes, 2u);  // the data's and the renderer's own
  json page = pageData(html);
  ASSERT_TRUE(page.is_object());
  EXPECT_NE(page["profile"]["gpus"][0].get<std::string>().find(payload), std::string::npos);
  EXPECT_NE(page["timelines"][0]["names"].dump().find("onerror"), std::string::npos) << "the names are there, as data";
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// The page tells the report's story: every line of the text header (verdict, Try, warnings,
// memory) in the page's data, the warning of a capture that lost records among them; and a
// snapshot that ran out of memory marks the event with what it asked and its call chain.
TEST(ReportHtml, ThePageTellsTheReportsStoryAndMarksTheOutOfMemory) {
  TempDir dir;
  struct Case {
    std::string profile, script;
  };
  for (const Case& c :
       {Case{repoProfile("tests/data/multi/killed/killed.sqlite.xz"), "tests/data/multi/killed/train_resnet.py"},
        Case{dataProfile("memory/gpt_oom_eval.pickle.xz"), "tests/data/memory/gpt_mem.py"}}) {
    std::string out = (dir.path / "page.html").string();
    auto args = "--profile '" + c.profile + "' " + c.script;
    ASSERT_EQ(run("report --format html -o '" + out + "' " + args).code, 0);
    json page = pageData(readFile(out));
    ASSERT_TRUE(page.is_object());
    std::string text = run("report " + args).out;
    std::string header = text.substr(0, text.find("\n\n"));
    size_t told = 0;
    for (const auto& e : page["story"])
      for (const auto& l : e["lines"]) {
        EXPECT_NE(header.find(l.get<std::string>()), std::string::npos) << l;
        ++told;
      }
    EXPECT_GE(told, 3u) << page["story"].dump();
    if (c.script.find("resnet") != std::string::npos) {
      bool warned = false;
      for (const auto& e : page["story"]) warned = warned || e["label"] == "Warning";
      EXPECT_TRUE(warned) << page["story"].dump();
    } else {
      const json& oom = page["memory"]["oom"];
      ASSERT_TRUE(oom.is_object()) << page["memory"].dump().substr(0, 300);
      EXPECT_GT(oom["requestedBytes"].get<int64_t>(), 0);
      EXPECT_GT(oom["freeBytes"].get<int64_t>(), 0);
      ASSERT_GE(oom["line"].get<int>(), 0);
      EXPECT_EQ(page["lines"][oom["line"].get<size_t>()]["line"], 73);
      EXPECT_EQ(oom["chain"].size(), 3u);
    }
  }
}

}  // namespace
}  // namespace sightline::testing
