// Hint labels, tooltips and hover cards from the features' numbers.
#include "server/render/profile_text.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "analysis/features/line_figures.h"
#include "analysis/features/story_verdict.h"
#include "analysis/ingest/profile_loader.h"
#include "server/lsp/uri.h"
#include "server/render/markdown.h"
#include "server/render/story_render.h"

namespace sightline::server {
namespace {

using features::formatBytes;
using features::formatDelta;
using features::formatFixed;
using features::formatMilliseconds;
using features::formatSeconds;

std::string bytes(uint64_t n) { return formatBytes(static_cast<int64_t>(std::min<uint64_t>(n, INT64_MAX))); }

std::string unitOf(const features::Scale& s) { return s.per_step ? "ms/step" : "ms"; }

}  // namespace

std::string workKindsText(const std::vector<features::WorkKind>& kinds, size_t most) {
  std::string out;
  for (size_t i = 0; i < kinds.size() && i < most; ++i) {
    const auto& k = kinds[i];
    out += (i ? ", " : "") + k.kind + " " + formatShare(k.share) + " (" + std::to_string(k.count) +
           (k.kind == "copy"   ? (k.count == 1 ? " copy" : " copies")
            : k.kind == "fill" ? (k.count == 1 ? " fill" : " fills")
                               : (k.count == 1 ? " kernel" : " kernels")) +
           ")";
  }
  if (size_t more = kinds.size() > most ? kinds.size() - most : 0; more > 0)
    out += ", " + std::to_string(more) + (more == 1 ? " more kind" : " more kinds");
  return out;
}

namespace {

std::string workTable(const features::LineBreakdown& b) {
  if (b.top_work.empty()) return "";
  std::string md;
  if (!b.kinds.empty()) md += "**By kind:** " + workKindsText(b.kinds) + "\n\n";
  md += "| GPU work | count | ms |\n|---|---:|---:|\n";
  for (const auto& w : b.top_work)
    md += "| " + md::cell(features::shortKernelName(w.name)) + " | " + std::to_string(w.count) + " | " +
          formatMilliseconds(static_cast<double>(w.ns)) + " |\n";
  if (b.more_work > 0) md += "| " + std::to_string(b.more_work) + " more | | |\n";
  return md + "\n";
}

std::string copiesAndSyncs(const features::LineBreakdown& b, const std::string& unit) {
  std::string md;
  if (b.memcpy_bytes > 0) {
    md += "memcpy " + formatMilliseconds(b.memcpy_ns) + " " + unit + ":";
    for (const auto& [kind, n] : b.copy_bytes) md += " " + kind + " " + bytes(n);
    if (b.pageable_share > 0) md += ", " + formatShare(b.pageable_share) + " from/to pageable memory";
    md += "\n\n";
  }
  if (b.memsets > 0)
    md += "memset " + std::to_string(b.memsets) + "× " + formatMilliseconds(b.memset_ns) + " " + unit + "\n\n";
  if (b.syncs > 0) {
    md += "host blocked " + formatMilliseconds(b.sync_ns) + " " + unit + " in";
    bool first = true;
    for (const auto& api : b.sync_apis) {
      md += std::string(first ? " " : ", ") + md::code(api.name) + " ×" + std::to_string(api.count);
      first = false;
    }
    md += "\n\n";
  }
  return md;
}

}  // namespace

std::string formatShare(double share) { return features::formatShare(share); }

std::string lineLink(const join::PlacedLine& l) {
  std::string name = std::filesystem::path(l.path).filename().string() + ":" + std::to_string(l.line);
  if (l.path.empty() || l.path.front() != '/') return md::code(name);
  return md::link(name, pathToUri(l.path) + "#L" + std::to_string(l.line));
}

// Inclusive time, when work runs beneath the line: the split, and the lines beneath it.
std::string inclusiveMarkdown(const features::LineBreakdown& b, const std::string& unit) {
  if (!features::showsInclusive(b.gpu_ns, b.inclusive_ns)) return "";
  std::string md = "**" + formatMilliseconds(b.inclusive_ns) + " " + unit + "** of GPU time beneath this line, " +
                   formatShare(b.inclusive_share) + " of the profile: itself " + formatMilliseconds(b.gpu_ns) +
                   ", beneath it " + formatMilliseconds(b.inclusive_ns - b.gpu_ns);
  if (b.inclusive_backward_ns > 0)
    md += " (forward " + formatMilliseconds(b.inclusive_forward_ns) + " + backward " +
          formatMilliseconds(b.inclusive_backward_ns) + ")";
  md += "\n\n";
  if (!b.beneath.empty()) {
    md += "beneath it:";
    for (size_t i = 0; i < b.beneath.size(); ++i)
      md += std::string(i ? "," : "") + " " + lineLink(b.beneath[i]) + " " +
            formatMilliseconds(static_cast<double>(b.beneath[i].ns) / b.scale.divisor);
    if (b.more_beneath > 0)
      md += ", " + std::to_string(b.more_beneath) + (b.more_beneath == 1 ? " more line" : " more lines");
    md += " (" + unit + ")\n\n";
  }
  return md;
}

std::string breakdownMarkdown(const features::LineBreakdown& b) {
  std::string unit = unitOf(b.scale);
  std::string md = inclusiveMarkdown(b, unit);
  // One-off work beneath the line: an evaluation or a checkpoint it runs, its own or its callees'.
  std::string oneoff;
  if (b.oneoff_inclusive_ns > b.oneoff_ns)
    oneoff = "outside the steady steps (warm-up, evaluation, start-up): " +
             formatMilliseconds(static_cast<double>(b.oneoff_inclusive_ns)) + " ms of GPU time beneath this line" +
             (b.oneoff_ns > 0 ? " (" + formatMilliseconds(static_cast<double>(b.oneoff_ns)) + " ms its own)" : "") +
             ", not counted per step\n\n";
  if (b.total_ns == 0) {
    if (!oneoff.empty())
      md += oneoff;
    else if (b.oneoff_ns > 0)
      md += "outside the steady steps (warm-up, evaluation, start-up): " +
            formatMilliseconds(static_cast<double>(b.oneoff_ns)) + " ms of its own, not counted per step\n\n";
    return md;
  }
  md += "**" + formatMilliseconds(b.gpu_ns) + " " + unit + "** of GPU time" + (md.empty() ? "" : " itself") + ", " +
        formatShare(b.share) + " of the profile";
  if (b.scale.divisor > 1) md += " (" + formatMilliseconds(static_cast<double>(b.total_ns)) + " ms in total)";
  md += "\n\n";
  if (!oneoff.empty())
    md += oneoff;
  else if (b.oneoff_ns > 0)
    md += "outside the steady steps (warm-up, evaluation, start-up): " +
          formatMilliseconds(static_cast<double>(b.oneoff_ns)) + " ms more, not counted per step\n\n";
  if (b.backward_ns > 0)
    md += "forward " + formatMilliseconds(b.forward_ns) + " + backward " + formatMilliseconds(b.backward_ns) + " " +
          unit + "\n\n";
  std::string methods;
  for (const auto& [name, share] : b.methods)
    methods += (methods.empty() ? "" : ", ") + name + " " + formatShare(share);
  md += "attributed by: " + methods + "\n\n";
  if (!b.ranks.empty()) {
    md += "per rank: min " + formatMilliseconds(b.rank_min_ns) + " / median " + formatMilliseconds(b.rank_median_ns) +
          " / max " + formatMilliseconds(b.rank_max_ns) + " " + unit +
          (b.slowest_is_max ? ", slowest **" : ", slowest by its own work **") + md::text(b.slowest) + "** (";
    for (size_t i = 0; i < b.ranks.size() && i < 8; ++i)
      md +=
          (i ? ", " : "") + md::text(b.ranks[i].label) + " " + formatMilliseconds(b.ranks[i].ns) +
          (b.ranks[i].wait_ns > 0 ? " of which waiting for other ranks " + formatMilliseconds(b.ranks[i].wait_ns) : "");
    if (b.ranks.size() > 8) md += ", …";
    md += ")\n\n";
  }
  if (b.comm_ns > 0)
    md += "communication (NCCL): " + formatMilliseconds(b.comm_ns) + " " + unit + ", exposed " +
          formatMilliseconds(b.comm_exposed_ns) + " (" + formatShare(b.comm_exposed_ns / std::max(1.0, b.comm_ns)) +
          ")\n\n";
  if (b.lost_launches > 0)
    md += "*" + std::to_string(b.lost_launches) +
          " launches from this line have no GPU record (the capture ended first): it ran longer than shown.*\n\n";
  md += workTable(b);
  if (!b.fused_with.empty()) {
    // "fused by torch.compile with lines 54, 71 (train_gpt.py)"; lines of other files by name.
    const std::string& file = b.fused_with[0].path;
    bool one_file =
        std::all_of(b.fused_with.begin(), b.fused_with.end(), [&](const auto& f) { return f.path == file; });
    md += std::string("fused by torch.compile with ") + (b.fused_with.size() == 1 ? "line " : "lines ");
    for (size_t i = 0; i < b.fused_with.size() && i < 8; ++i) {
      const auto& f = b.fused_with[i];
      md += (i ? ", " : "") + (one_file ? "" : md::text(std::filesystem::path(f.path).filename().string()) + ":") +
            std::to_string(f.line);
    }
    if (one_file) md += " (" + md::text(std::filesystem::path(file).filename().string()) + ")";
    md += ": its kernels compute their work too\n\n";
  }
  if (!b.autograd_ops.empty()) {
    md += "autograd ops: ";
    for (size_t i = 0; i < b.autograd_ops.size(); ++i) md += (i ? ", " : "") + md::code(b.autograd_ops[i]);
    md += "\n\n";
  }
  md += copiesAndSyncs(b, unit);
  if (b.launches > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", b.launches);
    md += std::string("launches: ") + buf + (b.scale.divisor > 1 ? " per step" : "") + "\n";
  }
  return md;
}

namespace {
std::string staleNote(const features::LineHint& h) { return h.stale ? " · edited since profiled" : ""; }

std::string signedMs(double ns) { return (ns >= 0 ? "+" : "−") + formatMilliseconds(std::abs(ns)) + " ms"; }

// After a hint's change from compareWith: the half width of its 95% interval, and whether the
// runs' spread holds it ("noise"); a line that now synchronizes more often says so.
std::string regressionNote(const features::LineHint& h) {
  if (!h.regression) return "";
  const auto& r = *h.regression;
  std::string out;
  if (h.delta_ns && r.sampled) out += " ±" + formatMilliseconds((r.high_ns - r.low_ns) / 2);
  if (h.delta_ns && !r.certain) out += " (noise)";
  if (r.sync_added) out += " · +" + formatFixed(r.new_syncs - r.base_syncs, 1) + " sync/step";
  return out;
}
}  // namespace

std::string hintLabel(const features::LineHint& h) {
  switch (h.kind) {
    case features::HintKind::Gone:
      return formatDelta(-h.gpu_ns) + " (gone)";
    case features::HintKind::Rollup:
      return "Σ " + formatMilliseconds(h.gpu_ns) + " ms · " + formatShare(h.share);
    case features::HintKind::Cost:
      break;
  }
  std::string memory = h.memory_bytes <= 0 ? ""
                       : h.memory_reserved ? "+" + formatBytes(h.memory_bytes) + " reserved"
                                           : formatBytes(h.memory_bytes) + " at peak";
  if (!h.show_time) return "▮ " + memory + " · " + formatShare(h.memory_share) + staleNote(h);
  if (!memory.empty()) memory = " · " + memory;
  // Edited since it was profiled: the figures are of the code the line held then.
  memory += staleNote(h);
  if (h.show_inclusive) {
    std::string label = "▮ " + formatMilliseconds(h.inclusive_ns) + " ms · " + formatShare(h.inclusive_share) +
                        " incl · self " + formatMilliseconds(h.gpu_ns);
    if (h.delta_ns) label += " " + formatDelta(*h.delta_ns);
    return label + regressionNote(h) + memory;
  }
  std::string label = "▮ " + formatMilliseconds(h.gpu_ns) + " ms · " + formatShare(h.share);
  // VS Code cuts a hint past 43 characters (editor.inlayHints.maximumLength): with a change from
  // compareWith to show, the split is left to the hover.
  if (h.show_split && !h.delta_ns && !h.regression)
    label += " (fwd " + formatMilliseconds(h.forward_ns) + " + bwd " + formatMilliseconds(h.backward_ns) + ")";
  if (h.delta_ns) label += " " + formatDelta(*h.delta_ns);
  return label + regressionNote(h) + memory;
}

nlohmann::json hintData(const features::LineHint& h) {
  static const char* const kKinds[] = {"cost", "rollup", "gone"};
  nlohmann::json data = {{"kind", kKinds[static_cast<int>(h.kind)]},
                         {"gpuNs", h.gpu_ns},
                         {"perStep", h.scale.per_step},
                         {"share", h.share},
                         {"forwardNs", h.forward_ns},
                         {"backwardNs", h.backward_ns}};
  if (h.delta_ns) data["deltaNs"] = *h.delta_ns;
  if (const auto& r = h.regression) {
    nlohmann::json reg = {{"deltaNs", r->delta_ns}, {"certain", r->certain}, {"regressed", r->regressed}};
    if (r->sampled) reg["intervalNs"] = {r->low_ns, r->high_ns};
    if (r->sync_added) reg["syncsPerStep"] = {r->base_syncs, r->new_syncs};
    data["regression"] = std::move(reg);
  }
  if (h.show_inclusive) data["inclusiveNs"] = h.inclusive_ns, data["inclusiveShare"] = h.inclusive_share;
  if (!h.show_time) data["gpuNs"] = nullptr;
  if (h.memory_bytes > 0) data["memoryBytes"] = h.memory_bytes, data["memoryShare"] = h.memory_share;
  if (h.memory_reserved) data["memoryReserved"] = true;
  return data;
}

std::string hintTooltip(const features::LineHint& h) {
  switch (h.kind) {
    case features::HintKind::Gone:
      return "**" + formatMilliseconds(h.gpu_ns) + " " + unitOf(h.scale) + "** of GPU time here in " +
             md::code(h.compare_name) + ", none now";
    case features::HintKind::Rollup:
      return "**" + formatMilliseconds(h.gpu_ns) + " " + unitOf(h.scale) + "** of GPU time on the lines of this " +
             md::text(h.scope) + ", " + formatShare(h.share) + " of the profile";
    case features::HintKind::Cost:
      break;
  }
  std::string memory =
      h.memory_bytes <= 0 ? ""
      : h.memory_reserved
          ? "The caching allocator's pool grew by **" + formatBytes(h.memory_bytes) +
                "** through this line's cudaMalloc (" + formatShare(h.memory_share) + " of all it grew by)"
          : "**" + formatBytes(h.memory_bytes) + "** of GPU memory allocated here was still alive at the peak (" +
                formatShare(h.memory_share) + " of it)";
  std::string stale = h.stale ? "\n\n*This line was edited since it was profiled: the figures are of the code it held "
                                "then.*"
                              : "";
  if (!h.show_time) return memory + stale;
  std::string card = h.breakdown ? breakdownMarkdown(*h.breakdown) : "";
  return (memory.empty() ? card : card + "\n\n" + memory) + stale;
}

namespace {

std::string placeText(const join::MemoryPlace& p) {
  return md::code(std::filesystem::path(p.path).filename().string() + ":" + std::to_string(p.line));
}

// Bytes held at the peak by the pass that allocated them: "; made in the backward pass", or
// "; forward 1.2 GiB, backward 300 MiB" when more than one pass made them ("" when none known).
std::string phaseSplit(const std::array<int64_t, 3>& by_phase, int64_t bytes) {
  static const char* const kNames[] = {"forward", "backward", "optimizer"};
  std::string parts;
  int count = 0;
  for (size_t i = 0; i < by_phase.size(); ++i) {
    if (by_phase[i] <= 0) continue;
    ++count;
    parts += std::string(parts.empty() ? "" : ", ") + kNames[i] + " " + formatBytes(by_phase[i]);
  }
  if (count == 0) return "";
  if (count > 1) return "; " + parts;
  for (size_t i = 0; i < by_phase.size(); ++i)
    if (by_phase[i] > 0)
      return by_phase[i] == bytes
                 ? std::string("; made in the ") + (i == 2 ? "optimizer step" : std::string(kNames[i]) + " pass")
                 : "; " + parts;
  return "";
}

// The memory part of a hover: what the line holds at the peak, an out-of-memory error on it.
std::string memoryMarkdown(const features::HoverInfo& hover) {
  if (!hover.memory) return "";
  const auto& m = *hover.memory;
  std::string out;
  if (hover.oom_here && m.oom) {
    out = "**Out of memory here**: asked " + formatBytes(m.oom->requested_bytes) + " with " +
          formatBytes(m.oom->free_bytes) + " free";
    if (m.oom->chain.size() > 1) {
      out += "; called from";
      for (size_t i = 0; i + 1 < m.oom->chain.size(); ++i)
        out += std::string(i ? " →" : "") + " " + placeText(m.oom->chain[i]) +
               (m.oom->chain[i].function.empty() ? "" : " (" + md::code(m.oom->chain[i].function) + ")");
    }
    if (!m.top.empty()) {
      out += ". Held at the peak by";
      for (size_t i = 0; i < m.top.size() && i < 3; ++i)
        out += std::string(i ? "," : "") + " " + placeText(m.top[i]) + " " + formatBytes(m.top[i].bytes);
    }
    out += ".";
  }
  if (hover.memory_bytes > 0) {
    double share =
        static_cast<double>(hover.memory_bytes) / static_cast<double>(std::max<int64_t>(1, m.peak_allocated_bytes));
    std::string held = "**" + formatBytes(hover.memory_bytes) +
                       "** of GPU memory allocated here was alive at the peak (" + formatShare(share) + " of " +
                       formatBytes(m.peak_allocated_bytes) + (hover.memory_rank == 1 ? "; the most of any line" : "") +
                       phaseSplit(hover.memory_by_phase, hover.memory_bytes);
    for (size_t i = 0; i < hover.memory_ops.size() && i < 3; ++i)
      held += std::string(i ? ", " : "; allocated by ") + md::code(hover.memory_ops[i].first) + " " +
              formatBytes(hover.memory_ops[i].second);
    held += ")";
    out = out.empty() ? held : out + "\n\n" + held;
  }
  if (hover.memory_step_bytes > 0) {
    std::string step = "Allocates " + formatBytes(hover.memory_step_bytes) + " per step (" +
                       std::to_string(hover.memory_step_allocations) + " allocation" +
                       (hover.memory_step_allocations == 1 ? "" : "s") + ", the mean of " +
                       std::to_string(m.steady_steps) + " steady step" + (m.steady_steps == 1 ? "" : "s") + ")";
    out = out.empty() ? step : out + "\n\n" + step;
  }
  return out;
}

// The regression gate's change of the line against compareWith, first in the hover.
std::string regressionMarkdown(const features::HoverInfo& hover) {
  const auto& r = *hover.regression;
  const auto& b = *hover.regression_basis;
  std::string out = "**Since the baseline** " + md::code(b.base_name) + ": " + formatMilliseconds(r.base_ns) + " → " +
                    formatMilliseconds(r.new_ns) + " ms/step, " + formatDelta(r.delta_ns);
  if (r.sampled)
    out += ", 95% interval " + signedMs(r.low_ns) + " .. " + signedMs(r.high_ns) +
           (r.certain ? " (past the runs' spread)" : " (within the runs' spread: noise)");
  else
    out += " (no per-step samples: no interval)";
  if (r.added) out += "; the baseline had no such line";
  if (r.sync_added)
    out += "\n\nThis line now synchronizes " + formatFixed(r.new_syncs, 1) + "× a step (was " +
           formatFixed(r.base_syncs, 1) + ") while the step grew " + signedMs(b.step_new_ns - b.step_base_ns) +
           " (95% interval " + signedMs(b.step_low_ns) + " .. " + signedMs(b.step_high_ns) +
           "): the host waits here for the GPU, then the GPU for the host.";
  out += "\n\n*Medians of the line's time in " + std::to_string(r.base_samples) + " and " +
         std::to_string(r.new_samples) +
         " profiled steps; the interval is a bootstrap of their difference (2000 resamples). The step (" +
         std::to_string(b.base_samples) + " and " + std::to_string(b.new_samples) +
         " samples): " + md::text(b.step_basis) + ".*";
  return out;
}

}  // namespace

std::string hoverMarkdown(const features::HoverInfo& hover) {
  std::string compiled = hover.compiled
                             ? "**torch.compile:** " + storyMarkdown(features::compileSummaryStory({*hover.compiled}))
                             : std::string();
  std::string memory = memoryMarkdown(hover);
  if (!hover.cost) {
    std::string card = hover.standing ? hintTooltip(*hover.standing) : "";
    for (const std::string* part : {&compiled, &memory})
      if (!part->empty()) card = card.empty() ? *part : card + "\n\n" + *part;
    if (hover.regression && hover.regression_basis)
      card = regressionMarkdown(hover) + (card.empty() ? "" : "\n\n" + card);
    return card;
  }
  std::string card = breakdownMarkdown(*hover.cost);
  if (!memory.empty()) card += "\n\n" + memory;
  if (!compiled.empty()) card += "\n\n" + compiled;
  if (hover.compare && !hover.regression) {
    const auto& c = *hover.compare;
    std::string change = "**Compared with** " + md::code(c.name) + ": " + formatMilliseconds(c.before_ns) + " → " +
                         formatMilliseconds(c.now_ns) + (c.per_step ? " ms/step" : " ms") + ", " +
                         formatDelta(c.now_ns - c.before_ns);
    if (c.before_ns > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, " (%+.0f%%)", 100 * (c.now_ns - c.before_ns) / c.before_ns);
      change += buf;
    }
    if (!c.note.empty()) change += " *(" + md::text(c.note) + ")*";
    card = change + "\n\n" + card;
  }
  if (hover.regression && hover.regression_basis) card = regressionMarkdown(hover) + "\n\n" + card;
  if (hover.stale)
    card = "*Edited since it was profiled: the figures are for the line as it was when measured.*\n\n" + card;
  return card;
}

