// Source matching on real captures: the scripts they profiled match (and a version that only
// adds code below the profiled functions), files with lines added above do not; edits tracked in the editor do not
// count as a mismatch.
#include "analysis/join/function_anchors.h"

#include <gtest/gtest.h>

#include "analysis/features/source_match.h"
#include "analysis/ingest/kineto_reader.h"
#include "analysis/ingest/nsys_reader.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

std::vector<FunctionAnchor> anchorsOf(const model::Profile& profile, const std::string& suffix) {
  std::vector<FunctionAnchor> out;
  for (const auto& [file, anchors] : collectFunctionAnchors(profile)) {
    const auto& name = profile.strings[file];
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.insert(out.end(), anchors.begin(), anchors.end());
  }
  return out;
}

SourceMatch check(const std::string& text, const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                  const source::LineTracker* tracker = nullptr) {
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  return matchSource(file, index, anchors, profile, tracker);
}

TEST(SourceMatch, NsysBacktracesMatchTheProfiledScriptOnly) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto r = ingest::loadNsysSqlite(path);
  ASSERT_TRUE(r.profile) << r.error;
  auto anchors = anchorsOf(*r.profile, "train_small.py");
  ASSERT_GT(anchors.size(), 5u);
  std::string profiled = testing::readFile(testing::testDataPath("h200/nsys/train_small.py"));
  auto same = check(profiled, anchors, *r.profile);
  EXPECT_GT(same.checked, 5u);
  EXPECT_EQ(same.mismatched, 0u) << same.example;
  EXPECT_FALSE(same.differs());
  EXPECT_EQ(features::sourceMismatchMessage(same, "train_small.py"), "");

  // Three lines added at the top outside the editor: the profile's lines now miss their defs.
  auto shifted = check("import os\nimport sys\nimport math\n" + profiled, anchors, *r.profile);
  EXPECT_TRUE(shifted.differs()) << shifted.mismatched << " of " << shifted.checked;
  std::string message = features::sourceMismatchMessage(shifted, "train_small.py");
  EXPECT_NE(message.find("train_small.py differs from the source the profile measured"), std::string::npos);
  EXPECT_NE(message.find("is not in `"), std::string::npos) << message;

  // The same three lines typed in the editor (tracked): no mismatch.
  source::SourceFile tracked(profiled);
  source::LineTracker tracker(tracked.lines().lineCount());
  tracker.edit(tracked.lines(), 0, 0, "import os\nimport sys\nimport math\n");
  auto typed = check("import os\nimport sys\nimport math\n" + profiled, anchors, *r.profile, &tracker);
  EXPECT_EQ(typed.mismatched, 0u) << typed.example;
}

TEST(SourceMatch, KinetoFramesMatchTheProfiledScriptOnly) {
  auto loaded = ingest::loadKinetoTrace(testing::testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  auto anchors = anchorsOf(*loaded.profile, "train_small.py");
  ASSERT_GT(anchors.size(), 3u);
  auto same = check(testing::readFile(testing::testDataPath("h200/kineto/train_small.py")), anchors, *loaded.profile);
  EXPECT_GT(same.checked, 3u);
  EXPECT_EQ(same.mismatched, 0u) << same.example;
  // The nsys capture's version adds code below the profiled functions: still a match.
  auto other = check(testing::readFile(testing::testDataPath("h200/nsys/train_small.py")), anchors, *loaded.profile);
  EXPECT_FALSE(other.differs()) << other.example;
  // A docstring added at the top moves every def.
  auto moved = check(
      "\"\"\"Trainer.\n\nSmall CNN.\n\"\"\"\n" + testing::readFile(testing::testDataPath("h200/kineto/train_small.py")),
      anchors, *loaded.profile);
  EXPECT_TRUE(moved.differs()) << moved.mismatched << " of " << moved.checked;
}

}  // namespace
}  // namespace sightline::join
