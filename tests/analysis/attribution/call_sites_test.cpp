// Call sites for Kineto traces: the tables built from source, the alignment of traced
// children, and the bars on real traces: our H200 capture of train_small.py, the side file of
// exact caller lines recorded with the 2.11 trace (experimental_event_tree), and the same
// script profiled by nsys.
#include "analysis/attribution/call_sites.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "analysis/attribution/attribution.h"
#include "analysis/ingest/kineto_reader.h"
#include "analysis/ingest/nsys_reader.h"
#include "analysis/source/source_index.h"
#include "tests/support/test_paths.h"

namespace sightline::attribution {
namespace {

using nlohmann::json;

struct Script {
  explicit Script(const std::string& text) : file(text), index(source::buildSourceIndex(file)) {
    table = buildCallSites(file, index);
  }
  source::SourceFile file;
  source::SourceIndex index;
  CallSiteTable table;
};

const char* kModel = R"(import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


@torch.no_grad()
def evaluate(model, batches):
    for x in batches:
        model(x)


def main(loader):
    model = Block().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        x = x.to("cuda")
        loss = model(x).sum()
        loss.backward()
        opt.step()
)";

std::vector<std::string> names(const SiteFunction& f) {
  std::vector<std::string> out;
  for (const auto& c : f.calls) out.push_back(c.name);
  return out;
}

TEST(CallSites, BodiesInEvaluationOrderWithModuleClasses) {
  Script s(kModel);
  int forward = s.table.functionFor("forward", 12);
  ASSERT_GT(forward, 0);
  const auto& f = s.table.functions[static_cast<size_t>(forward)];
  EXPECT_EQ(f.def_line, 12);
  EXPECT_EQ(names(f), (std::vector<std::string>{"conv", "bn", "relu"}));
  EXPECT_EQ(f.calls[0].module_classes, std::vector<std::string>{"Conv2d"});
  EXPECT_EQ(f.calls[1].module_classes, std::vector<std::string>{"BatchNorm2d"});
  EXPECT_TRUE(f.calls[2].module_classes.empty());
  for (const auto& c : f.calls) EXPECT_EQ(c.line, 13);
  // A decorated function is traced at its first decorator line.
  int evaluate = s.table.functionFor("evaluate", 16);
  ASSERT_GT(evaluate, 0);
  EXPECT_EQ(s.table.functions[static_cast<size_t>(evaluate)].def_line, 17);
  // A frame that was already running names its current line.
  int main = s.table.functionFor("main", 27);
  ASSERT_GT(main, 0);
  const auto& m = s.table.functions[static_cast<size_t>(main)];
  EXPECT_EQ(names(m), (std::vector<std::string>{"Block", "cuda", "parameters", "SGD", "__next__", "to", "model", "sum",
                                                "backward", "step"}));
  EXPECT_EQ(m.calls[6].module_classes, std::vector<std::string>{"Block"});  // model = Block().cuda()
  EXPECT_EQ(s.table.functionFor("<module>", 3), 0);
  EXPECT_EQ(s.table.functionFor("nowhere", 3), -1);
}

TracedChild child(model::CallKind kind, std::string_view name, std::vector<std::string_view> alt = {}) {
  TracedChild c;
  c.kind = kind;
  c.name = name;
  c.alt_names = std::move(alt);
  return c;
}

TEST(CallSites, ChildrenAlignWithTheBodyAsLoopsRepeat) {
  Script s(kModel);
  const auto& m = s.table.functions[static_cast<size_t>(s.table.functionFor("main", 23))];
  using K = model::CallKind;
  // Two iterations of the loop, as the trace shows them: the optimizer's step hides behind
  // a decorator's `wrapper`, and `__getattr__` hooks stand for no call.
  std::vector<TracedChild> children = {
      child(K::Function, "__next__"), child(K::Builtin, "to"),           child(K::Module, "Block"),
      child(K::Builtin, "sum"),       child(K::Function, "backward"),    child(K::Function, "wrapper", {"step"}),
      child(K::Function, "__next__"), child(K::Function, "__getattr__"), child(K::Builtin, "to"),
      child(K::Module, "Block"),      child(K::Builtin, "sum"),          child(K::Function, "backward"),
      child(K::Function, "mystery"),
  };
  auto placed = alignChildren(m, children);
  std::vector<int32_t> lines;
  for (const auto& p : placed) lines.push_back(p.line);
  EXPECT_EQ(lines, (std::vector<int32_t>{25, 26, 27, 27, 28, 29, 25, 0, 26, 27, 27, 28, 0}));
  // An unnamed child between two matches takes the one call between them.
  std::vector<TracedChild> gap = {child(K::Builtin, "to"), child(K::Function, "inner"), child(K::Builtin, "sum")};
  placed = alignChildren(m, gap);
  EXPECT_EQ(placed[1].line, 27);
  EXPECT_TRUE(placed[1].aligned);
  // A frame already running at `x.to(...)` starts aligning there.
  placed = alignChildren(m, {child(K::Builtin, "to"), child(K::Function, "backward")}, 26);
  EXPECT_EQ(placed[0].line, 26);
}

// A GPT trainer's calls as the trace names them: `model(x)` holds DistributedDataParallel (the
// imported alias resolved) and GPT; `block(x)` calls the loop's target, a module of no known class.
TEST(CallSites, WrappedModelsAndModulesFromALoop) {
  Script s(R"(import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
class GPT(nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
def main(x):
    model = GPT().cuda()
    model = DDP(model)
    loss = model(x)
)");
  using K = model::CallKind;
  const auto& m = s.table.functions[static_cast<size_t>(s.table.functionFor("main", 9))];
  auto call = std::find_if(m.calls.begin(), m.calls.end(), [](const SiteCall& c) { return c.line == 11; });
  ASSERT_NE(call, m.calls.end());
  EXPECT_EQ(call->module_classes, (std::vector<std::string>{"GPT", "DistributedDataParallel"}));
  EXPECT_EQ(alignChildren(m, {child(K::Module, "DistributedDataParallel")})[0].line, 11);
  const auto& f = s.table.functions[static_cast<size_t>(s.table.functionFor("forward", 5))];
  auto placed = alignChildren(f, {child(K::Module, "Block"), child(K::Module, "Block")});
  EXPECT_EQ(placed[0].line, 6);
  EXPECT_EQ(placed[1].line, 6);
}

// Attribution of a Kineto trace with call sites from `scripts` (profile path -> text).
struct KinetoRun {
  model::Profile profile;
  Attribution attr;
  std::map<std::string, std::unique_ptr<Script>> scripts;
};

std::unique_ptr<KinetoRun> attributeKineto(const std::string& trace, const std::map<std::string, std::string>& files) {
  auto run = std::make_unique<KinetoRun>();
  auto loaded = ingest::loadKinetoTrace(trace);
  EXPECT_TRUE(loaded.profile) << loaded.error;
  if (!loaded.profile) return nullptr;
  run->profile = std::move(*loaded.profile);
  for (const auto& [name, path] : files) run->scripts[name] = std::make_unique<Script>(testing::readFile(path));
  Options options;
  options.call_sites = [&](std::string_view path) -> const CallSiteTable* {
    auto it = run->scripts.find(std::string(path));
    return it == run->scripts.end() ? nullptr : &it->second->table;
  };
  run->attr = attribute(run->profile, options);
  return run;
}

const LineCost* lineCost(const KinetoRun& run, const std::string& file, int32_t line) {
  for (const auto& [f, lines] : run.attr.files)
    if (run.profile.strings[f] == file) {
      auto it = lines.find(line);
      return it == lines.end() ? nullptr : &it->second;
    }
  return nullptr;
}

TEST(KinetoAttribution, TrainSmallLandsOnItsCallLines) {
  SIGHTLINE_REQUIRE_SHARED(trace, "profiles/h200-captures/kineto/train_small_naive.pt.trace.json.gz");
  SIGHTLINE_REQUIRE_SHARED(script, "profiles/h200-captures/kineto/train_small.py");
  auto run = attributeKineto(trace, {{"train_small.py", script}});
  ASSERT_TRUE(run);
  const auto& a = run->attr;
  const auto& p = run->profile;
  int64_t on_script = 0;
  for (const auto& [f, lines] : a.files)
    if (p.strings[f] == "train_small.py")
      for (const auto& [line, c] : lines) on_script += c.gpu_ns;
  EXPECT_GE(static_cast<double>(on_script), 0.95 * static_cast<double>(a.steady_gpu_ns));
  EXPECT_EQ(a.steps, 6);
  // Every conv / batch-norm / relu kernel, forward and backward, is on line 33; the linear head's
  // GEMMs on line 46; the batch copies on 81-82; `.item()`'s copy on 88.
  std::map<int32_t, int64_t> conv_lines, gemm_lines, htod_lines, dtoh_lines;
  for (size_t i = 0; i < p.activities.size(); ++i) {
    const auto& act = p.activities[i];
    const auto& ref = a.activity_lines[i];
    const std::string& name = p.strings[act.name];
    bool conv = name.find("conv") != std::string::npos || name.find("bn_") != std::string::npos ||
                name.find("batch_norm") != std::string::npos || name.find("nchwToNhwc") != std::string::npos;
    if (conv) conv_lines[ref.line] += act.duration();
    if (name.find("gemm") != std::string::npos && name.find("implicit") == std::string::npos)
      gemm_lines[ref.line] += act.duration();
    if (act.copy == model::CopyKind::HostToDevice) htod_lines[ref.line] += act.duration();
    if (act.copy == model::CopyKind::DeviceToHost) dtoh_lines[ref.line] += act.duration();
  }
  ASSERT_FALSE(conv_lines.empty());
  EXPECT_EQ(conv_lines.begin()->first, 33);
  EXPECT_EQ(conv_lines.size(), 1u) << "conv kernels off line 33";
  ASSERT_FALSE(gemm_lines.empty());
  EXPECT_EQ(gemm_lines.size(), 1u);
  EXPECT_EQ(gemm_lines.begin()->first, 46);
  EXPECT_EQ(htod_lines.size(), 2u);
  EXPECT_GT(htod_lines[81], 0);
  EXPECT_GT(htod_lines[82], 0);
  EXPECT_EQ(dtoh_lines.size(), 1u);
  EXPECT_GT(dtoh_lines[88], 0);
  const LineCost* hot = lineCost(*run, "train_small.py", 33);
  ASSERT_NE(hot, nullptr);
  EXPECT_GT(hot->forward_ns, 0);
  EXPECT_GT(hot->backward_ns, hot->forward_ns);
  EXPECT_EQ(hot->by_method[static_cast<size_t>(Method::Aligned)], hot->gpu_ns);
  const LineCost* item = lineCost(*run, "train_small.py", 88);
  ASSERT_NE(item, nullptr);
  EXPECT_GT(item->sync_ns, 0);  // cudaStreamSynchronize behind .item()
}

TEST(KinetoAttribution, WithoutSourcesTimeStaysOnDefLines) {
  SIGHTLINE_REQUIRE_SHARED(trace, "profiles/h200-captures/kineto/train_small_naive.pt.trace.json.gz");
  auto loaded = ingest::loadKinetoTrace(trace);
  ASSERT_TRUE(loaded.profile);
  auto a = attribute(*loaded.profile);
  EXPECT_EQ(a.attributed_gpu_ns, a.steady_gpu_ns);
  EXPECT_EQ(a.by_method[static_cast<size_t>(Method::Function)], a.steady_gpu_ns);
  for (const auto& [f, lines] : a.files) {
    EXPECT_EQ(loaded.profile->strings[f], "train_small.py");  // torch/... is library code
    for (const auto& [line, c] : lines) {
      if (c.gpu_ns == 0) {  // an idle gap's host line: __getitem__'s def line (20) without the source
        EXPECT_GT(c.idle_ns, 0) << line;
        EXPECT_EQ(line, 20);
        continue;
      }
      EXPECT_TRUE(line == 32 || line == 43 || line == 49 || line == 89) << line;
    }
  }
}

// Ground truth from the side file: `experimental_event_tree()` nodes hold each Python call's
// caller line, and sorted by start they line up 1:1 with the JSON's `Python id`s. For each GPU
// activity: its launch -> op -> (backward: the forward op of the same sequence number) ->
// innermost Python frame -> up the parents to the innermost user frame; the caller line of the
// frame below it is where the time belongs. Computed here from the JSON alone, independently of
// the reader and the attribution engine.
TEST(KinetoAttribution, MatchesTheExactCallerLinesOfTheEventTree) {
  SIGHTLINE_REQUIRE_SHARED(trace, "profiles/torch2.11_h200_generated/tree_run.pt.trace.json.gz");
  SIGHTLINE_REQUIRE_SHARED(tree_path, "profiles/torch2.11_h200_generated/tree_run.event_tree.json.gz");
  SIGHTLINE_REQUIRE_SHARED(probe, "profiles/torch2.11_h200_generated/probe2.py");
  SIGHTLINE_REQUIRE_SHARED(train, "profiles/torch2.11_h200_generated/train_profile.py");
  json doc = json::parse(testing::readMaybeGzip(trace));
  json tree = json::parse(testing::readMaybeGzip(tree_path));
  const json& events = doc.at("traceEvents");

  std::vector<const json*> py, ops;
  std::unordered_map<int64_t, const json*> launch_by_corr, op_by_ext, py_by_id;
  for (const auto& e : events) {
    std::string cat = e.value("cat", "");
    if (cat == "python_function") py.push_back(&e);
    if (cat == "cpu_op" || cat == "user_annotation") {
      ops.push_back(&e);
      if (e["args"].contains("External id")) op_by_ext[e["args"]["External id"].get<int64_t>()] = &e;
    }
    if (cat == "cuda_runtime" || cat == "cuda_driver") launch_by_corr[e["args"]["correlation"].get<int64_t>()] = &e;
  }
  std::sort(py.begin(), py.end(), [](const json* a, const json* b) {
    return (*a)["args"]["Python id"].get<int64_t>() < (*b)["args"]["Python id"].get<int64_t>();
  });
  std::vector<const json*> nodes;
  for (const auto& n : tree)
    if (n["tag"] == "_EventType.PyCall" || n["tag"] == "_EventType.PyCCall") nodes.push_back(&n);
  std::stable_sort(nodes.begin(), nodes.end(), [](const json* a, const json* b) {
    return (*a)["start_ns"].get<int64_t>() < (*b)["start_ns"].get<int64_t>();
  });
  ASSERT_EQ(py.size(), nodes.size());
  std::unordered_map<int64_t, std::pair<std::string, int32_t>> caller;
  for (size_t i = 0; i < py.size(); ++i) {
    int64_t id = (*py[i])["args"]["Python id"].get<int64_t>();
    py_by_id[id] = py[i];
    const auto& c = (*nodes[i])["caller"];
    caller[id] = {c[0].is_string() ? c[0].get<std::string>() : "", c[1].get<int32_t>()};
  }
  auto encloses = [](const json& outer, double ts, double end) {
    double o = outer["ts"].get<double>(), oe = o + outer["dur"].get<double>();
    return o <= ts + 0.002 && end <= oe + 0.002;
  };
  auto isUser = [](const json& e) {
    std::string n = e["name"];
    return n.starts_with("probe2.py(") || n.starts_with("train_profile.py(");
  };

  auto run = attributeKineto(trace, {{"probe2.py", probe}, {"train_profile.py", train}});
  ASSERT_TRUE(run);
  const auto& p = run->profile;
  int64_t total = 0, covered = 0, agree = 0;
  for (size_t i = 0; i < p.activities.size(); ++i) total += p.activities[i].duration();
  // Activities in the model are sorted by start; the JSON's GPU events join them by correlation.
  std::unordered_map<int64_t, size_t> model_by_corr;
  for (size_t i = 0; i < p.activities.size(); ++i) model_by_corr[p.activities[i].correlation] = i;
  for (const auto& e : events) {
    std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    int64_t corr = e["args"]["correlation"].get<int64_t>();
    auto launch = launch_by_corr.find(corr);
    if (launch == launch_by_corr.end()) continue;
    const json* anchor = launch->second;
    double at = (*anchor)["ts"].get<double>();
    auto op = op_by_ext.find((*anchor)["args"].value("External id", int64_t{-1}));
    if (op != op_by_ext.end()) {
      // The innermost ancestor (or itself) that is a backward op -> its forward op.
      const json* bwd = nullptr;
      double os = (*op->second)["ts"].get<double>(), oe = os + (*op->second)["dur"].get<double>();
      for (const json* o : ops)
        if ((*o)["tid"] == (*op->second)["tid"] && encloses(*o, os, oe) && (*o)["args"].value("Fwd thread id", 0) > 0 &&
            (*o)["args"].contains("Sequence number") && (!bwd || (*o)["ts"].get<double>() > (*bwd)["ts"].get<double>()))
          bwd = o;
      if (bwd) {
        const json* fwd = nullptr;
        for (const json* o : ops)
          if ((*o)["args"].value("Fwd thread id", -1) == 0 &&
              (*o)["args"].value("Sequence number", -1) == (*bwd)["args"]["Sequence number"].get<int64_t>() &&
              (*o)["ts"].get<double>() < (*bwd)["ts"].get<double>() &&
              (!fwd || (*o)["ts"].get<double>() >= (*fwd)["ts"].get<double>()))
            fwd = o;
        if (fwd) anchor = fwd, at = (*fwd)["ts"].get<double>();
      }
    }
    // Innermost Python frame at the anchor on its thread, else on another thread.
    const json* frame = nullptr;
    for (int pass = 0; pass < 2 && !frame; ++pass)
      for (const json* f : py)
        if (((*f)["tid"] == (*anchor)["tid"]) == (pass == 0) && (*f)["tid"] != 0 && encloses(*f, at, at) &&
            (!frame || (*f)["ts"].get<double>() >= (*frame)["ts"].get<double>()))
          frame = f;
    const json* below = nullptr;
    while (frame && !isUser(*frame)) {
      below = frame;
      const auto& parent = (*frame)["args"]["Python parent id"];
      frame = parent.is_null() ? nullptr : py_by_id[parent.get<int64_t>()];
    }
    if (!frame || !below) continue;
    auto [file, line] = caller[(*below)["args"]["Python id"].get<int64_t>()];
    int64_t ns = std::llround(e["dur"].get<double>() * 1000.0);
    covered += ns;
    const auto& ref = run->attr.activity_lines[model_by_corr.at(corr)];
    if (ref.file != 0 && p.strings[ref.file] == file && ref.line == line) agree += ns;
  }
  EXPECT_GT(covered, total * 9 / 10);
  double share = static_cast<double>(agree) / static_cast<double>(total);
  EXPECT_GE(share, 0.90) << "resolved line equals the recorded caller line for " << share * 100 << "% of GPU time";
  RecordProperty("exact_line_share", std::to_string(share));
}

TEST(KinetoAttribution, SameTopLinesAsNsysForTheSameScript) {
  SIGHTLINE_REQUIRE_SHARED(trace, "profiles/h200-captures/kineto/train_small_naive.pt.trace.json.gz");
  SIGHTLINE_REQUIRE_SHARED(kineto_script, "profiles/h200-captures/kineto/train_small.py");
  SIGHTLINE_REQUIRE_SHARED(nsys_script, "profiles/h200-captures/nsys/train_small.py");
  SIGHTLINE_REQUIRE_PROFILE(nsys_path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto run = attributeKineto(trace, {{"train_small.py", kineto_script}});
  ASSERT_TRUE(run);
  auto nsys = ingest::loadNsysSqlite(nsys_path);
  ASSERT_TRUE(nsys.profile);
  auto nsys_attr = attribute(*nsys.profile);

  // The two captures ran different versions of the script: lines are compared by content.
  auto lineTexts = [](const std::string& path) {
    std::vector<std::string> out;
    std::string text = testing::readFile(path), line;
    for (char ch : text) {
      if (ch != '\n') {
        line += ch;
        continue;
      }
      auto b = line.find_first_not_of(' ');
      out.push_back(b == std::string::npos ? "" : line.substr(b));
      line.clear();
    }
    return out;
  };
  auto top5 = [](const model::Profile& p, const Attribution& a, const std::vector<std::string>& texts) {
    std::vector<std::pair<int64_t, std::string>> lines;
    for (const auto& [f, costs] : a.files)
      if (p.strings[f].ends_with("train_small.py"))
        for (const auto& [line, c] : costs) lines.emplace_back(c.gpu_ns, texts.at(static_cast<size_t>(line - 1)));
    std::sort(lines.rbegin(), lines.rend());
    std::vector<std::string> out;
    for (size_t i = 0; i < std::min<size_t>(5, lines.size()); ++i) out.push_back(lines[i].second);
    return out;
  };
  auto kineto_top = top5(run->profile, run->attr, lineTexts(kineto_script));
  auto nsys_top = top5(*nsys.profile, nsys_attr, lineTexts(nsys_script));
  ASSERT_EQ(kineto_top.size(), 5u);
  EXPECT_EQ(kineto_top, nsys_top);
  EXPECT_EQ(kineto_top.front(), "return F.relu(self.bn(self.conv(x)))");
}

}  // namespace
}  // namespace sightline::attribution

namespace sightline::attribution {
namespace {

// Idle gaps of the naive run (num_workers=0): the host spends them in the Dataset's
// __getitem__ (line 21, `torch.randn`), which the Python calls of the trace show directly. The
// gaps themselves equal a direct scan of the activities.
TEST(KinetoAttribution, IdleGapsGoToTheDatasetLine) {
  auto run = attributeKineto(testing::testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"),
                             {{"train_small.py", testing::testDataPath("h200/kineto/train_small.py")}});
  ASSERT_TRUE(run);
  std::map<uint32_t, std::vector<const model::GpuActivity*>> by_device;
  for (const auto& a : run->profile.activities) by_device[a.device].push_back(&a);
  int64_t scanned = 0;
  size_t gaps = 0;
  for (const auto& [device, list] : by_device) {
    int64_t busy = list.front()->end_ns;
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i]->start_ns - busy >= 1'000'000) scanned += list[i]->start_ns - busy, ++gaps;
      busy = std::max(busy, list[i]->end_ns);
    }
  }
  ASSERT_GE(gaps, 5u);
  EXPECT_EQ(run->attr.idle_gaps.size(), gaps);
  int64_t charged = 0;
  for (const auto& g : run->attr.idle_gaps) {
    EXPECT_NE(g.line.file, 0u) << "every gap has a host line";
    charged += g.end_ns - g.start_ns;
  }
  EXPECT_EQ(charged, scanned);
  const LineCost* getitem = lineCost(*run, "train_small.py", 21);
  ASSERT_NE(getitem, nullptr);
  EXPECT_GE(static_cast<double>(getitem->idle_ns), 0.9 * static_cast<double>(scanned));
}

}  // namespace
}  // namespace sightline::attribution
