// Inlay hints from line costs.
#include "analysis/features/inlay_hints.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/features/compare_values.h"
#include "analysis/features/line_figures.h"

namespace sightline::features {
namespace {

void addCompareDeltas(std::map<uint32_t, LineHint>& hints, const FileCosts& costs, const HintOptions& options,
                      uint32_t first, uint32_t last) {
  // Change from the compare profile, on lines with a hint and on lines whose cost is gone.
  bool per_step = comparePerStep(costs, options);
  double divisor = per_step ? static_cast<double>(costs.steps) : 1;
  double compare_total = static_cast<double>(std::max<int64_t>(1, costs.compare->total_gpu_ns));
  for (auto& [line0, h] : hints) {
    int32_t line = static_cast<int32_t>(line0) + 1;
    auto it = costs.lines.find(line);
    double now = it == costs.lines.end() ? 0 : static_cast<double>(it->second.gpu_ns) / divisor;
    double before = compareValue(costs, line, per_step);
    if (std::abs(now - before) >= 5e3) h.delta_ns = now - before;
    h.delta_per_step = per_step;
  }
  for (auto it = costs.compare->lines.lower_bound(static_cast<int32_t>(first) + 1);
       it != costs.compare->lines.end() && it->first <= static_cast<int32_t>(last) + 1; ++it) {
    auto line0 = static_cast<uint32_t>(it->first - 1);
    if (hints.count(line0) || costs.lines.count(it->first)) continue;
    double share = static_cast<double>(it->second.gpu_ns) / compare_total;
    if (share < options.min_share) continue;
    LineHint h;
    h.line = line0;
    h.kind = HintKind::Gone;
    h.scale = {per_step ? static_cast<double>(costs.compare->steps) : 1, per_step};
    h.gpu_ns = compareValue(costs, it->first, per_step);
    h.share = share;
    h.delta_ns = -h.gpu_ns;
    h.delta_per_step = per_step;
    h.compare_name = costs.compare_name;
    hints[line0] = std::move(h);
  }
}

// The regression gate's changes on the lines in range: on each line's hint, and a hint of its
// own for a line that regressed below the hints' share (a new `.item()` costs no GPU time).
void addRegressions(std::map<uint32_t, LineHint>& hints, const FileCosts& costs, const model::Profile& profile,
                    const Scale& s, uint32_t first, uint32_t last) {
  for (auto it = costs.regressions.lower_bound(static_cast<int32_t>(first) + 1);
       it != costs.regressions.end() && it->first <= static_cast<int32_t>(last) + 1; ++it) {
    auto line0 = static_cast<uint32_t>(it->first - 1);
    auto hint = hints.find(line0);
    if (hint == hints.end()) {
      if (!it->second.regressed || !costs.lines.count(it->first)) continue;
      LineBreakdown b = breakdownAt(costs, profile, s, it->first);
      LineHint h;
      h.line = line0;
      h.scale = s;
      h.gpu_ns = b.gpu_ns, h.share = b.share;
      h.forward_ns = b.forward_ns, h.backward_ns = b.backward_ns;
      h.breakdown = std::move(b);
      h.stale = costs.stale_lines.count(it->first) > 0;
      hint = hints.emplace(line0, std::move(h)).first;
    }
    if (hint->second.kind == HintKind::Rollup) continue;
    // Its change replaces the compare profile's (one figure per line); under 5 µs none is shown.
    const auto& r = it->second;
    hint->second.regression = r;
    hint->second.delta_ns.reset();
    if (std::abs(r.delta_ns) >= 5e3) hint->second.delta_ns = r.delta_ns;
    hint->second.delta_per_step = true;
  }
}

}  // namespace

std::vector<LineHint> computeInlayHints(const source::SourceFile& file, const source::SourceIndex& index,
                                        const FileCosts& costs, const model::Profile& profile,
                                        const HintOptions& options, uint32_t first, uint32_t last) {
  Scale s = scaleFor(costs, options);
  double total = static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  std::map<uint32_t, LineHint> hints;
  auto lo = static_cast<int32_t>(first) + 1, hi = static_cast<int32_t>(last) + 1;
  std::set<int32_t> candidates;  // lines with time of their own or beneath them
  bool time = options.figures != HintFigures::Memory, memory = options.figures != HintFigures::Time && costs.memory;
  // Bytes at the peak; without tensor events, the pool's growth (nsys --cuda-memory-usage).
  bool pool = memory && !costs.memory->allocated_known;
  auto held = [&](const attribution::LineCost& c) { return pool ? c.memory_reserved_bytes : c.memory_peak_bytes; };
  double peak = !memory ? 1
                : pool  ? static_cast<double>(std::max<int64_t>(1, costs.memory->pool_growth_bytes))
                        : static_cast<double>(std::max<int64_t>(1, costs.memory->peak_allocated_bytes));
  for (auto it = costs.lines.lower_bound(lo); it != costs.lines.end() && it->first <= hi; ++it)
    if ((time && it->second.gpu_ns > 0) || (memory && held(it->second) > 0)) candidates.insert(it->first);
  for (const auto& span : costs.spans)
    for (auto l = std::lower_bound(span.lines.begin(), span.lines.end(), lo); l != span.lines.end() && *l <= hi; ++l)
      if (time) candidates.insert(*l);
  for (int32_t line : candidates) {
    LineBreakdown b = breakdownAt(costs, profile, s, line);
    double share = std::max(b.share, b.inclusive_share);
    auto own = costs.lines.find(line);
    int64_t bytes = memory && own != costs.lines.end() ? held(own->second) : 0;
    bool show_time = time && share >= options.min_share && hasCost(b);
    bool show_memory = bytes > 0 && static_cast<double>(bytes) / peak >= options.min_share;
    if (!show_time && !show_memory) continue;
    LineHint h;
    h.line = static_cast<uint32_t>(line - 1);
    h.show_time = show_time;
    if (show_memory)
      h.memory_bytes = bytes, h.memory_share = static_cast<double>(bytes) / peak, h.memory_reserved = pool;
    h.scale = s;
    h.gpu_ns = b.gpu_ns;
    h.share = b.share;
    h.show_split = options.show_backward && b.backward_ns > 0;
    h.forward_ns = b.forward_ns;
    h.backward_ns = b.backward_ns;
    h.show_inclusive = showsInclusive(b.gpu_ns, b.inclusive_ns);
    h.inclusive_ns = b.inclusive_ns;
    h.inclusive_share = b.inclusive_share;
    h.breakdown = std::move(b);
    h.stale = costs.stale_lines.count(line) > 0;
    hints[h.line] = std::move(h);
  }
  if (costs.compare && time) addCompareDeltas(hints, costs, options, first, last);
  if (!costs.regressions.empty() && time) addRegressions(hints, costs, profile, s, first, last);
  auto rollup = [&](uint32_t header, uint32_t body_first, uint32_t body_last, const char* what) {
    if (!time || header < first || header > last || hints.count(header)) return;
    int64_t sum =
        inclusiveOver(costs, static_cast<int32_t>(body_first) + 1, static_cast<int32_t>(body_last) + 1).gpu_ns;
    double share = static_cast<double>(sum) / total;
    if (sum <= 0 || share < options.min_share) return;
    LineHint h;
    h.line = header;
    h.kind = HintKind::Rollup;
    h.scale = s;
    h.gpu_ns = static_cast<double>(sum) / s.divisor;
    h.share = share;
    h.scope = what;
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

}  // namespace sightline::features
