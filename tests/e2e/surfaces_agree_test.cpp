// One truth at every edge: for bundled captures of each kind (nsys, Kineto, an input-bound step,
// torch.compile, two ranks in one report, a memory snapshot), the figures shown on two surfaces
// or more are the same value after formatting: `report` (text and JSON), `check`, and the
// language server (status, status line, the step view's headline and story, the summary, inlay
// hints). Each figure is formatted with the one formatter per unit (analysis/features/units.h),
// so a surface that derived a figure again, or formatted it its own way, fails here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <regex>
#include <set>

#include "analysis/features/units.h"
#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using features::formatBytes;
using features::formatMilliseconds;
using features::formatShare;

struct Capture {
  const char* name;
  const char* profile;  // under tests/data (or examples/), compressed
  const char* script;   // the script it measured, beside it
};

void PrintTo(const Capture& c, std::ostream* os) { *os << c.name; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A workspace holding the script and the profile (runs/<name>), and its root.
struct Workspace {
  fs::path root;
  std::string profile, script_uri, script_text;
  explicit Workspace(const Capture& c) {
    root = fs::temp_directory_path() / ("sightline-surfaces-" + std::string(c.name) + "-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "runs");
    fs::path script = sourcePath(c.script);
    fs::copy_file(script, root / script.filename());
    std::string decompressed = repoProfile(c.profile);
    profile = (root / "runs" / fs::path(decompressed).filename()).string();
    fs::copy_file(decompressed, profile);
    script_text = readFile(script.string());
    script_uri = server::pathToUri((root / script.filename()).string());
  }
  ~Workspace() { fs::remove_all(root); }
  std::string scriptName() const { return fs::path(server::uriToPath(script_uri).value_or("")).filename().string(); }
};

json request(LspClient& client, const std::string& method, const json& params) {
  auto id = client.request(method, params);
  auto r = client.waitForResponse(id, 30s);
  return r && r->contains("result") ? (*r)["result"] : json();
}

class SurfacesAgree : public ::testing::TestWithParam<Capture> {};

TEST_P(SurfacesAgree, EveryFigureShownTwiceIsTheSame) {
  Workspace w(GetParam());
  std::string script = w.scriptName();
  auto text = runSightline("report --profile '" + w.profile + "' " + script, w.root.string());
  auto js = runSightline("report --format json --profile '" + w.profile + "' " + script, w.root.string());
  auto check = runSightline("check --format json --profile '" + w.profile + "' " + script, w.root.string());
  ASSERT_EQ(text.code, 0) << text.out;
  ASSERT_EQ(js.code, 0) << js.out;
  ASSERT_NE(check.code, 2) << check.out;
  json doc = json::parse(js.out);
  json findings = json::array(), checked = json::parse(check.out);
  for (const auto& f : checked["files"])
    for (const auto& d : f["diagnostics"]) findings.push_back(d);

  // The language server on the same workspace.
  auto client = LspClient::spawnStdio();
  auto init = client->request("initialize",
                              {{"processId", nullptr},
                               {"rootUri", server::pathToUri(w.root.string())},
                               {"capabilities", {{"textDocument", {{"hover", {{"contentFormat", {"markdown"}}}}}}}},
                               {"initializationOptions", {{"settings", {{"profiles", {"runs/*"}}}}}}});
  ASSERT_TRUE(client->waitForResponse(init, 10s));
  client->notify("initialized", json::object());
  client->notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", w.script_uri}, {"languageId", "python"}, {"version", 1}, {"text", w.script_text}}}});
  auto loaded = client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "sightline/profileStatus" && m["params"].value("loaded", false);
      },
      60s);
  ASSERT_TRUE(loaded) << client->stderrText();
  const json& status = (*loaded)["params"];

  // The status line: the server's own words, each figure by the one formatter.
  std::string line = status["text"];
  if (status["format"] != "memory-snapshot") {
    EXPECT_TRUE(has(line, formatMilliseconds(static_cast<double>(status["gpuNsPerStep"].get<int64_t>())) +
                              (status["steps"].get<int>() > 0 ? " ms/step" : " ms")))
        << line;
    EXPECT_EQ(status["gpuNsPerStep"].get<int64_t>(), doc["steps"].get<int>() > 0
                                                         ? doc["steady_gpu_ns"].get<int64_t>() / doc["steps"].get<int>()
                                                         : doc["steady_gpu_ns"].get<int64_t>());
  }

  if (doc.contains("verdict")) {
    const json& v = doc["verdict"];
    const json& headline = doc["step_view"]["headline"];
    // The headline: one sentence on the status, the step view, the lens and the report.
    EXPECT_EQ(status["verdict"], headline["summary"]);
    EXPECT_TRUE(has(line, headline["summary"].get<std::string>())) << line;
    EXPECT_EQ(status["stepWallNs"].get<int64_t>(), static_cast<int64_t>(v["wall_ns"].get<double>()));
    json view = request(*client, "sightline/stepView", nullptr);
    ASSERT_TRUE(view.is_object());
    EXPECT_EQ(view["headline"], headline);
    std::string story = view["story"].dump();
    std::string step = formatMilliseconds(v["wall_ns"].get<double>()) + " ms median as captured";
    EXPECT_TRUE(has(text.out, "Step      " + step)) << text.out.substr(0, 1500);
    EXPECT_TRUE(has(story, step)) << story;
    EXPECT_TRUE(has(text.out, "GPU busy " + formatShare(v["busy_share"].get<double>())));
    // Each cause with its figure, and each change's sentence, on every surface that tells them.
    std::string verdict_finding;
    for (const auto& f : findings)
      if (f["code"] == "step-verdict") verdict_finding = f["message"];
    json summary = request(*client, "workspace/executeCommand", {{"command", "sightline.showProfileSummary"}});
    std::string summary_md = summary.dump();
    for (size_t i = 0; i < v["causes"].size(); ++i) {
      const json& c = v["causes"][i];
      std::string told =
          c["cause"].get<std::string>() + " " + formatMilliseconds(c["ns_per_step"].get<double>()) + " ms/step";
      EXPECT_TRUE(has(text.out, told)) << told;
      EXPECT_TRUE(has(story, told)) << told;
      EXPECT_TRUE(has(summary_md, told)) << told;
      if (!verdict_finding.empty() && i < 3) {
        EXPECT_TRUE(has(verdict_finding, told)) << told << "\n" << verdict_finding;
      }
    }
    for (const auto& c : v["changes"]) {
      std::string sentence = c["text"];
      EXPECT_TRUE(has(text.out, sentence)) << sentence;
      EXPECT_TRUE(has(story, json(sentence).dump().substr(1, json(sentence).dump().size() - 2))) << sentence;
      if (!verdict_finding.empty()) {
        EXPECT_TRUE(has(verdict_finding, sentence)) << sentence;
      }
    }
    // The step without the profiler: its figure or range, the same words everywhere.
    EXPECT_TRUE(has(text.out, "Unprofiled " + headline["text"].get<std::string>())) << headline.dump();
    if (!verdict_finding.empty()) {
      EXPECT_TRUE(has(verdict_finding, headline["summary"].get<std::string>())) << verdict_finding;
    }
  }

  // Per line: the figure a hint shows is the report's, the line's own or inclusive per step.
  const json* file = nullptr;
  for (const auto& f : doc["files"])
    if (fs::path(f["path"].get<std::string>()).filename() == script) file = &f;
  auto hints =
      request(*client, "textDocument/inlayHint",
              {{"textDocument", {{"uri", w.script_uri}}},
               {"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 100000}, {"character", 0}}}}}});
  if (file && doc["steps"].get<int>() > 0 && status["format"] != "memory-snapshot") {
    double steps = doc["steps"].get<double>();
    size_t checked = 0;
    std::regex figure(R"(^▮ (Σ )?([0-9.]+) ms)");
    for (const auto& h : hints) {
      std::string label =
          h["label"].is_string() ? h["label"].get<std::string>() : h["label"][0]["value"].get<std::string>();
      std::smatch m;
      if (!std::regex_search(label, m, figure) || m[1].matched) continue;
      int line_no = h["position"]["line"].get<int>() + 1;
      for (const auto& l : (*file)["lines"]) {
        if (l["line"] != line_no) continue;
        std::string self = formatMilliseconds(l["gpu_ns"].get<double>() / steps);
        std::string incl = formatMilliseconds(l["inclusive_ns"].get<double>() / steps);
        EXPECT_TRUE(m[2] == self || m[2] == incl)
            << "line " << line_no << ": hint " << label << ", report " << self << " (incl " << incl << ")";
        ++checked;
      }
    }
    EXPECT_GT(checked, 0u) << hints.dump().substr(0, 500);
  }

  // GPU memory: the peak and the out-of-memory request, formatted once.
  if (doc.contains("memory") && doc["memory"].is_object() && doc["memory"]["peak_allocated_bytes"].is_number()) {
    const json& m = doc["memory"];
    std::string peak = formatBytes(m["peak_allocated_bytes"].get<int64_t>());
    EXPECT_TRUE(has(text.out, "peak " + peak)) << peak;
    ASSERT_TRUE(status.contains("memory"));
    EXPECT_TRUE(has(status["memory"]["summary"].get<std::string>(), peak)) << status["memory"].dump();
    if (m["oom"].is_object()) {
      std::string asked = formatBytes(m["oom"]["requested_bytes"].get<int64_t>());
      EXPECT_TRUE(has(text.out, "asked " + asked)) << asked;
      EXPECT_EQ(status["memory"]["oom"]["requestedBytes"], m["oom"]["requested_bytes"]);
      std::string oom_finding;
      for (const auto& f : findings)
        if (f["code"] == "out-of-memory") oom_finding = f["message"];
      EXPECT_TRUE(has(oom_finding, asked)) << oom_finding;
    }
  }
  client->closeInput();
  client->waitExit(5s);
}

// The straggler's late share is one figure: the report's Straggler line, the rank table and the
// `check` finding (which once counted every step, warm-up included, and truncated: "95%"
// beside the report's "100%", FSDP2 on 2 ranks under the PyTorch profiler).
TEST(SurfacesAgree, TheStragglersLateShareIsOneFigure) {
  std::string args = " --profile " + sourcePath("tests/data/capture/runs/fsdp2_torch.rank0.pt.trace.json.gz") +
                     " --profile " + sourcePath("tests/data/capture/runs/fsdp2_torch.rank1.pt.trace.json.gz") + " " +
                     sourcePath("tests/data/capture/train_fsdp2.py");
  auto text = runSightline("report" + args, sourcePath(""));
  auto check = runSightline("check" + args, sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  std::set<std::string> shares;
  std::regex late(R"(last to arrive at ([0-9.]+%))");
  for (const auto* out : {&text.out, &check.out})
    for (std::sregex_iterator it(out->begin(), out->end(), late), end; it != end; ++it) shares.insert((*it)[1]);
  EXPECT_EQ(shares.size(), 1u) << ::testing::PrintToString(shares);
  EXPECT_TRUE(has(check.out, "last to arrive at")) << check.out;
}

// A capture without backtraces: "No GPU time could be put on source lines" is a warning on
// every surface; the page's story once labelled it "No" (its first word).
TEST(SurfacesAgree, NothingOnLinesIsAWarningEverywhere) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz");
  auto text = runSightline("report --profile '" + profile + "'", sourcePath(""));
  auto html = runSightline("report --format html --profile '" + profile + "'", sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  ASSERT_EQ(html.code, 0) << html.out.substr(0, 300);
  EXPECT_TRUE(has(text.out, "\nWarning   No GPU time could be put on source lines: ")) << text.out.substr(0, 2000);
  EXPECT_TRUE(has(html.out, R"("label":"Warning","lines":["No GPU time could be put on source lines)"));
  EXPECT_FALSE(has(html.out, R"("label":"No")"));
}

// A row tells a figure or says nothing: the one-off row once read "0.00 ms of GPU time and 0.00 ms
// of GPU idle outside the steady steps; most at gpt.py:149 0.00 ms" (GPT eager, sightline capture).
TEST(SurfacesAgree, NoRowOfZeros) {
  std::string profile = repoProfile("tests/data/capture/runs/gpt_nsys.sqlite.xz");
  auto text = runSightline("report --profile '" + profile + "' tests/data/capture/gpt.py", sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_FALSE(has(text.out, "0.00 ms of GPU time and 0.00 ms of GPU idle")) << text.out.substr(0, 1500);
}

INSTANTIATE_TEST_SUITE_P(
    Bundled, SurfacesAgree,
    ::testing::Values(Capture{"nsys", "examples/train_small_naive.sqlite.xz", "examples/train_small.py"},
                      Capture{"kineto", "tests/data/h200/kineto/train_small_naive.pt.trace.json.gz",
                              "tests/data/h200/kineto/train_small.py"},
                      Capture{"input", "tests/data/verdict/loader.sqlite.xz", "tests/data/verdict/verdict.py"},
                      Capture{"sync", "tests/data/verdict/item.sqlite.xz", "tests/data/verdict/verdict.py"},
                      Capture{"eager", "tests/data/compile/eager.sqlite.xz", "tests/data/compile/train_gpt.py"},
                      Capture{"ranks", "tests/data/multi/ddp/ddp_one.sqlite.xz", "tests/data/multi/ddp/train_ddp.py"},
                      Capture{"oom", "tests/data/memory/gpt_oom_eval.pickle.xz", "tests/data/memory/gpt_mem.py"}),
    [](const ::testing::TestParamInfo<Capture>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sightline::testing
