// The story's rows rendered per form: terminal columns, Markdown, JSON rows for the page. The
// figures come formatted from units.h; the rows are never read back from text.
#include "server/render/story_render.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

using features::RowRole;
using features::Story;
using features::StoryChunk;
using features::StoryLine;
using features::StoryRow;
using features::storyRow;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

StoryLine line(const std::string& text) {
  StoryLine l;
  l << text;
  return l;
}

Story sample() {
  Story s;
  StoryLine step;
  step << StoryChunk::ms(13.3e6) << " ms median as captured";
  s.push_back(storyRow("Step", step));
  s.push_back(storyRow("Unprofiled", line("between 4.97 ms and 14.0 ms")));
  s.back().title = "Without the profiler";
  StoryLine cause;
  cause << "host-device syncs " << StoryChunk::ms(3.34e6) << " ms/step (" << StoryChunk::place("/w/train.py", 109)
        << ")";
  s.push_back(storyRow("", cause, RowRole::Cause));
  s.push_back(storyRow("Try", line("sync less `often`"), RowRole::Change));
  s.back().qualifier = "as captured";
  s.push_back(storyRow("", line("keep values on the GPU"), RowRole::Change));
  StoryLine oom;
  oom << StoryChunk::place("/w/gpt_mem.py", 73) << " (" << StoryChunk::code("evaluate") << ") asked "
      << StoryChunk::bytes(26371389440);
  s.push_back(storyRow("Out of memory", oom));
  s.push_back(storyRow("Ranks", line("2 (2 processes, 2 with GPU work)")));
  features::StoryTable t;
  t.columns = {{"rank", true, 10}, {"busy", false, 8}};
  t.rows = {{line("rank 0"), StoryLine{StoryChunk::share(0.81)}},
            {line("rank 1"), StoryLine{StoryChunk::share(0.006)}}};
  t.note = line("(per rank)");
  s.back().table = t;
  s.push_back(storyRow("Warning", line("lost <records>"), RowRole::Warning));
  return s;
}

TEST(StoryRender, TerminalColumns) {
  std::string text = terminalText(sample());
  EXPECT_EQ(text,
            "Step      13.3 ms median as captured\n"
            "Unprofiled between 4.97 ms and 14.0 ms\n"
            "          host-device syncs 3.34 ms/step (train.py:109)\n"
            "Try       (as captured) sync less `often`\n"
            "          keep values on the GPU\n"
            "Out of memory  gpt_mem.py:73 (evaluate) asked 24.56 GiB\n"
            "Ranks     2 (2 processes, 2 with GPU work)\n"
            "          rank          busy\n"
            "          rank 0         81%\n"
            "          rank 1        0.6%\n"
            "          (per rank)\n"
            "Warning   lost <records>\n");
}

TEST(StoryRender, MarkdownListsNumbersLinksAndEscapes) {
  std::string md = storyMarkdown(sample());
  EXPECT_TRUE(has(md, "**Step:** 13.3 ms median as captured\n\n")) << md;
  EXPECT_TRUE(has(md, "**Without the profiler:** between")) << md;
  EXPECT_TRUE(has(md, "- host-device syncs 3.34 ms/step ([train.py:109](file:///w/train.py#L109)\\)\n\n")) << md;
  EXPECT_TRUE(has(md, "**Try** (as captured):\n\n1. sync less `often`\n2. keep values on the GPU\n")) << md;
  EXPECT_TRUE(has(md, "`gpt_mem.py:73`") || has(md, "[gpt_mem.py:73]")) << md;
  EXPECT_TRUE(has(md, "(`evaluate`\\)")) << md;
  EXPECT_TRUE(has(md, "| rank | busy |\n|---|---:|\n| rank 0 | 81% |")) << md;
  EXPECT_FALSE(has(md, "<records>")) << "profile text is escaped: " << md;
}

TEST(StoryRender, JsonRowsForThePage) {
  auto rows = storyRowsJson(sample());
  ASSERT_EQ(rows.size(), sample().size());
  EXPECT_EQ(rows[0]["label"], "Step");
  EXPECT_EQ(rows[0]["lines"][0], "13.3 ms median as captured");
  EXPECT_EQ(rows[0]["parts"][0][0]["kind"], "figure");
  EXPECT_EQ(rows[0]["parts"][0][0]["text"], "13.3");
  EXPECT_EQ(rows[2]["role"], "cause");
  EXPECT_EQ(rows[2]["parts"][0][3]["kind"], "place");
  EXPECT_EQ(rows[2]["parts"][0][3]["text"], "train.py:109");
  EXPECT_EQ(rows[2]["parts"][0][3]["path"], "/w/train.py");
  EXPECT_EQ(rows[2]["parts"][0][3]["line"], 109);
  EXPECT_EQ(rows[3]["qualifier"], "as captured");
  EXPECT_EQ(rows[6]["table"]["rows"][1][1], "0.6%");
  EXPECT_EQ(rows[6]["table"]["columns"][0]["left"], true);
  EXPECT_EQ(rows[7]["role"], "warning");
}

}  // namespace
}  // namespace sightline::server
