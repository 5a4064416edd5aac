// The step verdict's advice for a step that waits for data names only what the script's
// DataLoader lacks.
#include "analysis/features/step_verdict.h"

#include <gtest/gtest.h>

namespace sightline::features {
namespace {

std::optional<LoaderSettings> settingsOf(const std::string& text) {
  source::SourceFile file(text);
  return loaderSettings(source::buildSourceIndex(file));
}

std::string loaderAdvice(const std::optional<LoaderSettings>& loader) {
  StepVerdict v;
  v.loader = loader;
  return changeText({Change::LoaderWorkers, 8e6, std::nullopt}, v);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The advice for a script whose DataLoader calls are `calls`.
std::string adviceFor(const std::string& calls) {
  auto settings = settingsOf("from torch.utils.data import DataLoader\n" + calls);
  EXPECT_TRUE(settings) << calls;
  return settings ? loaderAdvice(settings) : "";
}

TEST(LoaderAdvice, NamesOnlyWhatTheDataLoaderLacks) {
  std::string bare = adviceFor("loader = DataLoader(ds, batch_size=8)\n");
  EXPECT_TRUE(has(bare, "(num_workers, pin_memory=True, persistent_workers=True)")) << bare;
  EXPECT_TRUE(has(bare, "waits 8.00 ms/step for data")) << bare;
  // The public DDP tutorial's loader: workers and pinned memory already.
  std::string tutorial = adviceFor("dl = DataLoader(ds, batch_size=b, pin_memory=True, num_workers=2)\n");
  EXPECT_FALSE(has(tutorial, "pin_memory")) << tutorial;
  EXPECT_TRUE(has(tutorial, "workers do not keep up")) << tutorial;
  EXPECT_TRUE(has(tutorial, "persistent_workers=True")) << tutorial;
  // Every loader must have a setting for it to count: one without workers makes the advice.
  std::string two = adviceFor(
      "dl = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True)\n"
      "ev = DataLoader(ds, num_workers=0)\n");
  EXPECT_TRUE(has(two, "(num_workers, pin_memory=True, persistent_workers=True)")) << two;
  std::string full = adviceFor("dl = DataLoader(ds, num_workers=8, pin_memory=True, persistent_workers=True)\n");
  EXPECT_TRUE(has(full, "prefetch_factor")) << full;
  EXPECT_FALSE(has(full, "persistent_workers")) << full;
}

TEST(LoaderAdvice, UnknownLoadersGetTheGeneralAdvice) {
  // No DataLoader in the file, or its arguments passed through **kwargs: nothing is known.
  EXPECT_FALSE(settingsOf("import torch\nx = torch.zeros(3)\n"));
  EXPECT_FALSE(settingsOf("from torch.utils.data import DataLoader\ndl = DataLoader(ds, **cfg)\n"));
  std::string text = loaderAdvice(std::nullopt);
  EXPECT_TRUE(has(text, "where not set yet")) << text;
}

}  // namespace
}  // namespace sightline::features
