// The workspace, client and requests the server's end-to-end tests with a real profile share
// (profile_session_test.cpp, profile_session_views_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>

#include <unistd.h>

#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing::session {

namespace fs = std::filesystem;

struct Workspace {
  fs::path root;
  std::string script_uri;
  std::string script_text;
  std::string profile;
};

inline Workspace makeWorkspace(const std::string& name, const std::string& naive) {
  Workspace w;
  w.root = fs::temp_directory_path() / ("sightline-ws-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(w.root);
  fs::create_directories(w.root / "runs");
  w.script_text = readFile(testDataPath("h200/nsys/train_small.py"));
  fs::copy_file(testDataPath("h200/nsys/train_small.py"), w.root / "train_small.py");
  w.profile = (w.root / "runs" / "naive.sqlite").string();
  fs::copy_file(naive, w.profile);
  w.script_uri = server::pathToUri((w.root / "train_small.py").string());
  return w;
}

inline json capabilities() {
  return {{"window", {{"workDoneProgress", true}}},
          {"workspace", {{"inlayHint", {{"refreshSupport", true}}}}},
          {"textDocument", {{"hover", {{"contentFormat", {"markdown"}}}}}}};
}

inline void start(LspClient& client, const Workspace& w, json settings) {
  auto id = client.request("initialize", {{"processId", nullptr},
                                          {"rootUri", server::pathToUri(w.root.string())},
                                          {"capabilities", capabilities()},
                                          {"initializationOptions", {{"settings", settings}}}});
  ASSERT_TRUE(client.waitForResponse(id));
  client.notify("initialized", json::object());
  client.notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", w.script_uri}, {"languageId", "python"}, {"version", 1}, {"text", w.script_text}}}});
}

inline std::optional<json> status(LspClient& client) {
  return client.waitForNotification("sightline/profileStatus", 30s);
}

// A server started on `w` with `settings`: the first status's params.
inline std::optional<json> started(LspClient& client, const Workspace& w, json settings) {
  start(client, w, std::move(settings));
  auto s = status(client);
  return s ? std::optional<json>((*s)["params"]) : std::nullopt;
}

// The same whose profiles setting names runs/*.sqlite.
inline std::optional<json> startOnRuns(LspClient& client, const Workspace& w) {
  return started(client, w, {{"profiles", {"runs/*.sqlite"}}});
}

// A workspace at `root` (made already) whose open script is `script` there.
inline Workspace workspaceAt(const fs::path& root, const std::string& script) {
  Workspace w;
  w.root = root;
  w.script_text = readFile((root / script).string());
  w.script_uri = server::pathToUri((root / script).string());
  return w;
}

// The status once the compareWith profile is loaded too.
inline std::optional<json> compareStatus(LspClient& client) {
  return client.waitFor(
      [](const json& m) {
        return m.value("method", "") == "sightline/profileStatus" && m["params"].contains("compareWith");
      },
      30s);
}

inline json hintsOf(LspClient& client, const std::string& uri) {
  auto id = client.request(
      "textDocument/inlayHint",
      {{"textDocument", {{"uri", uri}}},
       {"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 200}, {"character", 0}}}}}});
  auto r = client.waitForResponse(id);
  return r ? (*r)["result"] : json();
}

// The markdown of a hover at (line, character): "" when there is none, nullopt when no reply came.
inline std::optional<std::string> hoverText(LspClient& client, const std::string& uri, int line, int character) {
  auto id = client.request("textDocument/hover", {{"textDocument", {{"uri", uri}}},
                                                  {"position", {{"line", line}, {"character", character}}}});
  auto r = client.waitForResponse(id);
  if (!r) return std::nullopt;
  const json& result = (*r)["result"];
  return result.is_object() ? result["contents"].value("value", "") : "";
}

// A didChange that inserts `text` at (line, character).
inline json insertion(const std::string& uri, int version, int line, int character, const std::string& text) {
  json at = {{"line", line}, {"character", character}};
  json change = {{"range", {{"start", at}, {"end", at}}}, {"text", text}};
  return {{"textDocument", {{"uri", uri}, {"version", version}}}, {"contentChanges", json::array({change})}};
}

inline const json* hintOnLine(const json& hints, int line) {
  for (const auto& h : hints)
    if (h["position"]["line"] == line) return &h;
  return nullptr;
}

}  // namespace sightline::testing::session
