// End-to-end: the real binary driven by a scripted client over pipes and over TCP.
#include <gtest/gtest.h>

#include "analysis/features/edits.h"
#include "analysis/source/source_file.h"
#include "server/lsp/position_conversion.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

const json kCapabilities = {
    {"workspace", {{"applyEdit", true}, {"configuration", false}}},
    {"textDocument",
     {{"codeAction", {{"codeActionLiteralSupport", {{"codeActionKind", {{"valueSet", {"quickfix"}}}}}}}},
      {"publishDiagnostics", {{"versionSupport", true}}}}}};

const std::string kUri = "file:///work/examples/train_small.py";

// Applies LSP text edits (UTF-16 positions) to a text, as an editor would.
std::string applyLspEdits(const std::string& text, const json& edits) {
  source::SourceFile file(text);
  std::vector<features::TextEdit> converted;
  for (const auto& e : edits) {
    protocol::Position start{e["range"]["start"]["line"], e["range"]["start"]["character"]};
    protocol::Position end{e["range"]["end"]["line"], e["range"]["end"]["character"]};
    converted.push_back({{server::toOffset(text, file.lines(), start, server::PositionEncoding::Utf16),
                          server::toOffset(text, file.lines(), end, server::PositionEncoding::Utf16)},
                         e["newText"]});
  }
  return features::applyEdits(text, converted).value();
}

std::vector<std::string> codesOf(const json& publish) {
  std::vector<std::string> codes;
  for (const auto& d : publish["params"]["diagnostics"]) codes.push_back(d["code"]);
  return codes;
}

