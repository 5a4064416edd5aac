// Hover figures for a profiled line.
#include "analysis/features/hover.h"

#include <algorithm>

#include "analysis/features/compare_values.h"

namespace sightline::features {
namespace {

void addRegression(const FileCosts& costs, int32_t line1, HoverInfo& info) {
  auto it = costs.regressions.find(line1);
  if (it == costs.regressions.end()) return;
  info.regression = it->second;
  info.regression_basis = costs.regression;
}

}  // namespace

std::optional<HoverInfo> computeHover(const source::SourceFile& file, const source::SourceIndex& index,
                                      const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                      uint32_t line) {
  HoverInfo info;
  info.line = line;
  auto line1 = static_cast<int32_t>(line) + 1;
  LineBreakdown b = breakdownAt(costs, profile, scaleFor(costs, options), line1);
  auto it = costs.lines.find(line1);
  for (const auto& f : costs.compiled_functions) {
    bool here = f.function.line == line1 ||
                std::any_of(f.breaks.begin(), f.breaks.end(), [&](const auto& br) { return br.line == line1; });
    if (here) info.compiled = f;
  }
  if (costs.memory && options.figures != HintFigures::Time) {
    info.oom_here = costs.oom_line == line1;
    if (it != costs.lines.end()) {
      info.memory_bytes = it->second.memory_peak_bytes;
      info.memory_by_phase = it->second.memory_peak_by_phase;
      for (const auto& [op, bytes] : it->second.memory_peak_ops)
        info.memory_ops.emplace_back(profile.strings[op], bytes);
      info.memory_step_bytes = it->second.memory_step_bytes;
      info.memory_step_allocations = it->second.memory_step_allocations;
    }
    if (info.memory_bytes > 0 || info.memory_step_bytes > 0 || info.oom_here) info.memory = costs.memory;
    for (const auto& t : costs.memory->top)
      if (t.bytes > info.memory_bytes) ++info.memory_rank;
    info.memory_rank = info.memory_bytes > 0 ? info.memory_rank + 1 : 0;
  }
  if (hasCost(b)) {
    info.cost = std::move(b);
    if (costs.compare && it != costs.lines.end()) {
      bool per_step = comparePerStep(costs, options);
      CompareChange change;
      change.name = costs.compare_name;
      change.per_step = per_step;
      change.now_ns = static_cast<double>(it->second.gpu_ns) / (per_step ? costs.steps : 1);
      change.before_ns = compareValue(costs, it->first, per_step);
      change.note = costs.compare_note;
      info.compare = change;
    }
    info.stale = costs.stale_lines.count(line1) > 0;
    addRegression(costs, line1, info);
    return info;
  }
  auto hints = computeInlayHints(file, index, costs, profile, HintOptions{0, options.per_step, false}, line, line);
  addRegression(costs, line1, info);
  if (hints.empty() && !info.compiled && !info.memory && !info.regression) return std::nullopt;
  if (!hints.empty() && hints.front().show_time) info.standing = hints.front();
  return info;
}

}  // namespace sightline::features
