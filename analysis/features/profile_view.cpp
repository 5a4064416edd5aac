// Inlay-hint labels and hover cards from line costs.
#include "analysis/features/profile_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sightline::features {
namespace {

using attribution::LineCost;

std::string percent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, share >= 0.095 ? "%.0f%%" : "%.1f%%", share * 100);
  return buf;
}

std::string bytes(uint64_t n) {
  char buf[32];
  if (n >= (1u << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  return buf;
}

struct Scale {
  double divisor = 1;
  std::string unit = "ms";  // "ms" or "ms/step"
};

Scale scaleFor(const FileCosts& costs, const HintOptions& options) {
  if (options.per_step && costs.steps > 0) return {static_cast<double>(costs.steps), "ms/step"};
  return {};
}

// A line's GPU time in the compare profile, in its own per-step scale (its steps, not ours).
double compareValue(const FileCosts& costs, int32_t line, bool per_step) {
  const FileCosts& c = *costs.compare;
  auto it = c.lines.find(line);
  double ns = it == c.lines.end() ? 0 : static_cast<double>(it->second.gpu_ns);
  return per_step && c.steps > 0 ? ns / c.steps : ns;
}

// Both profiles compare per step only when both know their steps.
bool comparePerStep(const FileCosts& costs, const HintOptions& options) {
  return options.per_step && costs.steps > 0 && costs.compare && costs.compare->steps > 0;
}

// Sum of the costs on 1-based lines [first, last].
int64_t sumLines(const FileCosts& costs, int32_t first, int32_t last) {
  int64_t sum = 0;
  for (auto it = costs.lines.lower_bound(first); it != costs.lines.end() && it->first <= last; ++it)
    sum += it->second.gpu_ns;
  return sum;
}

std::string methodsLine(const LineCost& c) {
  std::string out;
  for (size_t m = 0; m < attribution::kMethodCount; ++m) {
    if (c.by_method[m] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string(attribution::methodName(static_cast<attribution::Method>(m))) + " " +
           percent(static_cast<double>(c.by_method[m]) / static_cast<double>(std::max<int64_t>(1, c.gpu_ns)));
  }
  return out;
}

std::string breakdown(const LineCost& c, const FileCosts& costs, const model::Profile& profile, const Scale& s) {
  double total = static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  std::string md;
  md += "**" + formatMilliseconds(static_cast<double>(c.gpu_ns) / s.divisor) + " " + s.unit + "** of GPU time, " +
        percent(static_cast<double>(c.gpu_ns) / total) + " of the profile";
  if (s.divisor > 1) md += " (" + formatMilliseconds(static_cast<double>(c.gpu_ns)) + " ms in total)";
  md += "\n\n";
  if (c.backward_ns > 0)
    md += "forward " + formatMilliseconds(static_cast<double>(c.forward_ns) / s.divisor) + " + backward " +
          formatMilliseconds(static_cast<double>(c.backward_ns) / s.divisor) + " " + s.unit + "\n\n";
  md += "attributed by: " + methodsLine(c) + "\n\n";
  std::vector<std::pair<int64_t, model::StringId>> top;
  for (const auto& [name, stat] : c.by_name) top.emplace_back(stat.ns, name);
  std::sort(top.rbegin(), top.rend());
  if (!top.empty()) {
    md += "| GPU work | count | ms |\n|---|---:|---:|\n";
    for (size_t i = 0; i < top.size() && i < 5; ++i) {
      const auto& stat = c.by_name.at(top[i].second);
      md += "| `" + shortKernelName(profile.strings[top[i].second]) + "` | " + std::to_string(stat.count) + " | " +
            formatMilliseconds(static_cast<double>(stat.ns)) + " |\n";
    }
    if (top.size() > 5) md += "| " + std::to_string(top.size() - 5) + " more | | |\n";
    md += "\n";
  }
  if (!c.autograd_ops.empty()) {
    std::vector<std::pair<uint32_t, model::StringId>> ops;
    for (const auto& [op, n] : c.autograd_ops) ops.emplace_back(n, op);
    std::sort(ops.rbegin(), ops.rend());
    md += "autograd ops: ";
    for (size_t i = 0; i < ops.size() && i < 6; ++i) md += (i ? ", `" : "`") + profile.strings[ops[i].second] + "`";
    md += "\n\n";
  }
  if (c.memcpy_bytes > 0) {
    static const char* const kKinds[] = {"other", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
    md += "memcpy " + formatMilliseconds(static_cast<double>(c.memcpy_ns) / s.divisor) + " " + s.unit + ":";
    for (size_t k = 0; k < c.memcpy_bytes_by_kind.size(); ++k)
      if (c.memcpy_bytes_by_kind[k] > 0) md += " " + std::string(kKinds[k]) + " " + bytes(c.memcpy_bytes_by_kind[k]);
    if (c.pageable_bytes > 0)
      md += ", " + percent(static_cast<double>(c.pageable_bytes) / static_cast<double>(c.memcpy_bytes)) +
            " from/to pageable memory";
    md += "\n\n";
  }
  if (c.memsets > 0)
    md += "memset " + std::to_string(c.memsets) + "× " +
          formatMilliseconds(static_cast<double>(c.memset_ns) / s.divisor) + " " + s.unit + "\n\n";
  if (c.syncs > 0) {
    md += "host blocked " + formatMilliseconds(static_cast<double>(c.sync_ns) / s.divisor) + " " + s.unit + " in";
    bool first = true;
    for (const auto& [api, n] : c.sync_apis) {
      md += std::string(first ? " " : ", ") + "`" + profile.strings[api] + "` ×" + std::to_string(n);
      first = false;
    }
    md += "\n\n";
  }
  if (c.launches > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(c.launches) / s.divisor);
    md += std::string("launches: ") + buf + (s.divisor > 1 ? " per step" : "") + "\n";
  }
  return md;
}

}  // namespace

std::string formatDelta(double delta_ns) {
  return (delta_ns > 0 ? "▲ +" : "▼ −") + formatMilliseconds(std::abs(delta_ns)) + " ms";
}

std::string formatMilliseconds(double ns) {
  char buf[32];
  double ms = ns / 1e6;
  std::snprintf(buf, sizeof buf, ms >= 100 ? "%.0f" : ms >= 10 ? "%.1f" : "%.2f", ms);
  return buf;
}

std::string shortKernelName(const std::string& name, size_t max_length) {
  std::string out;
  int angle = 0, paren = 0;
  for (char c : name) {
    if (c == '<') {
      if (angle++ == 0 && paren == 0) out += "<…>";
      continue;
    }
    if (c == '>' && angle > 0) {
      --angle;
      continue;
    }
    if (c == '(' && angle == 0) {
      if (paren++ == 0) out += "(…)";
      continue;
    }
    if (c == ')' && paren > 0) {
      --paren;
      continue;
    }
    if (angle == 0 && paren == 0) out += c;
  }
  if (out.size() > max_length) out = out.substr(0, max_length - 1) + "…";
  return out;
}

std::vector<LineHint> computeInlayHints(const source::SourceFile& file, const source::SourceIndex& index,
                                        const FileCosts& costs, const model::Profile& profile,
                                        const HintOptions& options, uint32_t first, uint32_t last) {
  Scale s = scaleFor(costs, options);
  double total = static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  std::map<uint32_t, LineHint> hints;
  for (auto it = costs.lines.lower_bound(static_cast<int32_t>(first) + 1);
       it != costs.lines.end() && it->first <= static_cast<int32_t>(last) + 1; ++it) {
    const LineCost& c = it->second;
    double share = static_cast<double>(c.gpu_ns) / total;
    if (share < options.min_share || c.gpu_ns <= 0) continue;
    LineHint h;
    h.line = static_cast<uint32_t>(it->first - 1);
    h.label = "▮ " + formatMilliseconds(static_cast<double>(c.gpu_ns) / s.divisor) + " ms · " + percent(share);
    if (options.show_backward && c.backward_ns > 0)
      h.label += " (fwd " + formatMilliseconds(static_cast<double>(c.forward_ns) / s.divisor) + " + bwd " +
                 formatMilliseconds(static_cast<double>(c.backward_ns) / s.divisor) + ")";
    h.tooltip = breakdown(c, costs, profile, s);
    hints[h.line] = std::move(h);
  }
  if (costs.compare) {
    // Change from the compare profile, on lines with a hint and on lines whose cost is gone.
    bool per_step = comparePerStep(costs, options);
    double divisor = per_step ? static_cast<double>(costs.steps) : 1;
    double compare_total = static_cast<double>(std::max<int64_t>(1, costs.compare->total_gpu_ns));
    for (auto& [line0, h] : hints) {
      int32_t line = static_cast<int32_t>(line0) + 1;
      auto it = costs.lines.find(line);
      double now = it == costs.lines.end() ? 0 : static_cast<double>(it->second.gpu_ns) / divisor;
      double before = compareValue(costs, line, per_step);
      if (std::abs(now - before) >= 5e3) h.label += " " + formatDelta(now - before);
    }
    for (auto it = costs.compare->lines.lower_bound(static_cast<int32_t>(first) + 1);
         it != costs.compare->lines.end() && it->first <= static_cast<int32_t>(last) + 1; ++it) {
      auto line0 = static_cast<uint32_t>(it->first - 1);
      if (hints.count(line0) || costs.lines.count(it->first)) continue;
      if (static_cast<double>(it->second.gpu_ns) / compare_total < options.min_share) continue;
      double before = compareValue(costs, it->first, per_step);
      LineHint h;
      h.line = line0;
      h.label = formatDelta(-before) + " (gone)";
      h.tooltip = "**" + formatMilliseconds(before) + " " + (per_step ? "ms/step" : "ms") + "** of GPU time here in `" +
                  costs.compare_name + "`, none now";
      hints[line0] = std::move(h);
    }
  }
  auto rollup = [&](uint32_t header, uint32_t body_first, uint32_t body_last, const char* what) {
    if (header < first || header > last || hints.count(header)) return;
    int64_t sum = sumLines(costs, static_cast<int32_t>(body_first) + 1, static_cast<int32_t>(body_last) + 1);
    double share = static_cast<double>(sum) / total;
    if (sum <= 0 || share < options.min_share) return;
    LineHint h;
    h.line = header;
    h.rollup = true;
    h.label = "Σ " + formatMilliseconds(static_cast<double>(sum) / s.divisor) + " ms · " + percent(share);
    h.tooltip = std::string("**") + formatMilliseconds(static_cast<double>(sum) / s.divisor) + " " + s.unit +
                "** of GPU time on the lines of this " + what + ", " + percent(share) + " of the profile";
    hints[header] = std::move(h);
  };
  const auto& lines = file.lines();
  for (const auto& f : index.functions) rollup(f.def_line, f.def_line, f.end_line, "function");
  for (const auto& l : index.loops)
    rollup(lines.pointAt(l.range.begin).line, lines.pointAt(l.range.begin).line, lines.pointAt(l.range.end).line,
           "loop");
  std::vector<LineHint> out;
  for (auto& [line, h] : hints) out.push_back(std::move(h));
  return out;
}

std::string rangeNameFromProfile(const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                 uint32_t line) {
  auto it = costs.lines.find(static_cast<int32_t>(line) + 1);
  if (it == costs.lines.end() || it->second.gpu_ns <= 0) return {};
  const LineCost& c = it->second;
  if (static_cast<double>(c.gpu_ns) / static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns)) < options.min_share)
    return {};
  std::string name;
  uint32_t best = 0;
  for (const auto& [op, n] : c.autograd_ops)
    if (n > best) best = n, name = profile.strings[op];
  if (name.empty()) {
    int64_t top = 0;
    for (const auto& [kernel, stat] : c.by_name)
      if (stat.ns > top) top = stat.ns, name = shortKernelName(profile.strings[kernel], 40);
  }
  if (name.rfind("aten::", 0) == 0) name = name.substr(6);
  return name;
}

