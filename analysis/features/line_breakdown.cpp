// A line's cost as figures for hovers and tooltips.
#include "analysis/features/line_breakdown.h"

#include "analysis/features/line_figures.h"

#include <algorithm>

namespace sightline::features {

Scale scaleFor(const FileCosts& costs, const HintOptions& options) {
  if (options.per_step && costs.steps > 0) return {static_cast<double>(costs.steps), true};
  return {};
}

LineBreakdown breakdownOf(const attribution::LineCost& c, const FileCosts& costs, const model::Profile& profile,
                          const Scale& s) {
  LineBreakdown b;
  b.scale = s;
  b.gpu_ns = static_cast<double>(c.gpu_ns) / s.divisor;
  b.total_ns = c.gpu_ns;
  b.share = static_cast<double>(c.gpu_ns) / static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  b.forward_ns = static_cast<double>(c.forward_ns) / s.divisor;
  b.backward_ns = static_cast<double>(c.backward_ns) / s.divisor;
  for (const auto& [file, line] : c.fused_with) b.fused_with.push_back({profile.strings[file], line});
  for (size_t m = 0; m < attribution::kMethodCount; ++m)
    if (c.by_method[m] != 0)
      b.methods.emplace_back(attribution::methodName(static_cast<attribution::Method>(m)),
                             static_cast<double>(c.by_method[m]) / static_cast<double>(std::max<int64_t>(1, c.gpu_ns)));
  std::vector<std::pair<int64_t, model::StringId>> top;
  for (const auto& [name, stat] : c.by_name) top.emplace_back(stat.ns, name);
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 5; ++i) {
    const auto& stat = c.by_name.at(top[i].second);
    b.top_work.push_back({profile.strings[top[i].second], stat.count, stat.ns});
  }
  b.more_work = top.size() > 5 ? top.size() - 5 : 0;
  if (auto kinds = workByKind(c, profile.strings); kinds.size() >= 2) b.kinds = std::move(kinds);
  std::vector<std::pair<uint32_t, model::StringId>> ops;
  for (const auto& [op, n] : c.autograd_ops) ops.emplace_back(n, op);
  std::sort(ops.rbegin(), ops.rend());
  for (size_t i = 0; i < ops.size() && i < 6; ++i) b.autograd_ops.push_back(profile.strings[ops[i].second]);
  if (auto spread = slowestRank(c, costs.ranks, s); spread.ranked) {
    // Each rank per step of its own, as the rank table shows them; min, median and max of the
    // figures listed, the slowest by its own work (line_figures.h: one rule for every surface).
    for (size_t r = 0; r < c.rank_ns.size(); ++r) {
      auto scaled = [&](int64_t v) {
        double ns = static_cast<double>(v);
        return s.per_step ? perRankStep(costs.ranks[r], ns) : ns;
      };
      b.ranks.push_back(
          {costs.ranks[r].label, scaled(c.rank_ns[r]), r < c.rank_wait_ns.size() ? scaled(c.rank_wait_ns[r]) : 0.0});
    }
    b.slowest = costs.ranks[spread.rank].label;
    b.slowest_is_max = spread.is_max;
    b.rank_min_ns = spread.min_ns;
    b.rank_median_ns = spread.median_ns;
    b.rank_max_ns = spread.max_ns;
  }
  b.comm_ns = static_cast<double>(c.comm_ns) / s.divisor;
  b.comm_exposed_ns = static_cast<double>(c.comm_exposed_ns) / s.divisor;
  b.lost_launches = c.lost_launches;
  b.memcpy_ns = static_cast<double>(c.memcpy_ns) / s.divisor;
  b.memcpy_bytes = c.memcpy_bytes;
  static const char* const kKinds[] = {"other", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
  for (size_t k = 0; k < c.memcpy_bytes_by_kind.size(); ++k)
    if (c.memcpy_bytes_by_kind[k] > 0) b.copy_bytes.emplace_back(kKinds[k], c.memcpy_bytes_by_kind[k]);
  if (c.pageable_bytes > 0 && c.memcpy_bytes > 0)
    b.pageable_share = static_cast<double>(c.pageable_bytes) / static_cast<double>(c.memcpy_bytes);
  b.memsets = c.memsets;
  b.memset_ns = static_cast<double>(c.memset_ns) / s.divisor;
  b.syncs = c.syncs;
  b.sync_ns = static_cast<double>(c.sync_ns) / s.divisor;
  for (const auto& [api, n] : c.sync_apis) b.sync_apis.push_back({profile.strings[api], n, 0});
  b.launches = static_cast<double>(c.launches) / s.divisor;
  return b;
}

LineBreakdown breakdownAt(const FileCosts& costs, const model::Profile& profile, const Scale& s, int32_t line) {
  static const attribution::LineCost kNone;
  auto it = costs.lines.find(line);
  LineBreakdown b = breakdownOf(it == costs.lines.end() ? kNone : it->second, costs, profile, s);
  Inclusive inc = inclusiveOver(costs, line, line);
  inc.gpu_ns = std::max(inc.gpu_ns, b.total_ns);  // an edited line may have lost its spans
  b.inclusive_ns = static_cast<double>(inc.gpu_ns) / s.divisor;
  b.inclusive_forward_ns = static_cast<double>(inc.forward_ns) / s.divisor;
  b.inclusive_backward_ns = static_cast<double>(inc.backward_ns) / s.divisor;
  b.inclusive_share = static_cast<double>(inc.gpu_ns) / static_cast<double>(std::max<int64_t>(1, costs.total_gpu_ns));
  b.beneath = linesBeneath(costs, line, 5, b.more_beneath);
  if (it != costs.lines.end())
    b.oneoff_ns = it->second.oneoff_ns, b.oneoff_inclusive_ns = it->second.oneoff_inclusive_ns;
  return b;
}

bool hasCost(const LineBreakdown& b) { return b.total_ns > 0 || b.inclusive_ns > 0; }

}  // namespace sightline::features
