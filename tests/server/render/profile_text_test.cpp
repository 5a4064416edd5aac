// What a user reads in the editor, exactly: inlay-hint labels on annotated snippets and hover
// cards as whole Markdown texts, from a profile built for each snippet. Snippet annotations:
//     return F.relu(self.bn(self.conv(x)))  # @hot
// #> ▮ 6.00 ms · 60% (fwd 2.00 + bwd 4.00)
// `# @name` tags a line the test gives a cost; `#> LABEL` is the one hint expected on the
// nearest code line above. A line without `#>` must have no hint.
#include "server/render/profile_text.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::server {
namespace {

using attribution::LineCost;
using attribution::Method;

struct Snippet {
  std::string text;
  std::map<std::string, int32_t> tags;       // name -> 1-based line
  std::map<uint32_t, std::string> expected;  // 0-based code line -> label
};

Snippet parseSnippet(const std::string& annotated) {
  Snippet s{annotated, {}, {}};
  std::istringstream in(annotated);
  std::string line;
  uint32_t n = 0, last_code = 0;
  while (std::getline(in, line)) {
    auto first = line.find_first_not_of(' ');
    if (line.rfind("#> ", 0) == 0) {
      s.expected[last_code] = line.substr(3);
    } else if (first != std::string::npos && line[first] != '#') {
      last_code = n;
      if (auto at = line.find("# @"); at != std::string::npos)
        s.tags[line.substr(at + 3)] = static_cast<int32_t>(n + 1);
    }
    ++n;
  }
  return s;
}

// Every hint's label against the annotations, both ways.
void checkHints(const Snippet& snippet, const features::FileCosts& costs, const features::HintOptions& options = {}) {
  source::SourceFile file(snippet.text);
  auto index = source::buildSourceIndex(file);
  model::Profile profile;
  std::map<uint32_t, std::string> actual;
  for (const auto& h : features::computeInlayHints(file, index, costs, profile, options, 0, 10'000))
    actual[h.line] = hintLabel(h);
  EXPECT_EQ(actual, snippet.expected) << snippet.text;
}

LineCost cost(int64_t gpu_ns, int64_t forward_ns, int64_t backward_ns) {
  LineCost c;
  c.gpu_ns = gpu_ns;
  c.forward_ns = forward_ns;
  c.backward_ns = backward_ns;
  c.by_method[static_cast<size_t>(Method::Stack)] = forward_ns;
  c.by_method[static_cast<size_t>(Method::Backward)] = backward_ns;
  return c;
}

constexpr const char* kModel = R"py(import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def forward(self, x):
#> Σ 6.00 ms · 60%
        return F.relu(self.bn(self.conv(x)))  # @hot
#> ▮ 6.00 ms · 60% (fwd 2.00 + bwd 4.00)


def train(model, loader, opt):
#> Σ 3.96 ms · 40%
    for x, y in loader:
#> Σ 3.96 ms · 40%
        x = x.to("cuda", non_blocking=True)  # @copy
#> ▮ 0.20 ms · 2.0%
        loss = model(x).sum()  # @loss
#> ▮ 3.75 ms · 38%
        opt.step()  # @tiny
        print(loss.item())
)py";

features::FileCosts modelCosts(const Snippet& s) {
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  costs.lines[s.tags.at("hot")] = cost(60'000'000, 20'000'000, 40'000'000);
  costs.lines[s.tags.at("copy")] = cost(2'000'000, 2'000'000, 0);
  costs.lines[s.tags.at("loss")] = cost(37'500'000, 37'500'000, 0);
  costs.lines[s.tags.at("tiny")] = cost(100'000, 100'000, 0);  // 0.1%: under the default minShare
  return costs;
}

TEST(HintLabels, PerStepWithSplitRollupsAndMinShare) {
  auto snippet = parseSnippet(kModel);
  checkHints(snippet, modelCosts(snippet));
}

TEST(HintLabels, TotalsWithoutSplit) {
  auto snippet = parseSnippet(R"py(def step(model, x):
#> Σ 60.0 ms · 60%
    return model(x)  # @hot
#> ▮ 60.0 ms · 60%
)py");
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  costs.lines[snippet.tags.at("hot")] = cost(60'000'000, 20'000'000, 40'000'000);
  checkHints(snippet, costs, features::HintOptions{0.005, /*per_step=*/false, /*show_backward=*/false});
}

TEST(HintLabels, ChangeFromTheCompareProfileAndGoneLines) {
  auto snippet = parseSnippet(R"py(for x in loader:
#> Σ 4.10 ms · 41%
    y = model(x)  # @model
#> ▮ 4.10 ms · 41% ▼ −1.90 ms
    z = y.cpu()  # @gone
#> ▼ −1.10 ms (gone)
)py");
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  costs.lines[snippet.tags.at("model")] = cost(41'000'000, 41'000'000, 0);
  auto before = std::make_shared<features::FileCosts>();
  before->total_gpu_ns = 100'000'000;
  before->steps = 20;  // per step by its own steps
  before->lines[snippet.tags.at("model")] = cost(120'000'000, 120'000'000, 0);
  before->lines[snippet.tags.at("gone")] = cost(22'000'000, 22'000'000, 0);
  costs.compare = before;
  costs.compare_name = "before.sqlite";
  checkHints(snippet, costs);
}

features::LineBreakdown hotBreakdown(model::Profile& profile, const features::FileCosts& costs, int32_t line) {
  LineCost c = costs.lines.at(line);
  c.kernels = 600;
  c.launches = 620;
  c.by_name[profile.strings.intern("void cudnn::conv<float, 3>(Params<float> const&)")] = {300, 45'000'000};
  c.by_name[profile.strings.intern("bn_fw_tr_1C11_kernel_NCHW")] = {300, 15'000'000};
  c.autograd_ops[profile.strings.intern("aten::conv2d")] = 40;
  c.autograd_ops[profile.strings.intern("aten::batch_norm")] = 30;
  return features::breakdownOf(c, costs, profile, features::Scale{10, true});
}

TEST(HoverCards, ALineWithForwardAndBackward) {
  auto snippet = parseSnippet(kModel);
  auto costs = modelCosts(snippet);
  model::Profile profile;
  features::HoverInfo hover;
  hover.cost = hotBreakdown(profile, costs, snippet.tags.at("hot"));
  EXPECT_EQ(hoverMarkdown(hover),
            "**6.00 ms/step** of GPU time, 60% of the profile (60.0 ms in total)\n\n"
            "forward 2.00 + backward 4.00 ms/step\n\n"
            "attributed by: stack 33%, backward 67%\n\n"
            "**By kind:** convolution 75% (300 kernels), batch norm 25% (300 kernels)\n\n"
            "| GPU work | count | ms |\n|---|---:|---:|\n"
            "| `void cudnn::conv<…>(…)` | 300 | 45.0 |\n"
            "| `bn_fw_tr_1C11_kernel_NCHW` | 300 | 15.0 |\n\n"
            "autograd ops: `aten::conv2d`, `aten::batch_norm`\n\n"
            "launches: 62.0 per step\n");
}

TEST(HoverCards, CopiesSyncsComparedAndEdited) {
  model::Profile profile;
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  LineCost c = cost(2'000'000, 2'000'000, 0);
  c.memcpy_ns = 2'000'000;
  c.memcpy_bytes = c.pageable_bytes = 30u << 20;
  c.memcpy_bytes_by_kind[static_cast<size_t>(model::CopyKind::HostToDevice)] = 30u << 20;
  c.sync_ns = 9'300'000;
  c.syncs = 10;
  c.sync_apis[profile.strings.intern("cudaStreamSynchronize")] = 10;
  c.memsets = 4;
  c.memset_ns = 40'000;  // 4 µs per step: shown as 0.00 (three significant figures stop there)
  features::HoverInfo hover;
  hover.cost = features::breakdownOf(c, costs, profile, features::Scale{10, true});
  hover.stale = true;
  hover.compare = features::CompareChange{"before.sqlite", 400'000, 200'000, true, "10 of 11 profiled lines matched"};
  EXPECT_EQ(hoverMarkdown(hover),
            "*Edited since it was profiled: the figures are for the line as it was when measured.*\n\n"
            "**Compared with** `before.sqlite`: 0.40 → 0.20 ms/step, ▼ −0.20 ms (-50%) "
            "*(10 of 11 profiled lines matched)*\n\n"
            "**0.20 ms/step** of GPU time, 2.0% of the profile (2.00 ms in total)\n\n"
            "attributed by: stack 100%\n\n"
            "memcpy 0.20 ms/step: HtoD 30.0 MiB, 100% from/to pageable memory\n\n"
            "memset 4× 0.00 ms/step\n\n"
            "host blocked 0.93 ms/step in `cudaStreamSynchronize` ×10\n\n");
}

TEST(HoverCards, RanksCommunicationAndLostRecords) {
  model::Profile profile;
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  costs.ranks.resize(3);
  costs.ranks[0].label = "rank 0", costs.ranks[1].label = "rank 1", costs.ranks[2].label = "rank 2";
  for (auto& r : costs.ranks) r.steady_steps = 10;  // per-rank figures per step of that rank
  LineCost c = cost(30'000'000, 30'000'000, 0);
  c.rank_ns = {5'000'000, 20'000'000, 5'000'000};
  c.comm_ns = 10'000'000;
  c.comm_exposed_ns = 7'500'000;
  c.lost_launches = 3;
  features::HoverInfo hover;
  hover.cost = features::breakdownOf(c, costs, profile, features::Scale{10, true});
  EXPECT_EQ(hoverMarkdown(hover),
            "**3.00 ms/step** of GPU time, 30% of the profile (30.0 ms in total)\n\n"
            "attributed by: stack 100%\n\n"
            "per rank: min 0.50 / median 0.50 / max 2.00 ms/step, slowest **rank 1** (rank 0 0.50, rank 1 2.00, "
            "rank 2 0.50)\n\n"
            "communication (NCCL): 1.00 ms/step, exposed 0.75 (75%)\n\n"
            "*3 launches from this line have no GPU record (the capture ended first): it ran longer than shown.*\n\n");
}

// A line whose ranks wait in its collective: min, median and max are of the figures the card
// lists (they were of the ranks' own work, "max 0.01" beside "rank 3 0.50"), and the slowest
// by its own work is named as such where another rank's figure, waits included, is larger.
TEST(HoverCards, PerRankSpreadIsOfTheFiguresListed) {
  model::Profile profile;
  features::FileCosts costs;
  costs.total_gpu_ns = 100'000'000;
  costs.steps = 10;
  costs.ranks.resize(4);
  for (size_t r = 0; r < 4; ++r) costs.ranks[r].label = "rank " + std::to_string(r), costs.ranks[r].steady_steps = 10;
  LineCost c = cost(11'000'000, 11'000'000, 0);
  c.rank_ns = {100'000, 100'000, 4'000'000, 5'000'000};
  c.rank_wait_ns = {0, 0, 3'950'000, 4'950'000};
  c.rank_ns[1] = 200'000;  // rank 1 does the most work of its own; ranks 2 and 3 wait for it
  features::HoverInfo hover;
  hover.cost = features::breakdownOf(c, costs, profile, features::Scale{10, true});
  std::string md = hoverMarkdown(hover);
  EXPECT_NE(md.find("per rank: min 0.01 / median 0.21 / max 0.50 ms/step, slowest by its own work **rank 1** (rank 0 "
                    "0.01, rank 1 0.02, rank 2 0.40 of which waiting for other ranks 0.40, rank 3 0.50 of which "
                    "waiting for other ranks 0.49)"),
            std::string::npos)
      << md;
}

TEST(HoverCards, RollupAndGoneLinesSayWhatStandsThere) {
  features::LineHint rollup;
  rollup.kind = features::HintKind::Rollup;
  rollup.scale = {10, true};
  rollup.gpu_ns = 9'950'000;
  rollup.share = 0.99;
  rollup.scope = "loop";
  features::HoverInfo on_loop;
  on_loop.standing = rollup;
  EXPECT_EQ(hoverMarkdown(on_loop), "**9.95 ms/step** of GPU time on the lines of this loop, 99% of the profile");
  features::LineHint gone;
  gone.kind = features::HintKind::Gone;
  gone.scale = {20, true};
  gone.gpu_ns = 1'100'000;
  gone.compare_name = "before.sqlite";
  features::HoverInfo on_gone;
  on_gone.standing = gone;
  EXPECT_EQ(hoverMarkdown(on_gone), "**1.10 ms/step** of GPU time here in `before.sqlite`, none now");
}

TEST(HintData, CarriesTheFiguresNotTheLabel) {
  features::LineHint h;
  h.scale = {10, true};
  h.gpu_ns = 6'000'000;
  h.share = 0.6;
  h.forward_ns = 2'000'000;
  h.backward_ns = 4'000'000;
  h.delta_ns = -1'900'000;
  auto data = hintData(h);
  EXPECT_EQ(data["kind"], "cost");
  EXPECT_EQ(data["share"], 0.6);
  EXPECT_EQ(data["perStep"], true);
  EXPECT_EQ(data["gpuNs"], 6'000'000.0);
  EXPECT_EQ(data["deltaNs"], -1'900'000.0);
}

// What a line holds at the peak, by the pass and the operators that allocated it (operator
// names come from the profile: escaped).
TEST(HoverCards, MemoryHeldByPassAndOperator) {
  features::HoverInfo h;
  auto story = std::make_shared<join::MemoryStory>();
  story->peak_allocated_bytes = 6051878400;
  h.memory = story;
  h.memory_bytes = 1648361984;
  h.memory_by_phase = {0, 1648361984, 0};
  h.memory_ops = {{"LogSoftmaxBackward0", 824180736}, {"NllLossBackward0", 824180736}, {"a`b*", 512}};
  h.memory_rank = 1;
  std::string card = hoverMarkdown(h);
  EXPECT_NE(card.find("**1.54 GiB** of GPU memory allocated here was alive at the peak (27% of 5.64 GiB; the most "
                      "of any line; made in the backward pass; allocated by `LogSoftmaxBackward0` 786.0 MiB, "
                      "`NllLossBackward0` 786.0 MiB, "),
            std::string::npos)
      << card;
  EXPECT_NE(card.find("``a`b*`` 512 B)"), std::string::npos) << card;  // fenced past its backtick
}

// Memory beside time: bytes at the peak (snapshots, profiler traces) or, without tensor events
// (nsys --cuda-memory-usage), the pool grown by the line's cudaMalloc.
TEST(HintLabels, MemoryAtThePeakOrThePoolsGrowth) {
  features::LineHint h;
  h.scale = {10, true};
  h.gpu_ns = 6'410'000;
  h.share = 0.12;
  h.memory_bytes = 27601666048;
  h.memory_share = 0.4;
  EXPECT_EQ(hintLabel(h), "▮ 6.41 ms · 12% · 25.71 GiB at peak");
  h.show_time = false;
  EXPECT_EQ(hintLabel(h), "▮ 25.71 GiB at peak · 40%");
  h.show_time = true;
  h.memory_reserved = true;
  h.memory_bytes = 4123000832;
  EXPECT_EQ(hintLabel(h), "▮ 6.41 ms · 12% · +3.84 GiB reserved");
  EXPECT_EQ(hintData(h)["memoryReserved"], true);
  EXPECT_NE(hintTooltip(h).find("The caching allocator's pool grew by **3.84 GiB** through this line's cudaMalloc (40% "
                                "of all it grew by)"),
            std::string::npos)
      << hintTooltip(h);
}

}  // namespace
}  // namespace sightline::server