std::optional<std::string> hoverCard(const source::SourceFile& file, const source::SourceIndex& index,
                                     const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                     uint32_t line) {
  Scale s = scaleFor(costs, options);
  auto it = costs.lines.find(static_cast<int32_t>(line) + 1);
  if (it != costs.lines.end() && it->second.gpu_ns > 0) {
    std::string card = breakdown(it->second, costs, profile, s);
    if (costs.compare) {
      bool per_step = comparePerStep(costs, options);
      double now = static_cast<double>(it->second.gpu_ns) / (per_step ? costs.steps : 1);
      double before = compareValue(costs, it->first, per_step);
      std::string unit = per_step ? " ms/step" : " ms";
      std::string change = "**Compared with** `" + costs.compare_name + "`: " + formatMilliseconds(before) + " → " +
                           formatMilliseconds(now) + unit + ", " + formatDelta(now - before);
      if (before > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " (%+.0f%%)", 100 * (now - before) / before);
        change += buf;
      }
      if (!costs.compare_note.empty()) change += " *(" + costs.compare_note + ")*";
      card = change + "\n\n" + card;
    }
    if (costs.stale_lines.count(it->first))
      card = "*Edited since it was profiled: the figures are for the line as it was when measured.*\n\n" + card;
    return card;
  }
  auto hints = computeInlayHints(file, index, costs, profile, HintOptions{0, options.per_step, false}, line, line);
  if (!hints.empty()) return hints.front().tooltip;
  return std::nullopt;
}

}  // namespace sightline::features
