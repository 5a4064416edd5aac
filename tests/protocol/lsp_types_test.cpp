// LSP type mapping: capabilities boiled down to flags, diagnostics and edits serialized.
#include "protocol/lsp_types.h"

#include <gtest/gtest.h>

namespace sightline::protocol {
namespace {

TEST(LspTypes, InitializeFlags) {
  auto p = parse<InitializeParams>(json::parse(R"({
    "processId": 12, "rootUri": "file:///w",
    "workspaceFolders": [{"uri": "file:///w", "name": "w"}],
    "capabilities": {
      "general": {"positionEncodings": ["utf-16", "utf-8"]},
      "workspace": {"configuration": true, "applyEdit": true,
                    "didChangeConfiguration": {"dynamicRegistration": true}},
      "textDocument": {"codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": []}}},
                       "publishDiagnostics": {"versionSupport": true}}}})"));
  ASSERT_TRUE(p) << p.error().describe();
  const auto& c = p->capabilities;
  EXPECT_TRUE(c.utf8_positions);
  EXPECT_TRUE(c.configuration);
  EXPECT_TRUE(c.apply_edit);
  EXPECT_TRUE(c.did_change_configuration_dynamic);
  EXPECT_TRUE(c.code_action_literals);
  EXPECT_TRUE(c.diagnostic_version);
  EXPECT_EQ(p->workspaceFolders, std::vector<std::string>{"file:///w"});

  auto bare = parse<InitializeParams>(json::parse(R"({"processId": null, "capabilities": {}})"));
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->capabilities.utf8_positions);
  EXPECT_FALSE(bare->capabilities.configuration);
}

TEST(LspTypes, DiagnosticAndCodeActionJson) {
  Diagnostic d{{{1, 2}, {1, 5}}, 2, "sync-in-loop", "file:///docs/rules/sync-in-loop.md", "sightline", "msg"};
  json j = toJson(d);
  EXPECT_EQ(j["range"]["start"]["character"], 2);
  EXPECT_EQ(j["codeDescription"]["href"], "file:///docs/rules/sync-in-loop.md");
  EXPECT_EQ(j["source"], "sightline");
  CodeAction a;
  a.title = "Fix";
  a.kind = "quickfix";
  a.isPreferred = true;
  a.diagnostics.push_back(d);
  a.edit = WorkspaceEdit{{{"file:///a.py", {{{{0, 0}, {0, 1}}, "x"}}}}};
  json aj = toJson(a);
  EXPECT_EQ(aj["edit"]["changes"]["file:///a.py"][0]["newText"], "x");
  EXPECT_TRUE(aj["isPreferred"].get<bool>());
  auto back = parse<WorkspaceEdit>(aj["edit"]);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->changes["file:///a.py"][0].range.end.character, 1u);
}

TEST(LspTypes, CodeActionParams) {
  auto p = parse<CodeActionParams>(json::parse(R"({"textDocument": {"uri": "u"},
      "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}},
      "context": {"diagnostics": [], "only": ["quickfix"]}})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->only, std::vector<std::string>{"quickfix"});
  auto bad = parse<CodeActionParams>(json::parse(R"({"textDocument": {"uri": "u"}, "range": {}, "context": {}})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, "params.range.start");
}

}  // namespace
}  // namespace sightline::protocol