namespace sightline::server {
namespace {

TEST(HoverCards, FusedLinesOfACompiledKernel) {
  auto snippet = parseSnippet(kModel);
  auto costs = modelCosts(snippet);
  model::Profile profile;
  features::HoverInfo hover;
  hover.cost = hotBreakdown(profile, costs, snippet.tags.at("hot"));
  hover.cost->fused_with = {{"/w/model.py", 27, 0, 0}, {"/w/model.py", 28, 0, 0}};
  EXPECT_NE(hoverMarkdown(hover).find("fused by torch.compile with lines 27, 28 (model.py): its kernels compute their "
                                      "work too\n\n"),
            std::string::npos)
      << hoverMarkdown(hover);
  hover.cost->fused_with = {{"/w/model.py", 27, 0, 0}, {"/w/layers.py", 9, 0, 0}};
  EXPECT_NE(hoverMarkdown(hover).find("with lines model.py:27, layers.py:9:"), std::string::npos);
}

// The hover of a compiled function's def line carries its compile summary, with or without GPU
// time of its own, in Markdown (the summary's own wording: tests/analysis/features/story_test.cpp).
TEST(HoverMarkdown, ACompiledFunctionsSummary) {
  join::CompiledFunctionSummary once;
  once.function = {"/w/gpt.py", 68, "forward"};
  once.compiles = 1, once.graphs = 1, once.seconds = 2.2;
  features::HoverInfo hover;
  hover.compiled = once;
  EXPECT_EQ(hoverMarkdown(hover), "**torch.compile:** `forward` (gpt.py:68): 1 compilation in 2.2 s, no recompiles");
}

}  // namespace
}  // namespace sightline::server
