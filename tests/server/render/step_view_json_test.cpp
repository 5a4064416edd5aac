// The report's header as the page's story: labels and their lines, continuations kept together.
#include "server/render/step_view_json.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

TEST(StoryJson, TheHeaderInLabelsAndLines) {
  auto story = storyJson(
      "Step      13.3 ms median as captured\n"
      "Unprofiled between 4.97 ms and 14.0 ms\n"
      "Profiler  the capture added at most 9.04 ms/step\n"
      "          as captured: host-device syncs 2.20 ms/step\n"
      "Out of memory  gpt_mem.py:73 (evaluate) asked 24.56 GiB\n"
      "          called from gpt_mem.py:159 (<module>)\n"
      "GPU time  29.8 ms\n"
      "\n"
      "train.py: 100.0% of GPU time on its lines\n");
  ASSERT_EQ(story.size(), 5u) << story.dump();
  EXPECT_EQ(story[0]["label"], "Step");
  EXPECT_EQ(story[0]["lines"][0], "13.3 ms median as captured");
  EXPECT_EQ(story[1]["label"], "Unprofiled");
  EXPECT_EQ(story[1]["lines"][0], "between 4.97 ms and 14.0 ms");
  EXPECT_EQ(story[2]["lines"].size(), 2u);
  EXPECT_EQ(story[2]["lines"][1], "as captured: host-device syncs 2.20 ms/step");
  EXPECT_EQ(story[3]["label"], "Out of memory");
  EXPECT_EQ(story[3]["lines"][1], "called from gpt_mem.py:159 (<module>)");
  EXPECT_EQ(story[4]["label"], "GPU time") << "the header ends at its first blank line";
  EXPECT_TRUE(storyJson("").empty());
}

}  // namespace
}  // namespace sightline::server
