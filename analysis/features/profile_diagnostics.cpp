// Profile evidence for findings, and the profile-only rules.
#include "analysis/features/profile_diagnostics.h"

#include "analysis/features/step_headline.h"
#include "analysis/features/step_verdict.h"
#include "analysis/features/story.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <regex>
#include <set>

namespace sightline::features {
namespace {

using attribution::LineCost;

// formatBytes ("3.0 MiB", "2.0 KiB"), with words below a KiB: "512 bytes", or "4-byte" as an
// adjective.
std::string mib(double bytes, bool adjective = false) {
  if (bytes >= 1024) return formatBytes(static_cast<int64_t>(std::llround(std::min(bytes, 9e18))));
  return formatFixed(bytes, 0) + (adjective ? "-byte" : " bytes");
}

// A threshold as written in settings: "1 ms", "0.5 ms".
std::string formatGap(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g ms", static_cast<double>(ns) / 1e6);
  return buf;
}

struct PerStep {
  double steps = 1;
  std::string unit = "ms";
  std::string ms(int64_t ns) const { return formatMilliseconds(static_cast<double>(ns) / steps) + " " + unit; }
};

std::string syncApis(const LineCost& c, const model::Profile& profile) {
  std::string out;
  for (const auto& [api, n] : c.sync_apis)
    out += (out.empty() ? "" : ", ") + profile.strings[api] + " ×" + std::to_string(n);
  return out;
}

// What the profile measured on a line, for a static finding's code.
std::string evidence(const std::string& code, const LineCost& c, const model::Profile& profile, const PerStep& s) {
  if ((code == "sync-in-loop" || code == "cuda-synchronize-in-loop") && c.sync_ns > 0) {
    std::string out = "measured: blocks the host " + s.ms(c.sync_ns) + " here (" + syncApis(c, profile);
    auto dtoh = c.memcpy_bytes_by_kind[static_cast<size_t>(model::CopyKind::DeviceToHost)];
    if (dtoh > 0 && c.syncs > 0) out += ", after a " + mib(static_cast<double>(dtoh) / c.syncs, true) + " DtoH copy";
    return out + ")";
  }
  if ((code == "missing-non-blocking" || code == "cpu-tensor-then-copy") && c.memcpy_bytes > 0) {
    std::string out = "measured: " + mib(static_cast<double>(c.memcpy_bytes) / s.steps) + " copied per step (" +
                      s.ms(c.memcpy_ns) + " of copies";
    if (c.pageable_bytes > 0) out += ", from pageable memory";
    if (c.sync_ns > 0) out += ", host blocked " + s.ms(c.sync_ns);
    return out + ")";
  }
  if (c.gpu_ns > 0 && code == "zero-grad-set-to-none")
    return "measured: " + s.ms(c.gpu_ns) + " of GPU time on this line";
  return {};
}

// The time behind a static finding's evidence (evidence()), over the profile.
double measuredNs(const std::string& code, const LineCost& c) {
  if (code == "sync-in-loop" || code == "cuda-synchronize-in-loop") return static_cast<double>(c.sync_ns);
  if (code == "missing-non-blocking" || code == "cpu-tensor-then-copy")
    return static_cast<double>(c.memcpy_ns + c.sync_ns);
  return static_cast<double>(c.gpu_ns);
}
// Below this per step (or in all, without steps) a confirmed habit costs too little to warn.
constexpr double kSmallMeasuredNs = 100e3;

// Whether a 0-based line passes non_blocking=True (spaces allowed around the `=`).
bool copiesWithoutBlocking(const source::SourceFile& file, uint32_t line0) {
  auto r = file.lines().lineRange(line0);
  std::string_view text(file.text().data() + r.begin, r.end - r.begin);
  for (size_t at = text.find("non_blocking"); at != std::string_view::npos; at = text.find("non_blocking", at + 1)) {
    size_t i = at + 12;
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size() || text[i] != '=') continue;
    ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    if (text.substr(i, 4) == "True") return true;
  }
  return false;
}

// The pageable-memcpy message: the advice the line has not taken yet. A line that copies with
// non_blocking=True is told so: CUDA still recorded its host memory as pageable.
std::string pageableMessage(const attribution::LineCost& c, const source::SourceFile& file, uint32_t line0,
                            const PerStep& s) {
  std::string head = mib(static_cast<double>(c.pageable_bytes) / s.steps) +
                     " per step copied between the GPU and pageable host memory here (" + s.ms(c.memcpy_ns) +
                     " of copies)";
  if (copiesWithoutBlocking(file, line0))
    return head +
           ", though this line copies with non_blocking=True: CUDA recorded the host memory as pageable, and from "
           "pageable memory a non_blocking copy is staged and synchronous all the same; copy from pinned memory (a "
           "DataLoader(pin_memory=True) batch, or the tensor .pin_memory() returns)";
  return head +
         ": such copies are staged and synchronous; load batches into pinned memory (DataLoader(pin_memory=True)) "
         "and copy with non_blocking=True";
}

// The call on a 0-based line that best stands for its cost (a copy for copies), or the line's
// text without indentation.
source::ByteRange rangeOnLine(const source::SourceFile& file, const source::SourceIndex& index, uint32_t line,
                              bool prefer_copy) {
  const auto& lines = file.lines();
  auto r = lines.lineRange(line);
  const source::CallInfo* best = nullptr;
  for (const auto& call : index.calls) {
    if (call.range.begin < r.begin || call.range.begin >= r.end) continue;
    bool copy = call.method == "to" || call.method == "cuda" || call.method == "copy_" || call.method == "cpu";
    if (!best || (prefer_copy && copy && !(best->method == "to" || best->method == "cuda"))) best = &call;
    if (prefer_copy && copy) break;
  }
  if (best) return best->range;
  const std::string& text = file.text();
  uint32_t b = r.begin, e = r.end;
  while (b < e && (text[b] == ' ' || text[b] == '\t')) ++b;
  while (e > b && (text[e - 1] == ' ' || text[e - 1] == '\r')) --e;
  return {b, e};
}

// rank-imbalance and exposed-communication on one line.
template <class Add>
void rankRules(const LineCost& c, const FileCosts& costs, const source::SourceFile& file, const PerStep& s,
               const ProfileRuleThresholds& t, Add&& add) {
  size_t n = costs.ranks.size();
  if (n > 1 && c.rank_ns.size() == n) {
    // Each rank per step of its own (the rank table's figures), or totals.
    std::vector<int64_t> per_rank;
    for (size_t r = 0; r < n; ++r) {
      double ns = static_cast<double>(c.rank_ns[r]);
      per_rank.push_back(static_cast<int64_t>(s.steps > 1 ? perRankStep(costs.ranks[r], ns) : ns));
    }
    RankSpread spread = rankSpread(per_rank);
    size_t slowest = spread.slowest, fastest = spread.fastest;
    double median = spread.median_ns;
    double over = static_cast<double>(per_rank[slowest]) - median;
    auto ms = [&](double ns) { return formatMilliseconds(ns) + " " + s.unit; };
    // Communication waits for the slowest rank: its time is not the line's own work.
    if (c.comm_ns == 0 && over >= t.rank_imbalance_min_share * median &&
        over >= static_cast<double>(t.rank_imbalance_min_ns)) {
      // Against a median of next to nothing a ratio says nothing ("4165726.0×"): the line is
      // that rank's work alone, as far as the profiles show.
      std::string against;
      if (median * 100 < static_cast<double>(per_rank[slowest])) {
        against = "while the median of " + std::to_string(n) + " ranks spends " + ms(median) + " there";
      } else {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.1f×", static_cast<double>(per_rank[slowest]) / std::max(1.0, median));
        against = std::string(ratio) + " the median of " + std::to_string(n) + " ranks (" + ms(median) + "; fastest " +
                  costs.ranks[fastest].label + " " + ms(static_cast<double>(per_rank[fastest])) + ")";
      }
      add("rank-imbalance", costs.ranks[slowest].label + " spends " + ms(static_cast<double>(per_rank[slowest])) +
                                " on this line, " + against +
                                ": the other ranks may wait for it at the next collective; give every rank the "
                                "same work here");
    }
  }
  if (c.comm_ns > 0 && static_cast<double>(c.comm_exposed_ns) / s.steps >= static_cast<double>(t.exposed_comm_min_ns)) {
    const std::string& text = file.text();
    std::string message = s.ms(c.comm_ns) + " of NCCL communication launched from this line, " +
                          s.ms(c.comm_exposed_ns) + " of it exposed (no compute on its GPU meanwhile)";
    // Collectives paired across ranks: the part spent waiting for the last rank is not
    // communication, and no communication setting shortens it.
    bool waiting = c.comm_wait_ns * 2 > c.comm_ns;
    if (c.comm_wait_ns > 0)
      message += "; of the NCCL time, " + s.ms(c.comm_wait_ns) + " is ranks waiting for the last one to arrive and " +
                 s.ms(c.comm_ns - c.comm_wait_ns) + " moves data";
    if (n > 1) {
      const attribution::RankInfo* most = &costs.ranks.front();
      const attribution::RankInfo* least = &costs.ranks.front();
      for (const auto& r : costs.ranks) {
        if (r.comm_exposed_ns > most->comm_exposed_ns) most = &r;
        if (r.comm_exposed_ns < least->comm_exposed_ns) least = &r;
      }
      // Each rank's own figure per step, as the report's rank table gives it.
      message += "; exposed per rank: ";
      auto rows = rankRows(costs.ranks);
      for (size_t i = 0; i < rows.size(); ++i)
        message += (i ? ", " : "") + rows[i].rank->label + " " + formatMilliseconds(rows[i].comm_exposed_ns) +
                   (rows[i].per_step ? " ms/step" : " ms");
      if (waiting) {
        // The late share as the rank table gives it (over the steady steps where they are
        // known): this message once counted every step and truncated ("95%" beside "100%").
        const RankRow* late_row = &rows.front();
        for (const auto& row : rows)
          if (row.late_share > late_row->late_share) late_row = &row;
        const attribution::RankInfo* late = late_row->rank;
        // The same framing as the verdict's: the rank last at more than half of them is named.
        // Its own extra GPU work (the story's) says whether it is its work or its host.
        const auto* story_late =
            costs.story && costs.story->late && costs.story->late->label == late->label ? &*costs.story->late : nullptr;
        bool work = story_late && static_cast<double>(story_late->extra_ns) >= kMeasurableNs;
        if (late_row->paired && late_row->late_share > 0.5)
          message += " — the others wait for " + late->label + ", last to arrive at " +
                     formatShare(late_row->late_share) + " of the collectives" +
                     (work ? ", with " + formatMilliseconds(static_cast<double>(story_late->extra_ns)) +
                                 " ms/step more GPU work than the others: balance the ranks' work before it"
                           : ", yet with no measurably more GPU work than the others: its host is slower (Python "
                             "work, data, syncs — or a profiler that slows some ranks more than others)");
        else
          message +=
              " — each rank is late in turn (none last at more than half of them): the ranks' steps vary; "
              "even them out";
      } else if (most->comm_exposed_ns > 2 * std::max<int64_t>(least->comm_exposed_ns, 1) &&
                 most->gpu_ns - most->comm_ns < least->gpu_ns - least->comm_ns)
        message += " — " + most->label + " waits for " + least->label +
                   ", which has more work to do before the collective: balance the ranks first";
    }
    std::vector<std::string> cures;
    if (waiting) {
      add("exposed-communication", std::move(message));
      return;
    }
    // Every way a script skips DDP's all-reduce in accumulation micro-steps.
    bool skips = text.find("no_sync") != std::string::npos ||
                 text.find("require_backward_grad_sync") != std::string::npos ||
                 text.find("set_requires_gradient_sync") != std::string::npos;
    if (!skips) cures.push_back("skip the all-reduce in gradient-accumulation micro-steps with `model.no_sync()`");
    if (text.find("bucket_cap_mb") == std::string::npos)
      cures.push_back("fewer, larger all-reduces with `DDP(..., bucket_cap_mb=...)`");
    if (text.find("gradient_as_bucket_view") == std::string::npos)
      cures.push_back("`gradient_as_bucket_view=True` to save the gradient copies");
    cures.push_back("overlap: launch compute that does not depend on the result before waiting for it");
    message += "; ";
    for (size_t i = 0; i < cures.size(); ++i) message += (i ? ", " : "") + cures[i];
    add("exposed-communication", std::move(message));
  }
}

// Whether a GPU named in the profile computes TF32 on tensor cores (Ampere and newer); an
// unnamed GPU is assumed to (the rule needs fp32 matmul kernels, which name their own arch).
bool hasTf32(const model::Profile& profile) {
  static const char* const kNames[] = {"A100",  "A800",   "A10",    "A30",    "A40",   "A16",          "A2",   "L4",
                                       "L40",   "H100",   "H200",   "H20",    "H800",  "GH200",        "B100", "B200",
                                       "GB200", "RTX 30", "RTX 40", "RTX 50", "RTX A", "RTX 6000 Ada", "Thor", "Orin"};
  if (profile.info.gpus.empty()) return true;
  for (const auto& gpu : profile.info.gpus)
    for (const char* name : kNames)
      if (gpu.find(name) != std::string::npos) return true;
  return false;
}

// A fix that inserts `line` after the file's last top-level import, when the file imports
// torch and does not mention `marker` already.
std::vector<Fix> afterImportsFix(const source::SourceFile& file, const source::SourceIndex& index,
                                 std::string_view marker, const std::string& line, std::string title, bool preferred) {
  size_t after = 0;
  bool torch = false;
  for (const auto& imp : index.imports) {
    if (file.lines().pointAt(imp.range.begin).column != 0) continue;  // top level only
    after = std::max(after, static_cast<size_t>(imp.range.end));
    torch = torch || imp.local_name == "torch";
  }
  if (!torch || file.text().find(marker) != std::string::npos) return {};
  size_t at = file.text().find('\n', after);
  at = at == std::string::npos ? file.text().size() : at + 1;
  TextEdit edit{{static_cast<uint32_t>(at), static_cast<uint32_t>(at)}, line + "\n"};
  return {Fix{std::move(title), {edit}, preferred}};
}

// `torch.set_float32_matmul_precision("high")`, after the imports.
std::vector<Fix> tf32Fix(const source::SourceFile& file, const source::SourceIndex& index) {
  return afterImportsFix(file, index, "set_float32_matmul_precision", "torch.set_float32_matmul_precision(\"high\")",
                         "Let fp32 matmuls use TF32 tensor cores (torch.set_float32_matmul_precision(\"high\"))", true);
}

// The step verdict on the training loop (the loop beneath which most steady GPU time runs),
// and fp32 matmuls on CUDA cores on the lines that launch them.
template <class Add>
void stepFindings(const source::SourceFile& file, const source::SourceIndex& index, const FileCosts& costs,
                  const model::Profile& profile, const StepVerdict* verdict, const PerStep& s, Add&& add) {
  const auto& lines = file.lines();
  if (hasTf32(profile)) {
    for (const auto& [line, c] : costs.lines) {
      if (line < 1 || static_cast<uint32_t>(line) > lines.lineCount() || c.lost_launches > 0) continue;
      int64_t ns = 0;
      std::string top;
      int64_t top_ns = 0;
      for (const auto& [name, stat] : c.by_name) {
        if (!attribution::isFp32MatmulKernel(profile.strings[name])) continue;
        ns += stat.ns;
        if (stat.ns > top_ns) top_ns = stat.ns, top = profile.strings[name];
      }
      if (static_cast<double>(ns) / s.steps < 500e3) continue;
      add("fp32-matmul", static_cast<uint32_t>(line - 1), false,
          s.ms(ns) + " of fp32 matrix multiplies on CUDA cores here (`" + shortKernelName(top, 48) +
              "`): with TF32 they run on tensor cores several times faster; set "
              "torch.set_float32_matmul_precision(\"high\") once, or autocast to bf16",
          tf32Fix(file, index));
    }
  }
  if (!verdict || index.loops.empty()) return;
  int best = -1;
  int64_t best_ns = 0;
  for (size_t l = 0; l < index.loops.size(); ++l) {
    const auto& loop = index.loops[l];
    auto first = static_cast<int32_t>(lines.pointAt(loop.range.begin).line) + 1;
    auto last = static_cast<int32_t>(lines.pointAt(loop.range.end).line) + 1;
    int64_t ns = inclusiveOver(costs, first, last).gpu_ns;
    if (ns > best_ns || (ns == best_ns && best >= 0 && loop.depth < index.loops[static_cast<size_t>(best)].depth))
      best = static_cast<int>(l), best_ns = ns;
  }
  if (best < 0 || 2 * best_ns < costs.total_gpu_ns) return;
  const auto& v = *verdict;
  // The headline every surface gives: the step without the profiler, its source, the bound.
  std::string message = "step " + formatMilliseconds(v.wall_ns) + " ms as captured; " + unprofiledSummary(v);
  for (size_t i = 0; i < v.causes.size() && i < 3; ++i)
    message += (i ? ", " : " (") + plainText(causeStory(v, v.causes[i], false, 0)) +
               (i + 1 == std::min<size_t>(v.causes.size(), 3) ? ")" : "");
  for (size_t i = 0; i < v.changes.size(); ++i)
    message += (i               ? "; "
                : v.as_captured ? ". Try (as captured): "
                                : ". Try: ") +
               std::to_string(i + 1) + ") " + changeText(v.changes[i], v);
  if (auto measure = measureAdvice(v); !measure.empty()) message += ". " + measure;
  auto loop_line = lines.pointAt(index.loops[static_cast<size_t>(best)].range.begin).line;
  add("step-verdict", loop_line, false, message);
}

// `torch._dynamo.config.capture_scalar_outputs = True` after the imports: Dynamo's own hint for
// a graph break at `.item()`.
std::vector<Fix> scalarOutputsFix(const source::SourceFile& file, const source::SourceIndex& index) {
  return afterImportsFix(file, index, "capture_scalar_outputs", "torch._dynamo.config.capture_scalar_outputs = True",
                         "Let torch.compile capture .item() in the graph (capture_scalar_outputs)", false);
}

std::string baseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool evaluates(std::string_view name) {
  for (std::string_view word : {"eval", "valid", "test", "predict", "generate", "infer", "sample"})
    if (name.find(word) != std::string_view::npos) return true;
  return false;
}

// Advice that fits an out-of-memory error: an evaluation function on its call chain that runs
// with autograd on (no decorator, no `with torch.no_grad()` in it or in a caller of this file)
// gets `@torch.no_grad()`; huge logits get a chunked loss. "" when nothing fits.
// Activations a training forward keeps for backward: the `forward` method of this file whose
// lines hold the most forward-made bytes at the peak (at least a quarter of it), and the line of
// the failure's call chain that calls it. Nothing when the script checkpoints already.
std::string checkpointAdvice(const source::SourceFile& file, const source::SourceIndex& index, const FileCosts& costs,
                             const join::MemoryStory& m, const std::string& here) {
  if (file.text().find("checkpoint(") != std::string::npos) return "";
  const source::FunctionInfo* best = nullptr;
  int64_t best_bytes = 0;
  for (const auto& f : index.functions) {
    if (f.name != "forward") continue;
    int64_t bytes = 0;
    for (auto it = costs.lines.lower_bound(static_cast<int32_t>(f.def_line) + 1);
         it != costs.lines.end() && it->first <= static_cast<int32_t>(f.end_line) + 1; ++it)
      bytes += it->second.memory_peak_by_phase[0];
    if (bytes > best_bytes) best = &f, best_bytes = bytes;
  }
  if (!best || best_bytes * 4 < m.peak_allocated_bytes) return "";
  // The caller: the chain's frame just before the first frame inside that function.
  const auto& chain = m.oom->chain;
  for (size_t i = 1; i < chain.size(); ++i) {
    auto line0 = static_cast<uint32_t>(chain[i].line - 1);
    if (chain[i].path != here || chain[i - 1].path != here || line0 < best->def_line || line0 > best->end_line)
      continue;
    std::string owner = best->qualified_name.empty() ? best->name : best->qualified_name;
    std::string advice = "; the activations " + owner + "() keeps for backward hold " + formatBytes(best_bytes) +
                         " at the peak: recompute them in backward instead, calling it through "
                         "torch.utils.checkpoint.checkpoint(..., use_reentrant=False) on line " +
                         std::to_string(chain[i - 1].line);
    // The call as it would read (`x = block(x)`: `x = checkpoint(block, x, use_reentrant=False)`).
    auto caller0 = static_cast<uint32_t>(chain[i - 1].line - 1);
    if (caller0 < file.lines().lineCount()) {
      auto r = file.lines().lineRange(caller0);
      std::string text(std::string_view(file.text()).substr(r.begin, r.end - r.begin));
      static const std::regex kCall(R"(^\s*([\w., ]+=\s*)([A-Za-z_][\w.]*)\((.*)\)\s*$)");
      std::smatch call;
      if (std::regex_match(text, call, kCall) && call[3].str().find('(') == std::string::npos)
        advice += " (`" + call[1].str() + "torch.utils.checkpoint.checkpoint(" + call[2].str() +
                  (call[3].length() ? ", " + call[3].str() : "") + ", use_reentrant=False)`)";
    }
    return advice;
  }
  return "";
}

// Gradients kept through a forward: the peak in a forward pass, lines holding backward-made
// bytes there (>= 5% of the peak), and a zero_grad(set_to_none=False) in the file, which zeroes
// them in place instead of freeing them. A quick fix sets it to True.
std::string setToNoneAdvice(const source::SourceFile& file, const FileCosts& costs, const join::MemoryStory& m,
                            std::vector<Fix>& fixes) {
  static constexpr std::string_view kKeep = "set_to_none=False";
  size_t at = file.text().find(kKeep);
  if (m.peak_phase != attribution::MemoryPhase::Forward || at == std::string::npos) return "";
  int64_t grads = 0;
  for (const auto& [line, c] : costs.lines) grads += c.memory_peak_by_phase[1];
  if (grads * 20 < m.peak_allocated_bytes) return "";
  auto line = file.lines().pointAt(static_cast<uint32_t>(at)).line + 1;
  auto begin = static_cast<uint32_t>(at + kKeep.size() - 5);  // "False"
  fixes.push_back({"Free the gradients between steps (set_to_none=True)", {{{begin, begin + 5}, "True"}}, false});
  return "; " + formatBytes(grads) + " made by backward passes is still allocated in this forward: zero_grad(" +
         std::string(kKeep) + ") on line " + std::to_string(line) +
         " zeroes the gradients in place; set_to_none=True (the default) frees them until the next backward";
}

std::string oomAdvice(const source::SourceFile& file, const source::SourceIndex& index, const FileCosts& costs,
                      const join::MemoryStory& m, const std::string& here, std::vector<Fix>& fixes) {
  std::string advice;
  const source::FunctionInfo* eval = nullptr;
  bool grad_off = false;
  for (const auto& frame : m.oom->chain) {
    if (frame.path != here) continue;
    for (const auto& f : index.functions) {
      if (f.name != frame.function) continue;
      std::string_view text = std::string_view(file.text()).substr(f.range.begin, f.range.end - f.range.begin);
      for (const auto& d : f.decorators)
        grad_off = grad_off || d.find("no_grad") != std::string::npos || d.find("inference_mode") != std::string::npos;
      grad_off = grad_off || text.find("no_grad") != std::string_view::npos ||
                 text.find("inference_mode") != std::string_view::npos ||
                 text.find("set_grad_enabled(False)") != std::string_view::npos;
      if (evaluates(f.name)) eval = &f;
    }
  }
  if (eval && !grad_off) {
    advice = "; " + eval->name +
             "() runs with autograd on, keeping every activation for a backward that never comes: run it under "
             "torch.no_grad() or torch.inference_mode()";
    bool imports_torch = file.text().find("import torch") != std::string::npos;
    if (imports_torch) {
      uint32_t at = file.lines().lineStart(eval->def_line);
      std::string_view line = std::string_view(file.text()).substr(at);
      std::string indent(line.substr(0, line.find_first_not_of(" \t")));
      fixes.push_back(
          {"Decorate " + eval->name + "() with @torch.no_grad()", {{{at, at}, indent + "@torch.no_grad()\n"}}, true});
    }
  }
  if (!eval) advice += checkpointAdvice(file, index, costs, m, here);
  advice += setToNoneAdvice(file, costs, m, fixes);
  if (!m.top.empty() && m.top[0].path == here && m.top[0].bytes * 4 >= m.peak_allocated_bytes) {
    auto line0 = static_cast<uint32_t>(m.top[0].line - 1);
    if (line0 < file.lines().lineCount()) {
      auto r = file.lines().lineRange(line0);
      if (std::string_view(file.text()).substr(r.begin, r.end - r.begin).find("logits") != std::string_view::npos)
        advice += "; the logits on line " + std::to_string(m.top[0].line) + " hold " + formatBytes(m.top[0].bytes) +
                  ": compute the loss over chunks of the batch (or with a fused linear cross-entropy) instead of "
                  "whole";
    }
  }
  return advice;
}

// Out of memory on the line of this file where the failing allocation was made: what it asked
// for and had free, the call chain to it, and the lines that held the most at the peak (as
// related information).
std::optional<Finding> oomFinding(const source::SourceFile& file, const source::SourceIndex& index,
                                  const FileCosts& costs, const RuleConfig& config) {
  if (!costs.memory || !costs.memory->oom || costs.oom_line < 1 ||
      static_cast<uint32_t>(costs.oom_line) > file.lines().lineCount() || !config.enabled("out-of-memory"))
    return std::nullopt;
  const auto& m = *costs.memory;
  const auto& oom = *m.oom;
  Finding f;
  f.code = "out-of-memory";
  f.severity = config.severityOf(f.code);
  f.range = rangeOnLine(file, index, static_cast<uint32_t>(costs.oom_line - 1), false);
  f.message = "out of memory here: asked " + formatBytes(oom.requested_bytes) + " with " + formatBytes(oom.free_bytes) +
              " free";
  if (oom.chain.size() > 1) {
    f.message += " (";
    for (size_t i = 0; i + 1 < oom.chain.size(); ++i)
      f.message += oom.chain[i].function + " line " + std::to_string(oom.chain[i].line) + " → ";
    f.message += "here)";
  }
  if (!m.top.empty()) {
    const auto& top = m.top.front();
    f.message += "; at the peak (" + formatBytes(m.peak_allocated_bytes) + " allocated) line " +
                 std::to_string(top.line) + (top.path == oom.where.path ? "" : " of " + baseName(top.path)) +
                 " holds " + formatBytes(top.bytes);
  }
  f.message += oomAdvice(file, index, costs, m, oom.where.path, f.fixes);
  for (size_t i = 0; i < m.top.size() && i < 5; ++i)
    f.related.push_back({m.top[i].path, m.top[i].line, "holds " + formatBytes(m.top[i].bytes) + " at the peak"});
  for (size_t i = 0; i + 1 < oom.chain.size(); ++i)
    f.related.push_back(
        {oom.chain[i].path, oom.chain[i].line, "calls " + oom.chain[i + 1].function + " (on the way to the failure)"});
  if (isSuppressed(file, index, f.range, f.code)) return std::nullopt;
  return f;
}

// Memory kept step after step: a line whose allocations over the snapshot's trace were never
// freed (at least 1% of the peak).
template <class Add>
void memoryGrowthFindings(const FileCosts& costs, Add&& add) {
  if (!costs.memory) return;
  int64_t floor = std::max<int64_t>(1, costs.memory->peak_allocated_bytes / 100);
  for (const auto& [line, c] : costs.lines) {
    if (c.memory_kept_count < 3 || c.memory_kept_bytes < floor) continue;
    add("memory-growth", static_cast<uint32_t>(line - 1), false,
        "memory grows step after step: " + std::to_string(c.memory_kept_count) + " allocations made here in " +
            std::to_string(c.memory_kept_steps) + " steps (" +
            formatBytes(c.memory_kept_bytes / std::max(1, c.memory_kept_steps)) + " per step, " +
            formatBytes(c.memory_kept_bytes) +
            " in all) over the recorded history were never freed; something keeps what this line makes every "
            "step (a list it is appended to, a running total kept as a tensor): keep a number (`.item()`) or a "
            "detached copy (`.detach()`), or drop the reference");
  }
}

// torch.compile's graph breaks at their lines, and recompiles at the compiled function's `def`.
template <class Add>
void compileFindings(const source::SourceFile& file, const source::SourceIndex& index, const FileCosts& costs,
                     Add&& add) {
  uint32_t count = file.lines().lineCount();
  for (const auto& f : costs.compiled_functions) {
    std::string name = "`" + f.function.function + "`";
    for (const auto& b : f.breaks) {
      if (b.line < 1 || static_cast<uint32_t>(b.line) > count) continue;
      std::string message = "torch.compile breaks the graph of " + name + " here";
      if (!b.reason.empty()) message += ": " + b.reason;
      if (f.profile_only)
        message += " (the profile ran Dynamo's resume function for this line; a TORCH_TRACE=<dir> run records why)";
      message += "; it compiles as " + std::to_string(std::max(2, f.graphs)) +
                 " graphs and runs this line in Python between them";
      if (f.recompiles > 0) message += " (" + std::to_string(f.recompiles) + " recompiles followed)";
      if (!b.hint.empty()) message += ". Dynamo's hint: " + b.hint;
      bool scalar = b.hint.find("capture_scalar_outputs") != std::string::npos;
      add("graph-break", static_cast<uint32_t>(b.line - 1), false, message,
          scalar ? scalarOutputsFix(file, index) : std::vector<Fix>{});
    }
    if ((f.recompiles == 0 && f.recompile_limit == 0) || f.function.line < 1 ||
        static_cast<uint32_t>(f.function.line) > count)
      continue;
    // A graph for grad mode off (`@torch.no_grad()` evaluation) is one expected recompile per
    // mode, not a cost to fix.
    auto gradMode = [](const join::CompiledFunctionSummary::Reason& r) {
      std::string t = r.text;
      std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return std::tolower(ch); });
      return t.find("grad_mode") != std::string::npos || t.find("global_state") != std::string::npos ||
             t.find("grad mode") != std::string::npos;
    };
    if (f.recompile_limit == 0 && f.recompiles <= 2 && !f.recompile_reasons.empty() &&
        std::all_of(f.recompile_reasons.begin(), f.recompile_reasons.end(), gradMode))
      continue;
    std::string secs = formatSeconds(f.seconds);
    std::string message = "torch.compile recompiled " + name + " " + std::to_string(f.recompiles) +
                          (f.recompiles == 1 ? " time" : " times") + " (" + secs + " compiling in all)";
    for (size_t r = 0; r < f.recompile_reasons.size() && r < 3; ++r)
      message +=
          (r ? ", " : ": ") + std::to_string(f.recompile_reasons[r].count) + "× `" + f.recompile_reasons[r].text + "`";
    if (!f.recompile_reasons.empty())
      if (std::string cure = recompileCure(f.recompile_reasons.front(), false); !cure.empty()) message += "; " + cure;
    if (f.recompile_limit > 0)
      message += "; it hit the recompile limit (" + std::to_string(f.recompile_limit) + ") and runs uncompiled since";
    add("recompiles", static_cast<uint32_t>(f.function.line - 1), false, message);
  }
}

}  // namespace

