// Profile text made safe where Markdown is made.
#include "server/render/markdown.h"

#include <gtest/gtest.h>

namespace sightline::server::md {
namespace {

TEST(Markdown, CodeSpansHoldAnyText) {
  EXPECT_EQ(code("aten::mm"), "`aten::mm`");
  EXPECT_EQ(code("a`b"), "``a`b``");                  // a longer fence than the backticks inside
  EXPECT_EQ(code("`x"), "`` `x ``");                  // padded where it starts with one
  EXPECT_EQ(code("a\nb\r![i](u)"), "`a b ![i](u)`");  // one line; the rest is inert in a span
  EXPECT_EQ(code(""), "` `");
  EXPECT_EQ(cell("a|b"), "`a\\|b`");  // a table keeps its columns
}

TEST(Markdown, TextEscapesWhatWouldRender) {
  EXPECT_EQ(text("x![b](https://e/b.png)"), "x\\!\\[b\\](https\\://e/b.png)");
  EXPECT_EQ(text("<img src=x>"), "\\<img src=x\\>");
  EXPECT_EQ(text("# h *em* _u_"), "\\# h \\*em\\* \\_u\\_");
  EXPECT_EQ(text("- item\n1. two"), "\\- item 1. two");  // a list only at the start; one line
  EXPECT_EQ(text("see www.e.test or a@b"), "see www\\.e.test or a\\@b");
  EXPECT_EQ(text("H200 train_gpt.py:27 (3.2 ms)"), "H200 train_gpt.py:27 (3.2 ms)");
  EXPECT_EQ(text("a __init__ b"), "a \\_\\_init\\_\\_ b");
}

TEST(Markdown, TextKeepsItsCodeSpansAndEscapesAStrayBacktick) {
  EXPECT_EQ(text("call `x.item()` here"), "call `x.item()` here");
  EXPECT_EQ(text("a`![b](u)"), "a\\`\\!\\[b\\](u)");
  EXPECT_EQ(text("``a`b`` c"), "``a`b`` c");
  EXPECT_EQ(text("`a|b`"), "`a\\|b`");
}

TEST(Markdown, LinksEscapeTheirLabel) { EXPECT_EQ(link("x](y", "file:///a.py#L3"), "[x\\](y](file:///a.py#L3)"); }

}  // namespace
}  // namespace sightline::server::md
