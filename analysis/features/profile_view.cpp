// Number formatting, kernel names and NVTX range names for the profile features.
#include "analysis/features/profile_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace sightline::features {

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
  if (out.size() > max_length) {
    // Cut on a character, never inside one ("<…>" is three bytes; names carry UTF-8 too): a cut
    // through "…" once put U+FFFD in a hover.
    size_t cut = max_length - 1;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out = out.substr(0, cut) + "…";
  }
  return out;
}

std::string rangeNameFromProfile(const FileCosts& costs, const model::Profile& profile, const HintOptions& options,
                                 uint32_t line) {
  auto it = costs.lines.find(static_cast<int32_t>(line) + 1);
  if (it == costs.lines.end() || it->second.gpu_ns <= 0) return {};
  const attribution::LineCost& c = it->second;
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

RankSpread rankSpread(const std::vector<int64_t>& per_rank) {
  RankSpread out;
  if (per_rank.empty()) return out;
  out.slowest = static_cast<size_t>(std::max_element(per_rank.begin(), per_rank.end()) - per_rank.begin());
  out.fastest = static_cast<size_t>(std::min_element(per_rank.begin(), per_rank.end()) - per_rank.begin());
  std::vector<int64_t> v = per_rank;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  out.min_ns = static_cast<double>(v.front());
  out.max_ns = static_cast<double>(v.back());
  out.median_ns =
      n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + static_cast<double>(v[n / 2])) / 2;
  return out;
}

double perRankStep(const attribution::RankInfo& rank, double ns) {
  return rank.steady_steps > 0 ? ns / rank.steady_steps : ns;
}

std::vector<RankRow> rankRows(const std::vector<attribution::RankInfo>& ranks) {
  std::vector<RankRow> rows;
  for (const auto& r : ranks) {
    RankRow row;
    row.rank = &r;
    row.per_step = r.steady_steps > 0;
    if (row.per_step) {
      double n = r.steady_steps;
      row.gpu_ns = static_cast<double>(r.steady_gpu_ns) / n;
      row.comm_ns = static_cast<double>(r.steady_comm_ns) / n;
      row.comm_exposed_ns = static_cast<double>(r.steady_comm_exposed_ns) / n;
      row.busy_share = r.busy_share;
      row.paired = r.steady_paired_collectives > 0;
      row.comm_wait_ns = static_cast<double>(r.steady_comm_wait_ns) / n;
      row.comm_transfer_ns = static_cast<double>(r.steady_comm_transfer_ns) / n;
      if (row.paired) row.late_share = static_cast<double>(r.steady_late_collectives) / r.steady_paired_collectives;
    } else {
      row.gpu_ns = static_cast<double>(r.gpu_ns);
      row.comm_ns = static_cast<double>(r.comm_ns);
      row.comm_exposed_ns = static_cast<double>(r.comm_exposed_ns);
      row.busy_share = r.span_ns > 0 ? static_cast<double>(r.busy_ns) / static_cast<double>(r.span_ns) : 0;
      row.paired = r.paired_collectives > 0;
      row.comm_wait_ns = static_cast<double>(r.comm_wait_ns);
      row.comm_transfer_ns = static_cast<double>(r.comm_transfer_ns);
      if (row.paired) row.late_share = static_cast<double>(r.late_collectives) / r.paired_collectives;
    }
    rows.push_back(row);
  }
  return rows;
}

Inclusive inclusiveOver(const FileCosts& costs, int32_t first, int32_t last) {
  Inclusive out;
  if (costs.spans.empty()) {
    for (auto it = costs.lines.lower_bound(first); it != costs.lines.end() && it->first <= last; ++it) {
      out.gpu_ns += it->second.gpu_ns;
      out.forward_ns += it->second.forward_ns;
      out.backward_ns += it->second.backward_ns;
    }
    return out;
  }
  for (const auto& span : costs.spans) {
    auto pos = std::lower_bound(span.lines.begin(), span.lines.end(), first);
    if (pos == span.lines.end() || *pos > last) continue;
    out.gpu_ns += span.gpu_ns;
    out.forward_ns += span.forward_ns;
    out.backward_ns += span.backward_ns;
  }
  return out;
}

std::map<model::StringId, std::map<int32_t, Inclusive>> inclusiveByLine(const attribution::Attribution& a) {
  std::map<model::StringId, std::map<int32_t, Inclusive>> out;
  for (const auto& cc : a.context_costs)
    for (const auto& f : a.contexts[cc.context]) {
      auto& inc = out[f.file][f.line];
      inc.gpu_ns += cc.gpu_ns, inc.forward_ns += cc.forward_ns, inc.backward_ns += cc.backward_ns;
    }
  return out;
}

std::vector<join::PlacedLine> linesBeneath(const FileCosts& costs, int32_t line, size_t n, size_t& more) {
  std::map<std::pair<std::string, int32_t>, int64_t> by_line;
  for (const auto& span : costs.spans) {
    if (span.self_here && span.self.line == line) continue;
    if (!std::binary_search(span.lines.begin(), span.lines.end(), line)) continue;
    by_line[{span.self.path, span.self.line}] += span.gpu_ns;
  }
  std::vector<join::PlacedLine> out;
  out.reserve(by_line.size());
  for (const auto& [key, ns] : by_line) out.push_back({key.first, key.second, ns, 0});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
  more = out.size() > n ? out.size() - n : 0;
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace sightline::features
