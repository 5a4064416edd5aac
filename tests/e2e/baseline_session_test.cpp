// End-to-end: `compareWith` naming a baseline run's rank summary (the artifact CI keeps,
// docs/ci.md), on real captures of tests/data/regress. The editor shows the regression gate's
// change of each line with its interval in hints and hovers, and a `regressed-since-baseline`
// diagnostic on the line that changed, the figures `sightline diff` gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A workspace holding `variant`'s script as train.py, its capture under runs/, and the base
// run's summary, made as CI makes it: where the base's script was.
struct Baseline {
  fs::path root;
  std::string script_uri, script_text;
};

Baseline makeBaseline(const std::string& variant) {
  Baseline w;
  w.root = fs::temp_directory_path() / ("sightline-baseline-" + variant + "-" + std::to_string(::getpid()));
  fs::remove_all(w.root);
  fs::create_directories(w.root / "runs");
  fs::create_directories(w.root / "base");
  fs::copy_file(dataProfile("regress/base.sqlite.xz"), w.root / "base" / "base.sqlite");
  fs::copy_file(testDataPath("regress/base.steps.json"), w.root / "base" / "base.steps.json");
  fs::copy_file(testDataPath("regress/train.py"), w.root / "base" / "train.py");
  auto made = runSightline("report --format summary --profile base.sqlite -o ../base.summary.json train.py",
                           (w.root / "base").string());
  EXPECT_EQ(made.code, 0) << made.out;
  fs::remove_all(w.root / "base");
  fs::copy_file(testDataPath("regress/" + variant + ".train.py"), w.root / "train.py");
  fs::copy_file(dataProfile("regress/" + variant + ".sqlite.xz"), w.root / "runs" / (variant + ".sqlite"));
  fs::copy_file(testDataPath("regress/" + variant + ".steps.json"), w.root / "runs" / (variant + ".steps.json"));
  w.script_text = readFile((w.root / "train.py").string());
  w.script_uri = server::pathToUri((w.root / "train.py").string());
  return w;
}

void start(LspClient& client, const Baseline& w, const std::string& variant) {
  json settings = {{"profiles", {"runs/" + variant + ".sqlite"}}, {"compareWith", "base.summary.json"}};
  auto id = client.request("initialize",
                           {{"processId", nullptr},
                            {"rootUri", server::pathToUri(w.root.string())},
                            {"capabilities", {{"textDocument", {{"hover", {{"contentFormat", {"markdown"}}}}}}}},
                            {"initializationOptions", {{"settings", settings}}}});
  ASSERT_TRUE(client.waitForResponse(id));
  client.notify("initialized", json::object());
  client.notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", w.script_uri}, {"languageId", "python"}, {"version", 1}, {"text", w.script_text}}}});
}

// The status once both the profile and the baseline are in.
bool compared(LspClient& client) {
  return client
      .waitFor(
          [](const json& m) {
            return m.value("method", "") == "sightline/profileStatus" && m["params"].value("loaded", false) &&
                   m["params"].contains("compareWith");
          },
          60s)
      .has_value();
}