namespace {

// A measured copy gets both halves of the cure: the loader's pin_memory and non_blocking=True
// on the copy itself (the static finding's fix on the same call), together and apart.
void combineCopyFixes(std::vector<Finding>& findings) {
  for (auto& f : findings) {
    if (f.code != "pageable-memcpy" && f.code != "sync-memcpy") continue;
    const Finding* copy = nullptr;
    for (const auto& g : findings)
      if (g.code == "missing-non-blocking" && g.range == f.range && !g.fixes.empty()) copy = &g;
    if (!copy) continue;
    std::vector<Fix> fixes;
    if (!f.fixes.empty()) {
      Fix both{"Pin the DataLoader's memory and copy with non_blocking=True", f.fixes.front().edits, true};
      both.edits.insert(both.edits.end(), copy->fixes.front().edits.begin(), copy->fixes.front().edits.end());
      std::sort(both.edits.begin(), both.edits.end(),
                [](const TextEdit& a, const TextEdit& b) { return a.range.begin < b.range.begin; });
      fixes.push_back(std::move(both));
    }
    for (auto fix : f.fixes) {
      fix.preferred = false;
      fixes.push_back(std::move(fix));
    }
    Fix nb = copy->fixes.front();
    nb.preferred = fixes.empty();
    fixes.push_back(std::move(nb));
    f.fixes = std::move(fixes);
  }
}

}  // namespace

