// Documents: full and incremental changes in UTF-16 positions; findings follow edits.
#include "server/workspace/document_store.h"

#include <gtest/gtest.h>

#include <algorithm>

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

TEST(DocumentStore, ARuleOverItsBudgetStopsAndSaysWhere) {
  std::string text = "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n";
  for (int i = 0; i < 20000; ++i) text += "    a" + std::to_string(i) + " = loss.item()\n";
  DocumentStore store;
  Document& doc = store.open("file:///t.py", 1, text);
  features::RuleConfig config;
  const auto& stopped = doc.findings(config, 1, /*budget_ms=*/1e-6);  // a nanosecond: stops after one batch
  ASSERT_FALSE(doc.stoppedRules().empty());
  EXPECT_LT(stopped.size(), 1000u);
  auto note = std::find_if(stopped.begin(), stopped.end(), [](const auto& f) { return f.code == "rules-stopped"; });
  ASSERT_NE(note, stopped.end());
  EXPECT_TRUE(std::is_sorted(stopped.begin(), stopped.end(),
                             [](const auto& a, const auto& b) { return a.range.begin < b.range.begin; }));
  EXPECT_EQ(doc.findings(config, 2, /*budget_ms=*/0).size(), 20000u);  // no budget: every finding
  EXPECT_TRUE(doc.stoppedRules().empty());
}

TEST(DocumentStore, EditsThatJoinOrSplitACarriageReturnKeepLinesAndFindings) {
  // "\r" ends a line as "\n" and "\r\n" do. A "\r" typed before a "\r\n" adds an empty line,
  // and deleting it joins them back: lines, the tree and the findings follow.
  DocumentStore store;
  std::string text = "for a in loader:\r\n    a.backward()\r    v = a.item()\r";
  Document& doc = store.open("file:///t.py", 1, text);
  features::RuleConfig config;
  ASSERT_EQ(doc.findings(config, 1).size(), 1u);
  EXPECT_EQ(doc.findings(config, 1)[0].range.begin, text.find("a.item()"));
  EXPECT_EQ(doc.file().lines().lineCount(), 4u);
  EXPECT_FALSE(doc.file().hasSyntaxErrors());
  doc.applyChanges(2, {{protocol::Range{{0, 16}, {0, 16}}, "\r"}}, PositionEncoding::Utf16);
  EXPECT_EQ(doc.file().lines().lineCount(), 5u);
  EXPECT_EQ(doc.lineTracker().baselineLine(2), 1);  // the backward line moved down one
  EXPECT_EQ(doc.lineTracker().baselineLine(3), 2);
  doc.applyChanges(3, {{protocol::Range{{0, 16}, {1, 0}}, ""}}, PositionEncoding::Utf16);
  EXPECT_EQ(doc.file().text(), text);
  EXPECT_EQ(doc.lineTracker().baselineLine(2), 2);
  EXPECT_EQ(doc.file().lines().lineCount(), 4u);
  ASSERT_EQ(doc.findings(config, 1).size(), 1u);
  EXPECT_EQ(doc.file().lines().pointAt(doc.findings(config, 1)[0].range.begin).line, 2u);
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