std::string findingMarkdown(const features::Finding& finding) {
  std::string out = "**" + md::code(finding.code) + "** " + md::text(finding.message);
  if (const features::RuleInfo* rule = features::findRule(finding.code)) {
    if (!rule->why.empty()) out += "\n\n**Why it costs:** " + std::string(rule->why);
    if (!rule->fix.empty()) out += "\n\n**Fix:** " + std::string(rule->fix);
  }
  if (!finding.fixes.empty()) {
    out += "\n\nQuick fix" + std::string(finding.fixes.size() > 1 ? "es" : "") + ":";
    for (const auto& fix : finding.fixes) out += " " + md::text(fix.title) + ";";
    out.pop_back();
  }
  return out;
}

std::string lostRecordsWarning(const attribution::Attribution& attr, const model::ProfileInfo& info) {
  if (attr.lost_launches == 0) return {};
  std::string share = formatShare(static_cast<double>(attr.lost_launches) / std::max<uint32_t>(1, attr.launches));
  std::string out = std::to_string(attr.lost_launches) + " of " + std::to_string(attr.launches) + " GPU launches (" +
                    share + ") have no GPU record (";
  for (size_t i = 0; i < attr.lost.size() && i < 4; ++i)
    out += (i ? "; " : "") + std::string("pid ") + std::to_string(attr.lost[i].pid) + " thread " +
           std::to_string(attr.lost[i].tid) + ": " + std::to_string(attr.lost[i].lost) + " of " +
           std::to_string(attr.lost[i].launches);
  if (attr.lost.size() > 4) out += "; " + std::to_string(attr.lost.size() - 4) + " more threads";
  // A thread that lost nearly all of them lost them in every step: not the capture's end.
  for (const auto& t : attr.lost)
    if (attribution::wholeThreadLost(t.launches, t.lost))
      return out + "): thread " + std::to_string(t.tid) +
             " lost them in every step, not only where the capture ended, so the GPU work it launched is missing "
             "from every figure (the backward pass, where it is autograd's thread): no bound or cause is named from "
             "the GPU's idle time. Capture again; if it repeats, capture with the PyTorch profiler (`sightline "
             "capture --profiler torch`).";
  out +=
      "): the capture ended before the GPU records were delivered, so their lines show less than they ran and "
      "profile-only rules skip them. ";
  bool range =
      std::find(info.capabilities.begin(), info.capabilities.end(), "capture-range") != info.capabilities.end();
  if (range)
    out +=
        "Call torch.cuda.synchronize() before torch.cuda.profiler.stop() so the range closes after the GPU finishes.";
  else
    out +=
        "End the capture with a range instead of a time limit (nsys profile --capture-range=cudaProfilerApi "
        "--capture-range-end=stop, torch.cuda.profiler.start()/stop() around the steps, torch.cuda.synchronize() "
        "before stop), or let the app exit before nsys stops collecting.";
  return out;
}

std::vector<std::string> profileWarnings(const attribution::Attribution& attr, const model::ProfileInfo& info) {
  std::vector<std::string> out = info.warnings;
  if (auto lost = lostRecordsWarning(attr, info); !lost.empty()) out.push_back(std::move(lost));
  // Nothing on the lines: one warning on every surface (the page once labelled it "No").
  if (attr.attributed_gpu_ns == 0 && attr.total_gpu_ns > 0) {
    std::string advice = ingest::captureAdvice(info);
    std::replace(advice.begin(), advice.end(), '\n', ' ');
    out.push_back("No GPU time could be put on source lines: " + advice);
  }
  return out;
}

std::string verdictSummary(const features::StepVerdict& v) { return features::unprofiledSummary(v); }

}  // namespace sightline::server