void runFullSession(LspClient& client) {
  json init = client.handshake(kCapabilities);
  EXPECT_EQ(init["capabilities"]["positionEncoding"], "utf-16");
  EXPECT_EQ(init["capabilities"]["textDocumentSync"]["change"], 2);
  EXPECT_EQ(init["serverInfo"]["name"], "sightline");

  std::string text = readFile(testDataPath("h200/nsys/train_small.py"));
  client.notify("textDocument/didOpen",
                {{"textDocument", {{"uri", kUri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  auto published = client.waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(published) << client.stderrText();
  EXPECT_EQ((*published)["params"]["uri"], kUri);
  EXPECT_EQ((*published)["params"]["version"], 1);
  EXPECT_EQ(codesOf(*published),
            (std::vector<std::string>{"dataloader-num-workers", "dataloader-pin-memory", "missing-non-blocking",
                                      "missing-non-blocking", "sync-in-loop"}));
  const json& first_copy = (*published)["params"]["diagnostics"][2];
  EXPECT_EQ(first_copy["range"]["start"]["line"], 101);
  EXPECT_EQ(first_copy["source"], "sightline");
  EXPECT_NE(first_copy["codeDescription"]["href"].get<std::string>().find("docs/rules/missing-non-blocking.md"),
            std::string::npos);

  // Ask for actions on the first `.to(device)` and apply the preferred quick fix.
  int64_t id = client.request("textDocument/codeAction", {{"textDocument", {{"uri", kUri}}},
                                                          {"range", first_copy["range"]},
                                                          {"context", {{"diagnostics", json::array({first_copy})}}}});
  auto actions = client.waitForResponse(id);
  ASSERT_TRUE(actions);
  const json* fix = nullptr;
  for (const auto& a : (*actions)["result"])
    if (a["title"] == "Add non_blocking=True") fix = &a;
  ASSERT_NE(fix, nullptr) << actions->dump(2);
  EXPECT_EQ((*fix)["kind"], "quickfix");
  EXPECT_EQ((*fix)["diagnostics"][0]["code"], "missing-non-blocking");
  const json& edits = (*fix)["edit"]["changes"][kUri];
  std::string fixed = applyLspEdits(text, edits);
  EXPECT_NE(fixed.find("x = x.to(device, non_blocking=True)"), std::string::npos);

  // Send the edit back as incremental changes, as the editor does after applying it.
  json changes = json::array();
  for (const auto& e : edits) changes.push_back({{"range", e["range"]}, {"text", e["newText"]}});
  client.notify("textDocument/didChange",
                {{"textDocument", {{"uri", kUri}, {"version", 2}}}, {"contentChanges", changes}});
  auto updated = client.waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(updated);
  EXPECT_EQ((*updated)["params"]["version"], 2);
  EXPECT_EQ(codesOf(*updated).size(), 4u);

  // Typing fast: several changes, one debounced publish for the last version.
  json insert_line = json::parse(R"([{"range": {"start": {"line": 0, "character": 0},
                                                 "end": {"line": 0, "character": 0}}, "text": "#\n"}])");
  for (int v = 3; v <= 5; ++v)
    client.notify("textDocument/didChange",
                  {{"textDocument", {{"uri", kUri}, {"version", v}}}, {"contentChanges", insert_line}});
  auto debounced = client.waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(debounced);
  EXPECT_EQ((*debounced)["params"]["version"], 5);
  EXPECT_EQ((*debounced)["params"]["diagnostics"][0]["range"]["start"]["line"], 86 + 3);

  // Configuration pushed by the client turns a rule off.
  client.notify("workspace/didChangeConfiguration",
                {{"settings", {{"sightline", {{"rules", {{"dataloader-num-workers", "off"}}}}}}}});
  auto reconfigured = client.waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(reconfigured);
  EXPECT_EQ(codesOf(*reconfigured).size(), 3u);

  client.notify("textDocument/didClose", {{"textDocument", {{"uri", kUri}}}});
  auto cleared = client.waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(cleared);
  EXPECT_TRUE((*cleared)["params"]["diagnostics"].empty());

  int64_t shutdown = client.request("shutdown", nullptr);
  auto reply = client.waitForResponse(shutdown);
  ASSERT_TRUE(reply);
  EXPECT_TRUE((*reply)["result"].is_null());
  client.notify("exit", nullptr);
  EXPECT_EQ(client.waitExit(), 0);
}

TEST(LspSession, FullSessionOverStdio) {
  auto client = LspClient::spawnStdio({"--diagnostics-delay-ms", "50"});
  runFullSession(*client);
}

TEST(LspSession, FullSessionOverTcp) {
  auto client = LspClient::spawnTcp({"--diagnostics-delay-ms", "50"});
  runFullSession(*client);
}

TEST(LspSession, Utf8PositionsWhenTheClientOffersThem) {
  auto client = LspClient::spawnStdio();
  json init = client->handshake({{"general", {{"positionEncodings", {"utf-8", "utf-16"}}}}});
  EXPECT_EQ(init["capabilities"]["positionEncoding"], "utf-8");
  std::string text = "s = '🚀🚀'; import torch\nfor x in loader:\n    loss.backward()\n    v = 'é'; w = loss.item()\n";
  client->notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", "file:///u.py"}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  auto published = client->waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(published);
  ASSERT_EQ((*published)["params"]["diagnostics"].size(), 1u);
  // `loss.item()` begins at byte 18 of its line ('é' is 2 bytes).
  EXPECT_EQ((*published)["params"]["diagnostics"][0]["range"]["start"]["character"], 18);
}

TEST(LspSession, PullsConfigurationAndRegistersForChanges) {
  auto client = LspClient::spawnStdio();
  client->handshake(
      {{"workspace", {{"configuration", true}, {"didChangeConfiguration", {{"dynamicRegistration", true}}}}}});
  auto reg = client->waitFor([](const json& m) { return m.value("method", "") == "client/registerCapability"; });
  ASSERT_TRUE(reg);
  client->respond((*reg)["id"], nullptr);
  auto config = client->waitFor([](const json& m) { return m.value("method", "") == "workspace/configuration"; });
  ASSERT_TRUE(config);
  EXPECT_EQ((*config)["params"]["items"][0]["section"], "sightline");
  client->respond((*config)["id"], json::array({{{"rules", {{"sync-in-loop", "error"}}}}}));
  client->notify("textDocument/didOpen",
                 {{"textDocument",
                   {{"uri", "file:///c.py"},
                    {"languageId", "python"},
                    {"version", 1},
                    {"text", "for x in loader:\n    loss.backward()\n    v = loss.item()\n"}}}});
  auto published = client->waitFor([](const json& m) {
    return m.value("method", "") == "textDocument/publishDiagnostics" && !m["params"]["diagnostics"].empty();
  });
  ASSERT_TRUE(published);
  EXPECT_EQ((*published)["params"]["diagnostics"][0]["severity"], 1);
}

TEST(LspSession, ExecuteCommandSendsAnApplyEditRequest) {
  auto client = LspClient::spawnStdio();
  client->handshake(kCapabilities);
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  std::string uri = "file:///k/train_small.py";
  client->notify("textDocument/didOpen",
                 {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  // Line 86 (0-based 85) is inside the training loop.
  int64_t id = client->request(
      "workspace/executeCommand",
      {{"command", "sightline.limitProfilingWindow"}, {"arguments", {uri, {{"line", 85}, {"character", 12}}, 2, 3}}});
  auto apply = client->waitFor([](const json& m) { return m.value("method", "") == "workspace/applyEdit"; });
  ASSERT_TRUE(apply) << client->stderrText();
  std::string out = applyLspEdits(text, (*apply)["params"]["edit"]["changes"][uri]);
  EXPECT_NE(out.find("if not 1 <= step <= 4:"), std::string::npos) << out;
  EXPECT_NE(out.find("if step == 2:"), std::string::npos) << out;
  EXPECT_NE(out.find("profile_window(profile_step, profile_marks)"), std::string::npos) << out;
  EXPECT_FALSE(source::SourceFile(out).hasSyntaxErrors());
  client->respond((*apply)["id"], {{"applied", true}});
  auto reply = client->waitForResponse(id);
  ASSERT_TRUE(reply);
  EXPECT_TRUE((*reply)["result"].is_null());
  // Outside any training loop the command fails with a clear error.
  int64_t bad = client->request("workspace/executeCommand", {{"command", "sightline.limitProfilingWindow"},
                                                             {"arguments", {uri, {{"line", 0}, {"character", 0}}}}});
  auto err = client->waitForResponse(bad);
  ASSERT_TRUE(err);
  EXPECT_EQ((*err)["error"]["code"], -32803);
}

TEST(LspSession, CodeActionsIncludeRefactors) {
  auto client = LspClient::spawnStdio();
  client->handshake(kCapabilities);
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  std::string uri = "file:///k/train_small.py";
  client->notify("textDocument/didOpen",
                 {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", text}}}});
  json cursor = {{"line", 85}, {"character", 20}};
  int64_t id = client->request("textDocument/codeAction", {{"textDocument", {{"uri", uri}}},
                                                           {"range", {{"start", cursor}, {"end", cursor}}},
                                                           {"context", {{"diagnostics", json::array()}}}});
  auto reply = client->waitForResponse(id);
  ASSERT_TRUE(reply);
  std::vector<std::string> titles;
  for (const auto& a : (*reply)["result"]) titles.push_back(a["title"]);
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Wrap in NVTX range \"train_step\""), titles.end());
  EXPECT_NE(std::find(titles.begin(), titles.end(), "Annotate training step with NVTX ranges"), titles.end());
  EXPECT_NE(
      std::find(titles.begin(), titles.end(),
                "Time steps 5..24, then profile steps 25..29 (CUDA events; nsys --capture-range=cudaProfilerApi)"),
      titles.end());
  // `only` filters by kind.
  int64_t only = client->request("textDocument/codeAction",
                                 {{"textDocument", {{"uri", uri}}},
                                  {"range", {{"start", cursor}, {"end", cursor}}},
                                  {"context", {{"diagnostics", json::array()}, {"only", {"quickfix"}}}}});
  auto filtered = client->waitForResponse(only);
  ASSERT_TRUE(filtered);
  EXPECT_TRUE((*filtered)["result"].empty());
}

TEST(LspSession, ExitWithoutShutdownExitsWithOne) {
  auto client = LspClient::spawnStdio();
  client->handshake();
  client->notify("exit", nullptr);
  EXPECT_EQ(client->waitExit(), 1);
}

TEST(LspSession, EndOfInputEndsTheServer) {
  auto client = LspClient::spawnStdio();
  client->handshake();
  client->closeInput();
  EXPECT_EQ(client->waitExit(), 1);
}

}  // namespace
}  // namespace sightline::testing
