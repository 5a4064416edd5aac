// Hints, hover cards and profile evidence over hand-made line costs on a real script (the
// real-profile path is covered end to end in tests/e2e/profile_session_test.cpp).
#include "analysis/features/profile_view.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/features/hover.h"
#include "analysis/features/inlay_hints.h"
#include "analysis/features/profile_diagnostics.h"
#include "tests/support/test_paths.h"
#include "tests/support/verdict_of.h"

namespace sightline::features {
namespace {

using sightline::testing::verdictOf;

struct Fixture {
  source::SourceFile file{testing::readFile(testing::testDataPath("h200/nsys/train_small.py"))};
  source::SourceIndex index = source::buildSourceIndex(file);
  model::Profile profile;
  FileCosts costs;

  Fixture() {
    costs.total_gpu_ns = 100'000'000;
    costs.steps = 10;
    auto& hot = costs.lines[33];  // return F.relu(self.bn(self.conv(x)))
    hot.gpu_ns = 60'000'000;
    hot.forward_ns = 20'000'000;
    hot.backward_ns = 40'000'000;
    hot.by_method[static_cast<size_t>(attribution::Method::Stack)] = 20'000'000;
    hot.by_method[static_cast<size_t>(attribution::Method::Backward)] = 40'000'000;
    hot.kernels = 600;
    hot.by_name[profile.strings.intern("void cudnn::conv<float, 3>(Params<float> const&)")] = {300, 45'000'000};
    hot.by_name[profile.strings.intern("bn_fw_tr_1C11_kernel_NCHW")] = {300, 15'000'000};
    hot.autograd_ops[profile.strings.intern("aten::conv2d")] = 40;
    auto& item = costs.lines[109];  // running += loss.item()
    item.gpu_ns = 100'000;
    item.sync_ns = 9'300'000;
    item.syncs = 10;
    item.sync_apis[profile.strings.intern("cudaStreamSynchronize")] = 10;
    item.memcpy_bytes = 40;
    item.memcpy_bytes_by_kind[static_cast<size_t>(model::CopyKind::DeviceToHost)] = 40;
    auto& copy = costs.lines[102];  // x = x.to(device)
    copy.gpu_ns = 2'000'000;
    copy.memcpy_ns = 2'000'000;
    copy.memcpy_bytes = copy.pageable_bytes = 30u << 20;
    copy.memcpy_bytes_by_kind[static_cast<size_t>(model::CopyKind::HostToDevice)] = 30u << 20;
  }
};

TEST(ProfileView, Formatting) {
  EXPECT_EQ(formatMilliseconds(12'400'000), "12.4");
  EXPECT_EQ(formatMilliseconds(410'000), "0.41");
  EXPECT_EQ(formatMilliseconds(153'000'000), "153");
  EXPECT_EQ(shortKernelName("void cudnn::conv<float, 3>(Params<float> const&)"), "void cudnn::conv<…>(…)");
  EXPECT_EQ(shortKernelName(std::string(100, 'k'), 10), "kkkkkkkkk…");
  // A cut through "<…>" (three bytes) backs off to the character's start: no broken UTF-8.
  std::string cut = shortKernelName("vectorized_layer_norm_kernel<float, float>(int, float)", 31);
  EXPECT_EQ(cut, "vectorized_layer_norm_kernel<…");
  cut = shortKernelName("vectorized_layer_norm_kernel<float, float>(int, float)", 30);
  EXPECT_EQ(cut, "vectorized_layer_norm_kernel<…");
}

// The figures behind the hints (their labels: tests/server/render/profile_text_test.cpp).
TEST(ProfileView, HintsPerStepWithSplitRollupsAndMinShare) {
  Fixture f;
  auto hints = computeInlayHints(f.file, f.index, f.costs, f.profile, HintOptions{}, 0, 200);
  std::map<uint32_t, LineHint> by_line;
  for (const auto& h : hints) by_line[h.line] = h;
  const LineHint& hot = by_line.at(32);
  EXPECT_EQ(hot.kind, HintKind::Cost);
  EXPECT_TRUE(hot.scale.per_step);
  EXPECT_DOUBLE_EQ(hot.gpu_ns, 6'000'000);
  EXPECT_DOUBLE_EQ(hot.share, 0.6);
  EXPECT_TRUE(hot.show_split);
  EXPECT_DOUBLE_EQ(hot.forward_ns, 2'000'000);
  EXPECT_DOUBLE_EQ(hot.backward_ns, 4'000'000);
  const LineHint& def = by_line.at(31);
  EXPECT_EQ(def.kind, HintKind::Rollup) << "def forward rolls up its body";
  EXPECT_EQ(def.scope, "function");
  EXPECT_DOUBLE_EQ(def.gpu_ns, 6'000'000);
  EXPECT_EQ(by_line.count(108), 0u) << "0.1% is below the default minShare";
  EXPECT_DOUBLE_EQ(by_line.at(101).share, 0.02);
  HintOptions totals{0, false, false};
  auto all = computeInlayHints(f.file, f.index, f.costs, f.profile, totals, 32, 32);
  ASSERT_EQ(all.size(), 1u) << "only the requested range";
  EXPECT_DOUBLE_EQ(all[0].gpu_ns, 60'000'000);
  EXPECT_FALSE(all[0].show_split);
  ASSERT_TRUE(all[0].breakdown);
  ASSERT_FALSE(all[0].breakdown->top_work.empty());
  EXPECT_EQ(all[0].breakdown->top_work[0].name, "void cudnn::conv<float, 3>(Params<float> const&)");
  EXPECT_EQ(all[0].breakdown->top_work[0].count, 300u);
  EXPECT_EQ(all[0].breakdown->top_work[0].ns, 45'000'000);
}

TEST(ProfileView, Hover) {
  Fixture f;
  auto item = computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 108);
  ASSERT_TRUE(item && item->cost);
  EXPECT_DOUBLE_EQ(item->cost->sync_ns, 930'000);
  ASSERT_EQ(item->cost->sync_apis.size(), 1u);
  EXPECT_EQ(item->cost->sync_apis[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(item->cost->sync_apis[0].count, 10u);
  auto hot = computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 32);
  ASSERT_TRUE(hot && hot->cost);
  EXPECT_DOUBLE_EQ(hot->cost->forward_ns, 2'000'000);
  EXPECT_DOUBLE_EQ(hot->cost->backward_ns, 4'000'000);
  ASSERT_EQ(hot->cost->methods.size(), 2u);
  EXPECT_EQ(hot->cost->methods[0].first, "stack");
  EXPECT_NEAR(hot->cost->methods[0].second, 1.0 / 3, 1e-9);
  EXPECT_EQ(hot->cost->methods[1].first, "backward");
  EXPECT_EQ(hot->cost->autograd_ops, std::vector<std::string>{"aten::conv2d"});
  auto def = computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 31);
  ASSERT_TRUE(def && def->standing) << "a def line shows its roll-up";
  EXPECT_EQ(def->standing->kind, HintKind::Rollup);
  EXPECT_FALSE(computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 0)) << "no cost on line 1";
}

// A torch.compile'd function of the file: the hover of its def line and of its graph break
// carries its compilations, even on a line without GPU time; the findings name both.
TEST(ProfileView, CompiledFunctionHoverAndFindings) {
  Fixture f;
  join::CompiledFunctionSummary fn;
  fn.function = {"train.py", 1, "forward"};
  fn.compiles = 3, fn.graphs = 2, fn.recompiles = 2, fn.seconds = 4;
  fn.recompile_reasons = {{"tensor 'x' size mismatch at index 0", false, 2}};
  fn.breaks = {{3, "Unsupported Tensor.item() call", "Set `torch._dynamo.config.capture_scalar_outputs = True`", 1}};
  f.costs.compiled_functions = {fn};
  auto def = computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 0);
  ASSERT_TRUE(def && def->compiled);
  EXPECT_EQ(def->compiled->recompiles, 2);
  auto brk = computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 2);
  ASSERT_TRUE(brk && brk->compiled);
  EXPECT_FALSE(computeHover(f.file, f.index, f.costs, f.profile, HintOptions{}, 1)) << "line 2: nothing to say";
  RuleConfig config;
  auto findings = confirmWithProfile({}, f.file, f.index, f.costs, f.profile, verdictOf(f.costs), config);
  const Finding *graph_break = nullptr, *recompiles = nullptr;
  for (const auto& x : findings) {
    uint32_t line = f.file.lines().pointAt(x.range.begin).line;
    if (x.code == "graph-break" && line == 2) graph_break = &x;
    if (x.code == "recompiles" && line == 0) recompiles = &x;
  }
  ASSERT_NE(graph_break, nullptr);
  EXPECT_NE(graph_break->message.find("it compiles as 2 graphs"), std::string::npos) << graph_break->message;
  ASSERT_NE(recompiles, nullptr);
  EXPECT_NE(recompiles->message.find("recompiled `forward` 2 times (4.0 s compiling in all): 2× `tensor 'x' size "
                                     "mismatch at index 0`; mark that dimension dynamic"),
            std::string::npos)
      << recompiles->message;
}

// A no_grad evaluation graph recompiles once for the grad mode: expected, no finding; a size
// guard beside it still is one.
TEST(ProfileView, GradModeRecompileIsExpected) {
  Fixture f;
  join::CompiledFunctionSummary fn;
  fn.function = {"train.py", 1, "forward"};
  fn.compiles = 2, fn.graphs = 1, fn.recompiles = 1, fn.seconds = 3;
  fn.recompile_reasons = {{"GLOBAL_STATE changed: grad_mode", false, 1}};
  f.costs.compiled_functions = {fn};
  RuleConfig config;
  auto count = [&] {
    auto findings = confirmWithProfile({}, f.file, f.index, f.costs, f.profile, verdictOf(f.costs), config);
    return std::count_if(findings.begin(), findings.end(), [](const Finding& x) { return x.code == "recompiles"; });
  };
  EXPECT_EQ(count(), 0);
  f.costs.compiled_functions[0].recompiles = 2;
  f.costs.compiled_functions[0].recompile_reasons.push_back({"tensor 'x' size mismatch at index 0", false, 1});
  EXPECT_EQ(count(), 1);
}

TEST(ProfileDiagnostics, EvidenceAndProfileOnlyRules) {
  Fixture f;
  RuleConfig config;
  auto findings = confirmWithProfile(computeDiagnostics(f.file, f.index, config), f.file, f.index, f.costs, f.profile,
                                     verdictOf(f.costs), config);
  const Finding* item = nullptr;
  std::vector<uint32_t> pageable;
  for (const auto& x : findings) {
    uint32_t line = f.file.lines().pointAt(x.range.begin).line;
    if (x.code == "sync-in-loop" && line == 108) item = &x;
    if (x.code == "pageable-memcpy") pageable.push_back(line);
    EXPECT_NE(x.code, "sync-api") << "the .item() line is already explained by sync-in-loop";
  }
  ASSERT_NE(item, nullptr);
  EXPECT_NE(item->message.find("measured: blocks the host 0.93 ms/step here (cudaStreamSynchronize ×10, after a "
                               "4-byte DtoH copy)"),
            std::string::npos)
      << item->message;
  EXPECT_EQ(pageable, (std::vector<uint32_t>{101}));
  // The pageable copy gets the loader's pin_memory fix and the copy's non_blocking fix, together
  // (preferred) and apart; the combined edit leaves valid Python with both, and the copy
  // diagnostics are gone after it.
  for (const auto& x : findings) {
    if (x.code != "pageable-memcpy") continue;
    ASSERT_EQ(x.fixes.size(), 3u);
    EXPECT_TRUE(x.fixes[0].preferred);
    EXPECT_EQ(x.fixes[0].title, "Pin the DataLoader's memory and copy with non_blocking=True");
    EXPECT_EQ(x.fixes[0].edits.size(), x.fixes[1].edits.size() + x.fixes[2].edits.size());
    auto fixed = applyEdits(f.file.text(), x.fixes[0].edits);
    ASSERT_TRUE(fixed);
    source::SourceFile after(*fixed);
    EXPECT_FALSE(after.hasSyntaxErrors());
    EXPECT_NE(fixed->find("pin_memory=True"), std::string::npos);
    EXPECT_NE(fixed->find("x = x.to(device, non_blocking=True)"), std::string::npos);
    auto index = source::buildSourceIndex(after);
    for (const auto& y : computeDiagnostics(after, index, config)) {
      EXPECT_NE(y.code, "dataloader-pin-memory");
      EXPECT_FALSE(y.code == "missing-non-blocking" && after.lines().pointAt(y.range.begin).line == 101);
    }
  }
  config.rules["pageable-memcpy"].enabled = false;
  for (const auto& x : confirmWithProfile(computeDiagnostics(f.file, f.index, config), f.file, f.index, f.costs,
                                          f.profile, verdictOf(f.costs), config))
    EXPECT_NE(x.code, "pageable-memcpy");
}

// Pageable copies on a line that already copies with non_blocking=True are told so, not told to
// add it; a few KiB a step are a note.
TEST(ProfileDiagnostics, PageableCopiesOnALineThatDoesNotBlock) {
  Fixture f;
  std::string text = f.file.text();
  const std::string copy = "x = x.to(device)";
  ASSERT_NE(text.find(copy), std::string::npos);
  text.replace(text.find(copy), copy.size(), "x = x.to(device, non_blocking = True)");
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  RuleConfig config;
  auto pageable = [&](const source::SourceFile& in, const source::SourceIndex& in_index) {
    for (const auto& x : confirmWithProfile({}, in, in_index, f.costs, f.profile, verdictOf(f.costs), config))
      if (x.code == "pageable-memcpy") return x;
    return Finding{};
  };
  Finding told = pageable(file, index);
  EXPECT_NE(told.message.find("0.20 ms/step of copies), though this line copies with non_blocking=True: CUDA "
                              "recorded the host memory as pageable"),
            std::string::npos)
      << told.message;
  EXPECT_EQ(told.message.find("and copy with non_blocking=True"), std::string::npos) << told.message;
  EXPECT_EQ(told.severity, Severity::Warning);
  Finding plain = pageable(f.file, f.index);
  EXPECT_NE(plain.message.find("and copy with non_blocking=True"), std::string::npos) << plain.message;
  EXPECT_EQ(plain.message.find("though this line"), std::string::npos) << plain.message;
  f.costs.lines[102].memcpy_ns = 300'000;  // 0.03 ms a step
  Finding small = pageable(f.file, f.index);
  EXPECT_EQ(small.severity, Severity::Information);
  EXPECT_NE(small.message.find(", too little to matter in this run"), std::string::npos) << small.message;
}

TEST(ProfileDiagnostics, LaunchBoundAndSyncApi) {
  Fixture f;
  auto& tiny = f.costs.lines[52];  // loss = F.cross_entropy(out, y)
  tiny.kernels = 1000;             // 100 per step
  tiny.gpu_ns = 3'000'000;         // 3 us each
  auto& sync = f.costs.lines[71];  // torch.cuda.synchronize() in NsysWindow.step (not a training loop)
  sync.syncs = 10;
  sync.sync_ns = 5'000'000;
  sync.sync_apis[f.profile.strings.intern("cudaDeviceSynchronize")] = 10;
  RuleConfig config;
  auto findings = confirmWithProfile({}, f.file, f.index, f.costs, f.profile, verdictOf(f.costs), config);
  std::map<std::string, std::vector<uint32_t>> lines;
  for (const auto& x : findings) lines[x.code].push_back(f.file.lines().pointAt(x.range.begin).line);
  EXPECT_EQ(lines["launch-bound"], (std::vector<uint32_t>{51}));
  // Without static findings the .item() line's sync is reported by sync-api too.
  EXPECT_EQ(lines["sync-api"], (std::vector<uint32_t>{70, 108}));
}

// A synchronous cudaMemcpy of 1 MiB per step on the x copy line: sync-memcpy with the loader's
// pin_memory fix, and no sync-api on top of it for the same blocked time.
TEST(ProfileDiagnostics, SyncMemcpyReplacesSyncApiOnItsLine) {
  Fixture f;
  auto& copy = f.costs.lines[102];
  copy.sync_memcpys = 10;
  copy.sync_memcpy_bytes = 10u << 20;
  copy.sync_memcpy_ns = 1'500'000;
  copy.syncs = 10;
  copy.sync_ns = 2'000'000;
  copy.sync_apis[f.profile.strings.intern("cudaMemcpy")] = 10;
  RuleConfig config;
  auto findings = confirmWithProfile(computeDiagnostics(f.file, f.index, config), f.file, f.index, f.costs, f.profile,
                                     verdictOf(f.costs), config);
  const Finding* sync_memcpy = nullptr;
  for (const auto& x : findings) {
    uint32_t line = f.file.lines().pointAt(x.range.begin).line;
    if (x.code == "sync-memcpy") sync_memcpy = &x;
    if (line == 101) {
      EXPECT_NE(x.code, "sync-api");
    }
  }
  ASSERT_NE(sync_memcpy, nullptr);
  EXPECT_EQ(f.file.lines().pointAt(sync_memcpy->range.begin).line, 101u);
  EXPECT_NE(sync_memcpy->message.find("10 synchronous copies (1.0 MiB per step, 0.15 ms/step)"), std::string::npos)
      << sync_memcpy->message;
  EXPECT_FALSE(sync_memcpy->fixes.empty()) << "pin_memory on the loader";
}

}  // namespace
}  // namespace sightline::features