json hintOn(LspClient& client, const std::string& uri, int line) {
  auto id = client.request(
      "textDocument/inlayHint",
      {{"textDocument", {{"uri", uri}}},
       {"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 200}, {"character", 0}}}}}});
  auto r = client.waitForResponse(id);
  if (!r) return nullptr;
  for (const auto& h : (*r)["result"])
    if (h["position"]["line"] == line) return h;
  return nullptr;
}

std::string hoverOn(LspClient& client, const std::string& uri, int line) {
  auto id = client.request("textDocument/hover",
                           {{"textDocument", {{"uri", uri}}}, {"position", {{"line", line}, {"character", 10}}}});
  auto r = client.waitForResponse(id);
  if (!r || !(*r)["result"].is_object()) return "";
  return (*r)["result"]["contents"].value("value", "");
}

// The first message `match` accepts, among those read already or still to come.
std::optional<json> seenOrNext(LspClient& client, const std::function<bool(const json&)>& match,
                               std::chrono::milliseconds timeout) {
  for (const auto& m : client.seen())
    if (match(m)) return m;
  return client.waitFor(match, timeout);
}

// The `regressed-since-baseline` diagnostics once published.
json regressedDiagnostics(LspClient& client) {
  auto published = seenOrNext(
      client,
      [](const json& m) {
        return m.value("method", "") == "textDocument/publishDiagnostics" &&
               m["params"]["diagnostics"].dump().find("regressed-since-baseline") != std::string::npos;
      },
      30s);
  json out = json::array();
  if (!published) return out;
  for (const auto& d : (*published)["params"]["diagnostics"])
    if (d["code"] == "regressed-since-baseline") out.push_back(d);
  return out;
}

// The MLP made wider (line 70): its line 75 grows past the spread; `diff` gives +3.87 ms.
TEST(BaselineSession, AWiderLayerShowsItsChangeWithAnIntervalAndADiagnostic) {
  auto w = makeBaseline("wide");
  auto client = LspClient::spawnStdio();
  start(*client, w, "wide");
  ASSERT_TRUE(compared(*client)) << client->stderrText();
  json hint = hintOn(*client, w.script_uri, 74);
  ASSERT_TRUE(hint.is_object()) << "no hint on line 75";
  std::string label = hint["label"].get<std::string>();
  EXPECT_NE(label.find("▲ +"), std::string::npos) << label;
  EXPECT_NE(label.find(" ±"), std::string::npos) << label;
  EXPECT_EQ(label.find("(noise)"), std::string::npos) << label;
  const json& reg = hint["data"]["regression"];
  EXPECT_TRUE(reg["certain"].get<bool>()) << hint.dump();
  EXPECT_TRUE(reg["regressed"].get<bool>()) << hint.dump();
  EXPECT_NEAR(reg["deltaNs"].get<double>(), 3.87e6, 0.2e6) << hint.dump();
  EXPECT_LT(reg["intervalNs"][0].get<double>(), reg["deltaNs"].get<double>());
  std::string card = hoverOn(*client, w.script_uri, 74);
  EXPECT_NE(card.find("**Since the baseline** `base.summary.json`"), std::string::npos) << card;
  EXPECT_NE(card.find("95% interval +"), std::string::npos) << card;
  EXPECT_NE(card.find("(past the runs' spread)"), std::string::npos) << card;
  json diags = regressedDiagnostics(*client);
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0]["range"]["start"]["line"], 74) << diags.dump();
  EXPECT_NE(diags[0]["message"].get<std::string>().find("Regressed since the baseline (base.summary.json)"),
            std::string::npos)
      << diags.dump();
  // An unchanged line of the file: within its spread, no diagnostic.
  for (const auto& d : diags) EXPECT_NE(d["range"]["start"]["line"], 62) << d.dump();
  fs::remove_all(w.root);
}

// An added `loss.item()` (line 123) costs no GPU time: the step grew past its spread and the
// line that now synchronizes is what the editor marks.
TEST(BaselineSession, AnAddedItemIsMarkedAsTheNewSync) {
  auto w = makeBaseline("item");
  auto client = LspClient::spawnStdio();
  start(*client, w, "item");
  ASSERT_TRUE(compared(*client)) << client->stderrText();
  json hint = hintOn(*client, w.script_uri, 122);
  ASSERT_TRUE(hint.is_object()) << "no hint on line 123";
  EXPECT_NE(hint["label"].get<std::string>().find("+1.0 sync/step"), std::string::npos) << hint.dump();
  std::string card = hoverOn(*client, w.script_uri, 122);
  EXPECT_NE(card.find("This line now synchronizes 1.0× a step (was 0.0)"), std::string::npos) << card;
  json diags = regressedDiagnostics(*client);
  ASSERT_FALSE(diags.empty());
  EXPECT_EQ(diags[0]["range"]["start"]["line"], 122) << diags.dump();
  EXPECT_NE(diags[0]["message"].get<std::string>().find("synchronizes 1.0x a step"), std::string::npos) << diags.dump();
  fs::remove_all(w.root);
}

// A baseline that is no summary of this script's runs is refused with the reason, and nothing
// is compared.
TEST(BaselineSession, AnIncomparableBaselineIsSaidAndNothingMarked) {
  auto w = makeBaseline("wide");
  // The same summary, said to be of an H100.
  std::string text = readFile((w.root / "base.summary.json").string());
  auto at = text.find("NVIDIA H200");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "NVIDIA H100");
  {
    std::ofstream out(w.root / "base.summary.json", std::ios::trunc);
    out << text;
  }
  auto client = LspClient::spawnStdio();
  start(*client, w, "wide");
  ASSERT_TRUE(compared(*client)) << client->stderrText();
  auto said = seenOrNext(
      *client,
      [](const json& m) {
        return m.value("method", "") == "window/logMessage" &&
               m["params"]["message"].get<std::string>().find("cannot be compared") != std::string::npos;
      },
      10s);
  ASSERT_TRUE(said);
  EXPECT_NE((*said)["params"]["message"].get<std::string>().find("different GPUs"), std::string::npos) << said->dump();
  json hint = hintOn(*client, w.script_uri, 74);
  ASSERT_TRUE(hint.is_object());
  EXPECT_FALSE(hint["data"].contains("regression")) << hint.dump();
  fs::remove_all(w.root);
}

}  // namespace
}  // namespace sightline::testing
