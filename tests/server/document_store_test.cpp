// Documents: full and incremental changes in UTF-16 positions; findings follow edits.
#include "server/document_store.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

using protocol::TextDocumentContentChangeEvent;

TEST(DocumentStore, IncrementalAndFullChanges) {
  DocumentStore store;
  Document& doc = store.open("file:///t.py", 1, "x = 'é'\nfor a in loader:\n    a.backward()\n");
  std::vector<TextDocumentContentChangeEvent> changes;
  changes.push_back({protocol::Range{{0, 5}, {0, 6}}, "🚀"});  // replaces é (1 UTF-16 unit)
  changes.push_back({protocol::Range{{2, 4}, {2, 4}}, "v = a.item()\n    "});
  doc.applyChanges(2, changes, PositionEncoding::Utf16);
  EXPECT_EQ(doc.file().text(), "x = '🚀'\nfor a in loader:\n    v = a.item()\n    a.backward()\n");
  EXPECT_EQ(doc.version(), 2);
  features::RuleConfig config;
  ASSERT_EQ(doc.findings(config, 1).size(), 1u);
  EXPECT_EQ(doc.findings(config, 1)[0].code, "sync-in-loop");
  doc.applyChanges(3, {{std::nullopt, "print(1)\n"}}, PositionEncoding::Utf16);
  EXPECT_EQ(doc.file().text(), "print(1)\n");
  EXPECT_TRUE(doc.findings(config, 1).empty());
  // Out-of-range and reversed ranges are clamped, never crash.
  doc.applyChanges(4, {{protocol::Range{{9, 9}, {0, 2}}, "!"}}, PositionEncoding::Utf16);
  EXPECT_EQ(doc.file().text(), "pr!");
}

TEST(DocumentStore, OpenFindClose) {
  DocumentStore store;
  store.open("a", 1, "");
  EXPECT_NE(store.find("a"), nullptr);
  EXPECT_EQ(store.find("b"), nullptr);
  EXPECT_TRUE(store.close("a"));
  EXPECT_FALSE(store.close("a"));
  EXPECT_TRUE(store.all().empty());
}

}  // namespace
}  // namespace sightline::server
