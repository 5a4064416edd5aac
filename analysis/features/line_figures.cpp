#include "analysis/features/line_figures.h"

#include <algorithm>

namespace sightline::features {

bool showsInclusive(double self_ns, double inclusive_ns) {
  return inclusive_ns - self_ns >= std::max(5e3, 0.05 * inclusive_ns);
}

bool marksOneoff(int64_t oneoff_ns, int64_t oneoff_total_ns) {
  return oneoff_ns > 0 && oneoff_ns >= std::max<int64_t>(1'000'000, oneoff_total_ns / 20);
}

SlowestRank slowestRank(const attribution::LineCost& c, const std::vector<attribution::RankInfo>& ranks,
                        const Scale& s) {
  SlowestRank out;
  if (ranks.size() < 2 || c.rank_ns.size() != ranks.size() || c.gpu_ns == 0) return out;
  std::vector<int64_t> work, listed;
  for (size_t r = 0; r < ranks.size(); ++r) {
    auto scaled = [&](int64_t v) {
      double ns = static_cast<double>(v);
      return static_cast<int64_t>(s.per_step ? perRankStep(ranks[r], ns) : ns);
    };
    work.push_back(scaled(attribution::rankWorkNs(c, r)));
    listed.push_back(scaled(c.rank_ns[r]));
  }
  RankSpread by_work = rankSpread(work), spread = rankSpread(listed);
  out.ranked = true;
  out.rank = by_work.slowest;
  out.ratio = by_work.max_ns / std::max(1.0, by_work.median_ns);
  out.shown = by_work.max_ns >= 1.1 * by_work.median_ns && by_work.max_ns > 0;
  out.is_max = by_work.slowest == spread.slowest || listed[by_work.slowest] == listed[spread.slowest];
  out.min_ns = spread.min_ns, out.median_ns = spread.median_ns, out.max_ns = spread.max_ns;
  return out;
}

std::map<int32_t, LineFigures> fileLineFigures(const FileCosts& costs, const source::SourceFile& file,
                                               const source::SourceIndex& index, const Scale& s) {
  std::map<int32_t, LineFigures> out;
  double total = static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  auto at = [&](int32_t line) -> LineFigures& {
    auto [it, added] = out.try_emplace(line);
    if (added) it->second.line = line, it->second.scale = s;
    return it->second;
  };
  // Inclusive time: each span of work once on every line it ran beneath.
  std::map<int32_t, int64_t> beneath;
  for (const auto& span : costs.spans)
    for (int32_t line : span.lines) beneath[line] += span.gpu_ns;
  for (const auto& [line, c] : costs.lines) {
    if (c.gpu_ns == 0 && c.oneoff_inclusive_ns == 0) continue;
    LineFigures& f = at(line);
    f.self_ns = static_cast<double>(c.gpu_ns) / s.divisor;
    f.forward_ns = static_cast<double>(c.forward_ns) / s.divisor;
    f.backward_ns = static_cast<double>(c.backward_ns) / s.divisor;
    f.share = static_cast<double>(c.gpu_ns) / total;
    f.oneoff_ns = c.oneoff_inclusive_ns;
    f.oneoff_marked = marksOneoff(c.oneoff_inclusive_ns, costs.oneoff_gpu_ns);
    f.oneoff_beneath = 10 * c.oneoff_ns < 9 * c.oneoff_inclusive_ns;
    f.ranks = slowestRank(c, costs.ranks, s);
  }
  for (auto& [line, f] : out) {
    auto b = beneath.find(line);
    int64_t own = costs.lines.at(line).gpu_ns;
    // Without inclusive data (no spans), a line's own time.
    int64_t inclusive = costs.spans.empty() || b == beneath.end() ? own : b->second;
    f.inclusive_ns = static_cast<double>(inclusive) / s.divisor;
    f.inclusive_share = static_cast<double>(inclusive) / total;
  }
  for (const auto& [line, ns] : beneath) {
    if (out.count(line)) continue;
    LineFigures& f = at(line);
    f.inclusive_ns = static_cast<double>(ns) / s.divisor;
    f.inclusive_share = static_cast<double>(ns) / total;
  }
  for (auto& [line, f] : out) f.show_inclusive = showsInclusive(f.self_ns, f.inclusive_ns);
  // Roll-ups on def and loop header lines: the work beneath their bodies' lines.
  auto rollup = [&](uint32_t header0, uint32_t last0, const char* scope) {
    int64_t sum = inclusiveOver(costs, static_cast<int32_t>(header0) + 1, static_cast<int32_t>(last0) + 1).gpu_ns;
    if (sum <= 0) return;
    LineFigures& f = at(static_cast<int32_t>(header0) + 1);
    f.rollup_ns = static_cast<double>(sum) / s.divisor;
    f.rollup_share = static_cast<double>(sum) / total;
    f.rollup_scope = scope;
  };
  for (const auto& fn : index.functions) rollup(fn.def_line, fn.end_line, "function");
  for (const auto& l : index.loops)
    rollup(file.lines().pointAt(l.range.begin).line, file.lines().pointAt(l.range.end).line, "loop");
  return out;
}

}  // namespace sightline::features
