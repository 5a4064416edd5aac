// End-to-end: the server with real profiles of torch.compile runs, memory snapshots and the
// step view: hovers, diagnostics and quick fixes of compiled functions, memory at the peak and
// the out-of-memory line, the step view's lens, the report's advice in the editor, and profile
// text that never becomes markup.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>

#include "server/lsp/uri.h"
#include "tests/e2e/profile_session_support.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using namespace session;

// A compiled run with its TORCH_TRACE folder and Inductor cache in the workspace (found
// there): the compiled function's hover tells what compiling cost, the break and recompiles
// are diagnostics, and the graph break's quick fix is offered.
TEST(ProfileSession, CompiledRunShowsGraphBreakAndRecompiles) {
  fs::path root = fs::temp_directory_path() / ("sightline-ws-breaks-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "runs");
  fs::copy_file(testDataPath("compile/breaks/train_breaks.py"), root / "train_breaks.py");
  fs::copy_file(dataProfile("compile/breaks/breaks.sqlite.xz"), root / "runs" / "breaks.sqlite");
  fs::copy(dataTree("compile/breaks/trace.tar.xz") + "/trace", root / "runs" / "trace", fs::copy_options::recursive);
  fs::copy(dataTree("compile/breaks/cache.tar.xz") + "/cache", root / "cache", fs::copy_options::recursive);
  Workspace w = workspaceAt(root, "train_breaks.py");
  auto client = LspClient::spawnStdio();
  auto s = started(*client, w, json::object());
  ASSERT_TRUE(s && (*s)["loaded"] == true) << client->stderrText();
  auto hover = hoverText(*client, w.script_uri, 19, 8);  // def forward(self, x):
  ASSERT_TRUE(hover);
  EXPECT_NE(hover->find("**torch.compile:** `forward` (train_breaks.py:20): 10 compilations in 13.9 s, 2 graphs, "
                        "graph break at line 22"),
            std::string::npos)
      << *hover;
  bool graph_break = false, recompiles = false;
  auto look = [&](const json& m) {
    if (m.value("method", "") != "textDocument/publishDiagnostics") return;
    for (const auto& diag : m["params"]["diagnostics"]) {
      if (diag.value("code", "") == "graph-break" && diag["range"]["start"]["line"] == 21) graph_break = true;
      if (diag.value("code", "") == "recompiles" && diag["range"]["start"]["line"] == 19) recompiles = true;
    }
  };
  for (const auto& m : client->seen()) look(m);  // published while the hover was asked
  for (int i = 0; i < 20 && !(graph_break && recompiles); ++i) {
    auto d = client->waitForNotification("textDocument/publishDiagnostics", 10s);
    if (!d) break;
    look(*d);
  }
  EXPECT_TRUE(graph_break);
  EXPECT_TRUE(recompiles);
  auto id = client->request(
      "textDocument/codeAction",
      {{"textDocument", {{"uri", w.script_uri}}},
       {"range", {{"start", {{"line", 21}, {"character", 0}}}, {"end", {{"line", 21}, {"character", 40}}}}},
       {"context", {{"diagnostics", json::array()}}}});
  auto actions = client->waitForResponse(id);
  ASSERT_TRUE(actions);
  bool fix = false;
  for (const auto& a : (*actions)["result"])
    if (a.value("title", "").find("capture_scalar_outputs") != std::string::npos) fix = true;
  EXPECT_TRUE(fix) << actions->dump();
  fs::remove_all(root);
}

// Markdown outside code spans (CommonMark's pairing of backtick runs; backslash escapes kept).
std::string outsideCodeSpans(const std::string& md) {
  std::string out;
  auto runAt = [&](size_t i) {
    size_t j = i;
    while (j < md.size() && md[j] == '`') ++j;
    return j - i;
  };
  for (size_t i = 0; i < md.size();) {
    if (md[i] == '\\' && i + 1 < md.size()) {
      out += md.substr(i, 2);
      i += 2;
    } else if (md[i] == '`') {
      size_t n = runAt(i), j = i + n, close = std::string::npos;
      while (j < md.size()) {
        if (md[j] != '`') {
          ++j;
          continue;
        }
        size_t m = runAt(j);
        if (m == n) {
          close = j;
          break;
        }
        j += m;
      }
      if (close == std::string::npos) {
        out += md.substr(i, n);
        i += n;
      } else {
        out += "CODE";
        i = close + n;
      }
    } else {
      out += md[i++];
    }
  }
  return out;
}

// What of a crafted profile string a Markdown renderer would act on: an image, a remote link or
// HTML outside code spans.
std::string exposedMarkup(const std::string& md) {
  std::string text = outsideCodeSpans(md);
  for (size_t i = 0; i < text.size(); ++i) {
    bool escaped = i > 0 && text[i - 1] == '\\';
    if (escaped) continue;
    for (const char* bad : {"![", "<img", "](https:"})
      if (text.compare(i, std::strlen(bad), bad) == 0) return text.substr(i > 40 ? i - 40 : 0, 120);
  }
  return "";
}

// A trace whose every string a hover, a hint or the summary shows carries Markdown and HTML:
// kernel and op names, the GPU's name, function names and the script's own file name. None of
// it renders as an image, a link or HTML (a crafted export once put a tracking image in the
// summary); the names still show, as text.
TEST(ProfileSession, ProfileStringsNeverBecomeMarkup) {
  const std::string payload = "`<img src=x>![b](https:e.test)";   // an unmatched backtick
  const std::string paired = "`x`![c](https:e.test)<img src=y>";  // a span, then markup
  fs::path root = fs::temp_directory_path() / ("sightline-ws-markup-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "traces");
  std::string script = "t" + paired + ".py";
  fs::copy_file(testDataPath("h200/kineto/train_small.py"), root / script);
  std::string plain = (root / "plain.json").string();
  ASSERT_EQ(std::system(
                ("gzip -dc '" + testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz") + "' > '" + plain + "'")
                    .c_str()),
            0);
  json trace = json::parse(readFile(plain));
  trace["deviceProperties"][0]["name"] = "NVIDIA H200" + payload;
  for (auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", ""), name = e.value("name", "");
    if (cat == "kernel") e["name"] = "kern" + std::to_string(name.size() % 4) + payload;
    if (cat == "cpu_op") e["name"] = name + payload;
    if (cat == "python_function") {
      if (name.rfind("train_small.py(", 0) == 0) name = "t" + paired + ".py" + name.substr(14);
      e["name"] = name + (name.find("): ") != std::string::npos ? paired : "");
    }
  }
  std::ofstream(root / "traces" / "w.pt.trace.json") << trace.dump();
  fs::remove(plain);
  Workspace w = workspaceAt(root, script);
  auto client = LspClient::spawnStdio();
  auto s = started(*client, w, json::object());
  ASSERT_TRUE(s) << client->stderrText();
  ASSERT_EQ((*s)["loaded"], true) << s->dump();
  std::vector<std::pair<std::string, std::string>> shown;  // (where, markdown)
  json hints = hintsOf(*client, w.script_uri);
  ASSERT_GT(hints.size(), 5u) << hints.dump();
  for (const auto& h : hints)
    if (h.contains("tooltip")) shown.emplace_back("hint", h["tooltip"].value("value", ""));
  size_t lines = static_cast<size_t>(std::count(w.script_text.begin(), w.script_text.end(), '\n'));
  for (size_t line = 0; line < lines; ++line) {
    auto hover = hoverText(*client, w.script_uri, static_cast<int>(line), 8);
    ASSERT_TRUE(hover);
    if (!hover->empty()) shown.emplace_back("hover on line " + std::to_string(line + 1), *hover);
  }
  auto summary_id = client->request("workspace/executeCommand", {{"command", "sightline.showProfileSummary"}});
  auto summary = client->waitForResponse(summary_id);
  ASSERT_TRUE(summary);
  shown.emplace_back("summary", (*summary)["result"].get<std::string>());
  std::string all;
  for (const auto& [where, md] : shown) {
    EXPECT_EQ(exposedMarkup(md), "") << where << ":\n" << md;
    all += md;
  }
  // The crafted names are there, as text: kernels, ops, the GPU, the file.
  for (const char* name : {"kern", "aten::", "H200", "e.test"}) EXPECT_NE(all.find(name), std::string::npos) << name;
  fs::remove_all(root);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// A memory snapshot dumped by an out-of-memory handler, found in the workspace by its name: the
// status names the peak and the failing line, hints show the bytes held at the peak, the
// out-of-memory error is published on its line with the lines holding the most as related
// information, and `hints.show: "time"` takes the memory hints away.
TEST(ProfileSession, AMemorySnapshotPutsThePeakAndTheOutOfMemoryErrorOnTheLines) {
  fs::path root = fs::temp_directory_path() / ("sightline-ws-memory-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "runs");
  fs::copy_file(testDataPath("memory/gpt_mem.py"), root / "gpt_mem.py");
  fs::copy_file(dataProfile("memory/gpt_oom_eval.pickle.xz"), root / "runs" / "oom_snapshot.pickle");
  Workspace w = workspaceAt(root, "gpt_mem.py");
  auto client = LspClient::spawnStdio();
  auto s = started(*client, w, json::object());
  ASSERT_TRUE(s) << client->stderrText();
  const json& st = *s;
  EXPECT_EQ(st["loaded"], true) << st.dump();
  EXPECT_EQ(st["format"], "memory-snapshot");
  ASSERT_TRUE(st.contains("memory")) << st.dump();
  EXPECT_EQ(st["memory"]["peakAllocatedBytes"], 68221917252);
  EXPECT_EQ(st["memory"]["oom"]["line"], 73);
  EXPECT_EQ(st["memory"]["oom"]["requestedBytes"], 26373783552);
  EXPECT_EQ(st["memory"]["summary"], "peak 63.54 GiB · out of memory at gpt_mem.py:73");
  EXPECT_EQ(st["memory"]["peakWhen"], "in step 6 of the 6 recorded (forward pass)");
  EXPECT_TRUE(st["warnings"].empty()) << st.dump();

  json hints = hintsOf(*client, w.script_uri);
  const json* logits = hintOnLine(hints, 59);  // logits = self.head(self.ln_f(x))
  ASSERT_NE(logits, nullptr) << hints.dump();
  EXPECT_EQ((*logits)["label"], "▮ 25.71 GiB at peak · 40%");
  EXPECT_EQ((*logits)["data"]["memoryBytes"], 27601666048);
  auto hover = hoverText(*client, w.script_uri, 72, 10);
  ASSERT_TRUE(hover);
  EXPECT_NE(hover->find("**Out of memory here**: asked 24.56 GiB with 14.16 GiB free"), std::string::npos) << *hover;
  auto held = hoverText(*client, w.script_uri, 59, 10);
  ASSERT_TRUE(held);
  EXPECT_NE(held->find("; the most of any line; made in the forward pass)"), std::string::npos) << *held;
  // 5 steps and the evaluation that failed: steps 2 to 5 are steady.
  EXPECT_NE(held->find("Allocates 798.0 MiB per step (4 allocations, the mean of 4 steady steps)"), std::string::npos)
      << *held;

  std::optional<json> oom;
  auto take = [&](const json& m) {
    if (m.value("method", "") != "textDocument/publishDiagnostics") return;
    for (const auto& diag : m["params"]["diagnostics"])
      if (diag.value("code", "") == "out-of-memory") oom = diag;
  };
  for (const auto& m : client->seen()) take(m);  // published while hints and hovers were asked for
  for (int i = 0; i < 20 && !oom; ++i) {
    auto d = client->waitForNotification("textDocument/publishDiagnostics", 10s);
    if (!d) break;
    for (const auto& diag : (*d)["params"]["diagnostics"])
      if (diag.value("code", "") == "out-of-memory") oom = diag;
  }
  ASSERT_TRUE(oom);
  EXPECT_EQ((*oom)["severity"], 1);
  EXPECT_EQ((*oom)["range"]["start"]["line"], 72);
  ASSERT_TRUE(oom->contains("relatedInformation")) << oom->dump();
  const json& first = (*oom)["relatedInformation"][0];
  EXPECT_EQ(first["location"]["uri"], w.script_uri);
  EXPECT_EQ(first["location"]["range"]["start"]["line"], 59);
  EXPECT_EQ(first["message"], "holds 25.71 GiB at the peak");

  client->notify("workspace/didChangeConfiguration", {{"settings", {{"sightline", {{"hints", {{"show", "time"}}}}}}}});
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    gone = hintsOf(*client, w.script_uri).empty();
    if (!gone) std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(gone);
  fs::remove_all(root);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

json requestResult(LspClient& client, const std::string& method, const json& params) {
  auto id = client.request(method, params);
  auto r = client.waitForResponse(id);
  return r ? *r : json();
}

// The step view over LSP: its data (the JSON report's figures), the self-contained page with
// the open script's hot lines, a lens on the training loop that opens it, and clear answers
// before a profile is loaded and to a format it does not know.
TEST(ProfileSession, TheStepViewAndItsLensOnTheTrainingLoop) {
  auto w = makeWorkspace("stepview", repoProfile("examples/train_small_naive.sqlite.xz"));
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/*.sqlite"}}});
  auto s = status(*client);
  ASSERT_TRUE(s) << client->stderrText();
  ASSERT_EQ((*s)["params"]["loaded"], true) << s->dump();
  json view = requestResult(*client, "sightline/stepView", nullptr)["result"];
  ASSERT_TRUE(view.is_object()) << view.dump();
  EXPECT_EQ(view["profile"]["file"], "naive.sqlite");
  ASSERT_EQ(view["ranks"].size(), 1u);
  EXPECT_EQ(view["ranks"][0]["steps"].size(), 6u);
  EXPECT_EQ(view["timelines"].size(), 1u);
  // The same bars as `report --format json`.
  auto report = runSightline("report --format json --profile '" + w.profile + "'", sourcePath(""));
  ASSERT_EQ(report.code, 0) << report.out;
  json report_doc = json::parse(report.out);
  EXPECT_EQ(view["ranks"], report_doc["step_view"]["ranks"]);
  // The same headline as the report, the status bar and the page's story.
  EXPECT_EQ(view["headline"], report_doc["step_view"]["headline"]);
  EXPECT_EQ((*s)["params"]["verdict"], view["headline"]["summary"]) << s->dump();
  ASSERT_TRUE(view["story"].is_array()) << view.dump().substr(0, 300);
  bool step_told = false;
  for (const auto& e : view["story"])
    step_told = step_told || (e["label"] == "Unprofiled" && e["lines"][0] == view["headline"]["text"]);
  EXPECT_TRUE(step_told) << view["story"].dump();
  // The page, with the open script's hot lines.
  json page = requestResult(*client, "sightline/stepView", {{"format", "html"}})["result"];
  ASSERT_TRUE(page.contains("html")) << page.dump().substr(0, 300);
  std::string html = page["html"];
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("return F.relu(self.bn(self.conv(x)))"), std::string::npos);
  auto bad = requestResult(*client, "sightline/stepView", {{"format", "svg"}});
  ASSERT_TRUE(bad.contains("error")) << bad.dump();
  EXPECT_EQ(bad["error"]["code"], -32602);
  // The lens: on `for step, (x, y) in enumerate(loader):` (line 100), opening the view.
  json lenses = requestResult(*client, "textDocument/codeLens", {{"textDocument", {{"uri", w.script_uri}}}})["result"];
  ASSERT_EQ(lenses.size(), 1u) << lenses.dump();
  EXPECT_EQ(lenses[0]["range"]["start"]["line"], 99);
  EXPECT_EQ(lenses[0]["command"]["command"], "sightline.stepView");
  // Not measured: the lens gives the step as captured, and says so.
  EXPECT_NE(lenses[0]["command"]["title"].get<std::string>().find("ms per step as captured"), std::string::npos)
      << lenses.dump();
  fs::remove_all(w.root);
}

TEST(ProfileSession, NoStepViewWithoutAProfile) {
  fs::path root = fs::temp_directory_path() / ("sightline-ws-noview-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy_file(testDataPath("h200/nsys/train_small.py"), root / "train_small.py");
  Workspace w = workspaceAt(root, "train_small.py");
  auto client = LspClient::spawnStdio();
  start(*client, w, json::object());
  ASSERT_TRUE(status(*client));
  EXPECT_TRUE(requestResult(*client, "sightline/stepView", json::object())["result"].is_null());
  json lenses = requestResult(*client, "textDocument/codeLens", {{"textDocument", {{"uri", w.script_uri}}}});
  EXPECT_EQ(lenses["result"], json::array()) << lenses.dump();
  fs::remove_all(root);
}

}  // namespace
}  // namespace sightline::testing

namespace sightline::testing {
namespace {

// One verdict per load, its inputs explicit: the DataLoader advice for an input-bound capture
// comes from the training script the story names, so the editor's step view and summary give
// the terminal's advice, word for word (the editor's was generic while only `report` read the
// script's DataLoader settings).
TEST(ProfileSession, TheEditorGivesTheReportsAdviceForAnInputBoundStep) {
  fs::path root = fs::temp_directory_path() / ("sightline-ws-loader-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "runs");
  fs::copy_file(testDataPath("verdict/verdict.py"), root / "verdict.py");
  std::string profile = (root / "runs" / "loader.sqlite").string();
  fs::copy_file(dataProfile("verdict/loader.sqlite.xz"), profile);
  Workspace w = workspaceAt(root, "verdict.py");
  auto report = runSightline("report --format json --profile '" + profile + "' verdict.py", root.string());
  ASSERT_EQ(report.code, 0) << report.out;
  json doc = json::parse(report.out);
  ASSERT_TRUE(doc.contains("verdict")) << report.out.substr(0, 300);
  std::string advice;
  for (const auto& c : doc["verdict"]["changes"])
    if (c["change"] == "loader-workers") advice = c["text"];
  ASSERT_FALSE(advice.empty()) << doc["verdict"].dump();
  EXPECT_NE(advice.find("num_workers"), std::string::npos) << "the script's DataLoader has no workers: " << advice;
  auto client = LspClient::spawnStdio();
  auto s = started(*client, w, {{"profiles", {"runs/*.sqlite"}}});
  ASSERT_TRUE(s && (*s)["loaded"] == true) << client->stderrText();
  json view = requestResult(*client, "sightline/stepView", nullptr)["result"];
  bool told = false;
  for (const auto& e : view["story"])
    for (const auto& line : e["lines"]) told = told || line.get<std::string>().find(advice) != std::string::npos;
  EXPECT_TRUE(told) << advice << "\n" << view["story"].dump();
  // Without the script named, `report` takes the same script from the profile's paths.
  auto unnamed = runSightline("report --format json --profile '" + profile + "'", root.string());
  ASSERT_EQ(unnamed.code, 0) << unnamed.out;
  EXPECT_EQ(json::parse(unnamed.out)["verdict"]["changes"], doc["verdict"]["changes"]);
  fs::remove_all(root);
}

}  // namespace
}  // namespace sightline::testing
