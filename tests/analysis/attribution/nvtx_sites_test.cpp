// NVTX range sites from Python source: which calls open a range, the literal's value, the
// line, and whether the range opens once per training step.
#include "analysis/attribution/nvtx_sites.h"

#include <gtest/gtest.h>

namespace sightline::attribution {
namespace {

std::vector<NvtxSite> sitesOf(const std::string& code) {
  source::SourceFile file(code);
  auto index = source::buildSourceIndex(file);
  return findNvtxSites(file, index, 7);
}

TEST(NvtxSites, StringLiterals) {
  EXPECT_EQ(stringLiteralValue("\"fwd\""), "fwd");
  EXPECT_EQ(stringLiteralValue("'a b'"), "a b");
  EXPECT_EQ(stringLiteralValue("r'a\\\\b'"), "a\\\\b");
  EXPECT_EQ(stringLiteralValue("'it\\'s'"), "it's");
  EXPECT_EQ(stringLiteralValue("\"\"\"doc\"\"\""), "doc");
  EXPECT_EQ(stringLiteralValue("f'step {i}'"), std::nullopt);
  EXPECT_EQ(stringLiteralValue("'a' 'b'"), std::nullopt);
  EXPECT_EQ(stringLiteralValue("name"), std::nullopt);
}

TEST(NvtxSites, EveryWayToOpenARange) {
  auto sites = sitesOf(R"(import torch
import nvtx
from torch.cuda import nvtx as tnvtx
from torch.profiler import record_function

@nvtx.annotate("decorated")
def helper(x):
    return x

def train(model, loader, opt):
    for x, y in loader:
        with torch.cuda.nvtx.range("forward"):
            loss = model(x).sum()
        tnvtx.range_push("backward")
        loss.backward()
        tnvtx.range_pop()
        with record_function(name="step"):
            opt.step()
        with torch.cuda.nvtx.range(f"dyn {x}"):
            pass

with nvtx.annotate(message="setup"):
    pass
)");
  ASSERT_EQ(sites.size(), 5u);
  EXPECT_EQ(sites[0].text, "decorated");
  EXPECT_EQ(sites[0].line, 6);
  EXPECT_FALSE(sites[0].per_step);
  EXPECT_EQ(sites[1].text, "forward");
  EXPECT_EQ(sites[1].line, 12);
  EXPECT_TRUE(sites[1].per_step);
  EXPECT_EQ(sites[1].file, 7u);
  EXPECT_EQ(sites[2].text, "backward");
  EXPECT_EQ(sites[2].line, 14);
  EXPECT_TRUE(sites[2].per_step);
  EXPECT_EQ(sites[3].text, "step");
  EXPECT_EQ(sites[4].text, "setup");
  EXPECT_FALSE(sites[4].per_step);
}

TEST(NvtxSites, RangesInAFunctionTheLoopCallsArePerStep) {
  auto sites = sitesOf(R"(import torch

def step(model, x, opt):
    with torch.cuda.nvtx.range("fwd"):
        loss = model(x)
    loss.backward()
    opt.step()

def main(model, loader, opt):
    for x in loader:
        step(model, x, opt)
)");
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_TRUE(sites[0].per_step);
  EXPECT_TRUE(sitesOf("import os\nos.range('x')\n").empty()) << "only NVTX openers";
}

}  // namespace
}  // namespace sightline::attribution
