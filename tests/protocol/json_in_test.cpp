// JsonIn: typed reads with JSON paths in errors; dumpJson never throws.
#include "protocol/json_in.h"

#include <gtest/gtest.h>

#include "protocol/lsp_types.h"

namespace sightline::protocol {
namespace {

TEST(JsonIn, ErrorsNameTheFailingPath) {
  auto bad = parse<DidChangeTextDocumentParams>(nlohmann::json::parse(
      R"({"textDocument": {"uri": "file:///a.py", "version": 2},
          "contentChanges": [{"text": "x"}, {"range": {"start": {"line": -1, "character": 0},
                                                       "end": {"line": 0, "character": 0}}, "text": "y"}]})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().path, "params.contentChanges[1].range.start.line");
  EXPECT_EQ(bad.error().message, "expected an unsigned integer");

  auto missing = parse<DidOpenTextDocumentParams>(nlohmann::json::parse(R"({"textDocument": {"uri": "u"}})"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().describe(), "params.textDocument.languageId: missing required field");

  auto wrong_type = parse<DidOpenTextDocumentParams>(nlohmann::json::parse("[1, 2]"));
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().path, "params");
}

TEST(JsonIn, DumpReplacesInvalidUtf8) {
  nlohmann::json j = {{"text", std::string("ok \xff\xfe end")}};
  std::string out = dumpJson(j);
  EXPECT_NE(out.find("ok"), std::string::npos);
  EXPECT_NE(out.find("\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace sightline::protocol
