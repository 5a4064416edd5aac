// What to capture when nothing could be put on lines: only what the capture lacks.
#include "analysis/ingest/profile_loader.h"

#include <gtest/gtest.h>

namespace sightline::ingest {
namespace {

model::ProfileInfo info(const std::string& format, std::vector<std::string> capabilities, bool blobs = true) {
  model::ProfileInfo i;
  i.format = format;
  i.capabilities = std::move(capabilities);
  i.has_blobs = blobs;
  return i;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CaptureAdvice, NsysWithoutBacktracesNamesOnlyTheMissingFlags) {
  auto bare = captureAdvice(info("nsys-sqlite", {"capture-range"}));
  EXPECT_TRUE(has(bare, "--python-backtrace=cuda")) << bare;
  EXPECT_TRUE(has(bare, "--pytorch=autograd-nvtx")) << bare;
  EXPECT_TRUE(has(bare, "--include-blobs=true")) << bare;
  EXPECT_FALSE(has(bare, "--capture-range")) << bare;  // it used one
  auto autograd = captureAdvice(info("nsys-sqlite", {"autograd-nvtx"}));
  EXPECT_TRUE(has(autograd, "--python-backtrace=cuda")) << autograd;
  EXPECT_FALSE(has(autograd, "autograd-nvtx")) << autograd;
}

TEST(CaptureAdvice, NsysBacktracesWithoutFramesOnlyNeedAnotherExport) {
  auto text = captureAdvice(info("nsys-sqlite", {"python-backtraces", "autograd-nvtx"}, false));
  EXPECT_TRUE(has(text, "nsys export --type sqlite --include-blobs=true")) << text;
  EXPECT_FALSE(has(text, "nsys profile")) << text;
  EXPECT_FALSE(has(text, "--python-backtrace")) << text;
  // Frames that reach none of the script's lines: name it or map the paths, capture nothing new.
  auto frames = captureAdvice(info("nsys-sqlite", {"python-backtraces"}));
  EXPECT_TRUE(has(frames, "--map")) << frames;
  EXPECT_FALSE(has(frames, "--python-backtrace")) << frames;
}

TEST(CaptureAdvice, TracesWithoutStacksNeedWithStack) {
  auto bare = captureAdvice(info("kineto-json", {"autograd-ops"}));
  EXPECT_TRUE(has(bare, "with_stack=True")) << bare;
  EXPECT_FALSE(has(bare, "nsys")) << bare;
  auto stacks = captureAdvice(info("kineto-json", {"python-functions", "call-stacks"}));
  EXPECT_FALSE(has(stacks, "with_stack")) << stacks;
  EXPECT_TRUE(has(stacks, "--map")) << stacks;
}

}  // namespace
}  // namespace sightline::ingest