namespace {

// The GPU's idle while the host runs a line, where it recurs and its records are whole.
std::optional<std::string> idleMessage(const LineCost& c, const source::SourceFile& file,
                                       const source::SourceIndex& index, uint32_t line0, const StepVerdict* verdict,
                                       const PerStep& s, const ProfileRuleThresholds& thresholds) {
  // Lost records put idle where the GPU ran the missing work: no idle finding rests on them.
  if (verdict && verdict->low_confidence) return std::nullopt;
  // A figure per step needs gaps that recur: one gap in five steps (a first step's set-up) is not
  // a step's cost, and once added to per-line idle past the measured step.
  bool recurring = static_cast<double>(c.idle_gaps) * 2 >= s.steps;
  if (!recurring || c.idle_gaps == 0 || static_cast<double>(c.idle_ns) / s.steps < thresholds.gpu_idle_min_ns)
    return std::nullopt;
  int f = index.functionAt(file.lines().lineStart(line0));
  bool in_dataset = f >= 0 && (index.functions[static_cast<size_t>(f)].name == "__getitem__" ||
                               index.functions[static_cast<size_t>(f)].name == "__iter__" ||
                               index.functions[static_cast<size_t>(f)].name == "collate_fn");
  std::string cure = in_dataset ? "the DataLoader runs this in the training process: load batches in worker "
                                  "processes (num_workers > 0) so the next one is ready"
                                : "the GPU has nothing queued while the host runs this: move the host work out "
                                  "of the step, or queue the next GPU work before it";
  if (c.compile_idle_ns * 2 >= c.idle_ns)
    cure = s.ms(c.compile_idle_ns) +
           " of it while torch.compile compiled what this line calls: compiles inside the steps are recompiles "
           "(see `recompiles` on the compiled function)";
  // Idle is host time, which a profiler slows: always the capture's, a measured step beside it.
  std::string step;
  if (verdict && verdict->unprofiled.wall_ns && verdict->unprofiled.source == StepSource::Measured)
    step =
        " (the whole step measured without the profiler: " + formatMilliseconds(*verdict->unprofiled.wall_ns) + " ms)";
  return "the GPU sits idle " + s.ms(c.idle_ns) + " as captured" + step + " while the host runs this line (" +
         std::to_string(c.idle_gaps) + (c.idle_gaps == 1 ? " gap of " : " gaps of ") +
         formatGap(thresholds.gpu_idle_gap_ns) + " or more): " + cure;
}

// Many short kernels from one line: launches set the pace (as captured, where not measured).
std::optional<std::string> launchBoundMessage(const LineCost& c, const model::Profile& profile,
                                              const StepVerdict* verdict, const PerStep& s,
                                              const ProfileRuleThresholds& thresholds) {
  double kernels_per_step = static_cast<double>(c.kernels) / s.steps;
  if (kernels_per_step <= thresholds.launch_bound_min_kernels || c.kernels == 0) return std::nullopt;
  int64_t kernel_ns = c.gpu_ns - c.memcpy_ns - c.memset_ns;
  if (kernel_ns / c.kernels >= thresholds.launch_bound_max_mean_ns) return std::nullopt;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.0f kernels per step launched from this line, %.1f µs each on average",
                kernels_per_step, static_cast<double>(kernel_ns) / c.kernels / 1000.0);
  // Kernels torch.compile made already (a tenth of them Inductor's triton_*, as the verdict
  // counts a compiled model): fusing is done, graphs are not.
  uint64_t triton = 0, all = 0;
  for (const auto& [name, stat] : c.by_name) {
    all += stat.count;
    if (profile.strings[name].starts_with("triton_")) triton += stat.count;
  }
  bool compiled = all > 0 && 10 * triton >= all;
  // Not measured: the capture's pace (a profiler slows the launches it traces), said so.
  bool measured = verdict && verdict->unprofiled.wall_ns.has_value();
  return std::string(buf) +
         (measured ? ": launch overhead, not the GPU, sets the pace; "
                   : ": as captured, launch overhead, not the GPU, sets the pace; ") +
         (compiled ? "they are torch.compile's kernels already: replay them as CUDA graphs "
                     "(torch.compile(mode=\"reduce-overhead\"))"
                   : "fuse them with torch.compile or capture a CUDA graph");
}

}  // namespace

