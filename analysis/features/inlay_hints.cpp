// Inlay hints from line costs.
#include "analysis/features/inlay_hints.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/features/compare_values.h"

namespace sightline::features {
namespace {

// Sum of the costs on 1-based lines [first, last].
int64_t sumLines(const FileCosts& costs, int32_t first, int32_t last) {
  int64_t sum = 0;
  for (auto it = costs.lines.lower_bound(first); it != costs.lines.end() && it->first <= last; ++it)
    sum += it->second.gpu_ns;
  return sum;
}

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

}  // namespace

std::vector<LineHint> computeInlayHints(const source::SourceFile& file, const source::SourceIndex& index,
                                        const FileCosts& costs, const model::Profile& profile,
                                        const HintOptions& options, uint32_t first, uint32_t last) {
  Scale s = scaleFor(costs, options);
  double total = static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  std::map<uint32_t, LineHint> hints;
  for (auto it = costs.lines.lower_bound(static_cast<int32_t>(first) + 1);
       it != costs.lines.end() && it->first <= static_cast<int32_t>(last) + 1; ++it) {
    const attribution::LineCost& c = it->second;
    double share = static_cast<double>(c.gpu_ns) / total;
    if (share < options.min_share || c.gpu_ns <= 0) continue;
    LineHint h;
    h.line = static_cast<uint32_t>(it->first - 1);
    h.scale = s;
    h.gpu_ns = static_cast<double>(c.gpu_ns) / s.divisor;
    h.share = share;
    h.show_split = options.show_backward && c.backward_ns > 0;
    h.forward_ns = static_cast<double>(c.forward_ns) / s.divisor;
    h.backward_ns = static_cast<double>(c.backward_ns) / s.divisor;
    h.breakdown = breakdownOf(c, costs, profile, s);
    hints[h.line] = std::move(h);
  }
  if (costs.compare) addCompareDeltas(hints, costs, options, first, last);
  auto rollup = [&](uint32_t header, uint32_t body_first, uint32_t body_last, const char* what) {
    if (header < first || header > last || hints.count(header)) return;
    int64_t sum = sumLines(costs, static_cast<int32_t>(body_first) + 1, static_cast<int32_t>(body_last) + 1);
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
