// The rules and actions on real training scripts: ours (tests/data, copied from the H200
// captures) and a public tutorial's DDP trainer read in place from ../shared.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/features/code_actions.h"
#include "tests/support/test_paths.h"

namespace sightline::features {
namespace {

struct Reported {
  uint32_t line;  // 1-based
  std::string code;
  std::string text;  // the source text of the range
  bool operator==(const Reported&) const = default;
};

std::vector<Reported> reportedFor(const std::string& path) {
  source::SourceFile file(testing::readFile(path));
  auto index = source::buildSourceIndex(file);
  EXPECT_FALSE(index.has_syntax_errors) << path;
  std::vector<Reported> out;
  for (const auto& f : computeDiagnostics(file, index, {}))
    out.push_back({file.lines().pointAt(f.range.begin).line + 1, f.code,
                   file.text().substr(f.range.begin, f.range.end - f.range.begin)});
  return out;
}

std::string show(const std::vector<Reported>& list) {
  std::string s;
  for (const auto& r : list) s += "  " + std::to_string(r.line) + " " + r.code + " `" + r.text + "`\n";
  return s;
}

const char* kLoader = "DataLoader(Synthetic(), batch_size=64, shuffle=True)";

TEST(RealScripts, TrainSmallAsProfiledByNsys) {
  auto got = reportedFor(testing::testDataPath("h200/nsys/train_small.py"));
  std::vector<Reported> want = {{87, "dataloader-num-workers", kLoader},
                                {87, "dataloader-pin-memory", kLoader},
                                {102, "missing-non-blocking", "x.to(device)"},
                                {103, "missing-non-blocking", "y.to(device)"},
                                {109, "sync-in-loop", "loss.item()"}};
  EXPECT_EQ(got, want) << show(got);
}

TEST(RealScripts, TrainSmallAsProfiledByThePyTorchProfiler) {
  auto got = reportedFor(testing::testDataPath("h200/kineto/train_small.py"));
  std::vector<Reported> want = {{69, "dataloader-num-workers", kLoader},
                                {69, "dataloader-pin-memory", kLoader},
                                {81, "missing-non-blocking", "x.to(device)"},
                                {82, "missing-non-blocking", "y.to(device)"},
                                {88, "sync-in-loop", "loss.item()"}};
  EXPECT_EQ(got, want) << show(got);
}

TEST(RealScripts, TrainGpt) {
  for (const char* path : {"h200/nsys/train_gpt.py", "h200/kineto/train_gpt.py"}) {
    auto got = reportedFor(testing::testDataPath(path));
    ASSERT_EQ(got.size(), 3u) << path << "\n" << show(got);
    EXPECT_EQ(got[0].code, "missing-non-blocking");
    EXPECT_EQ(got[0].text, "x.to(device)");
    EXPECT_EQ(got[1].text, "y.to(device)");
    EXPECT_EQ(got[2].code, "sync-in-loop");
    EXPECT_EQ(got[2].text, "loss.item()");
  }
}

TEST(RealScripts, DdpTutorialFromShared) {
  SIGHTLINE_REQUIRE_SHARED(path, "examples/ddp_resnet_tutorial.py");
  auto got = reportedFor(path);
  // pin_memory=True and num_workers=2 are set; the model's .to() in __init__ is not a batch.
  std::vector<Reported> want = {{59, "missing-non-blocking", "source.to(self.local_rank)"},
                                {60, "missing-non-blocking", "targets.to(self.local_rank)"}};
  EXPECT_EQ(got, want) << show(got);
}

TEST(RealScripts, SharedCaptureScriptsMatchTheCopiesInTestData) {
  for (const char* rel : {"nsys/train_small.py", "nsys/train_gpt.py", "kineto/train_small.py", "kineto/train_gpt.py"}) {
    auto shared = testing::sharedPath(std::string("profiles/h200-captures/") + rel);
    if (!shared) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles/h200-captures");
    EXPECT_EQ(testing::readFile(*shared), testing::readFile(testing::testDataPath(std::string("h200/") + rel))) << rel;
  }
}

TEST(RealScripts, RefactorsOnTrainSmallGiveValidPython) {
  std::string text = testing::readFile(testing::testDataPath("h200/kineto/train_small.py"));
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  auto in_loop = static_cast<uint32_t>(text.find("loss = train_step(model, opt, x, y)"));
  for (auto action : {annotateTrainingStep(file, index, in_loop), limitProfilingWindow(file, index, in_loop, 4, 9),
                      wrapInNvtxRange(file, index, {in_loop, in_loop})}) {
    ASSERT_TRUE(action);
    auto out = applyEdits(text, action->edits);
    ASSERT_TRUE(out);
    source::SourceFile after(*out);
    EXPECT_FALSE(after.hasSyntaxErrors()) << action->title << "\n" << *out;
  }
  // The nsys version already opens its capture range with torch.cuda.profiler.start().
  std::string nsys = testing::readFile(testing::testDataPath("h200/nsys/train_small.py"));
  source::SourceFile nsys_file(nsys);
  auto nsys_index = source::buildSourceIndex(nsys_file);
  EXPECT_FALSE(
      limitProfilingWindow(nsys_file, nsys_index, static_cast<uint32_t>(nsys.find("loss = train_step")), 4, 9));
}

}  // namespace
}  // namespace sightline::features