std::vector<Finding> confirmWithProfile(std::vector<Finding> findings, const source::SourceFile& file,
                                        const source::SourceIndex& index, const FileCosts& costs,
                                        const model::Profile& profile, const StepVerdict* verdict,
                                        const RuleConfig& config, const ProfileRuleThresholds& thresholds) {
  PerStep s;
  if (costs.steps > 0) s = {static_cast<double>(costs.steps), "ms/step"};
  const auto& lines = file.lines();
  auto costOf = [&](uint32_t offset) -> const LineCost* {
    auto it = costs.lines.find(static_cast<int32_t>(lines.pointAt(offset).line) + 1);
    return it == costs.lines.end() ? nullptr : &it->second;
  };
  std::set<std::pair<int32_t, std::string>> flagged;  // (line, code) already reported
  for (auto& f : findings) {
    flagged.insert({static_cast<int32_t>(lines.pointAt(f.range.begin).line) + 1, f.code});
    const LineCost* c = costOf(f.range.begin);
    if (!c) continue;
    std::string e = evidence(f.code, *c, profile, s);
    if (e.empty()) continue;
    f.message += " — " + e;
    // Severity follows what was measured: a habit that costs next to nothing here is a note.
    if (measuredNs(f.code, *c) / s.steps < kSmallMeasuredNs) {
      f.message += ", too little to matter in this run";
      f.severity = std::max(f.severity, Severity::Information);
    } else {
      f.severity = std::min(f.severity, Severity::Warning);  // lower enum = more severe
    }
  }
  // Fixes for pageable copies: the pin_memory fix of the loader finding, when there is one.
  std::vector<Fix> pin_fixes;
  for (const auto& f : findings)
    if (f.code == "dataloader-pin-memory") pin_fixes = f.fixes;

  auto add = [&](const std::string& code, uint32_t line0, bool prefer_copy, std::string message,
                 std::vector<Fix> fixes = {}) {
    if (!config.enabled(code)) return;
    Finding f;
    f.code = code;
    f.severity = config.severityOf(code);
    f.range = rangeOnLine(file, index, line0, prefer_copy);
    f.message = std::move(message);
    f.fixes = std::move(fixes);
    if (isSuppressed(file, index, f.range, code)) return;
    findings.push_back(std::move(f));
  };
  for (const auto& [line, c] : costs.lines) {
    if (line < 1 || static_cast<uint32_t>(line) > lines.lineCount()) continue;
    uint32_t line0 = static_cast<uint32_t>(line - 1);
    // Launches of this line lost their GPU records: what the profile shows here is incomplete.
    if (c.lost_launches > 0) continue;
    rankRules(c, costs, file, s, thresholds,
              [&](const std::string& code, std::string message) { add(code, line0, false, std::move(message)); });
    if (c.pageable_bytes > 0 && static_cast<double>(c.pageable_bytes) / s.steps >= thresholds.pageable_min_bytes) {
      size_t before = findings.size();
      add("pageable-memcpy", line0, true, pageableMessage(c, file, line0, s), pin_fixes);
      // A few KiB a step cost next to nothing, whatever their memory: a note, as for the other rules.
      if (findings.size() > before && static_cast<double>(c.memcpy_ns) / s.steps < kSmallMeasuredNs) {
        findings.back().message += ", too little to matter in this run";
        findings.back().severity = std::max(findings.back().severity, Severity::Information);
      }
    }
    if (c.sync_memcpys > 0 && !flagged.count({line, "sync-in-loop"})) {
      std::string message = std::to_string(c.sync_memcpys) + " synchronous copies (" +
                            mib(static_cast<double>(c.sync_memcpy_bytes) / s.steps) + " per step, " +
                            s.ms(c.sync_memcpy_ns) +
                            ") here: cudaMemcpy blocks the host until the copy is done; copy from pinned memory "
                            "with non_blocking=True (cudaMemcpyAsync) so the host keeps queueing work";
      add("sync-memcpy", line0, true, message, pin_fixes);
      flagged.insert({line, "sync-memcpy"});
    }
    bool other_sync = flagged.count({line, "sync-memcpy"}) || flagged.count({line, "sync-in-loop"}) ||
                      flagged.count({line, "cuda-synchronize-in-loop"});
    if (!other_sync && c.syncs > 0 && static_cast<double>(c.sync_ns) / s.steps >= thresholds.sync_api_min_ns)
      add("sync-api", line0, false,
          "the host waits for the GPU " + s.ms(c.sync_ns) + " here (" + syncApis(c, profile) +
              "): while it waits no new work is queued; move the synchronization out of the step or drop it");
    if (auto idle = idleMessage(c, file, index, line0, verdict, s, thresholds)) add("gpu-idle", line0, false, *idle);
    if (auto launch = launchBoundMessage(c, profile, verdict, s, thresholds))
      add("launch-bound", line0, false, *launch);
  }
  stepFindings(file, index, costs, profile, verdict, s, add);
  compileFindings(file, index, costs, add);
  if (auto oom = oomFinding(file, index, costs, config)) findings.push_back(std::move(*oom));
  memoryGrowthFindings(costs, add);
  combineCopyFixes(findings);
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.range.begin < b.range.begin; });
  return findings;
}

}  // namespace sightline::features
