// Matching the costly lines of two profiles of different versions of one script.
#include "analysis/join/compare_alignment.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

namespace sightline::join {
namespace {

struct ProfiledLine {
  int32_t line = 0;
  std::string function;        // "" when the profile does not say
  std::set<std::string> work;  // kernel, copy and memset names, autograd ops, sync APIs
};

std::vector<ProfiledLine> profiledLines(const std::map<int32_t, attribution::LineCost>& lines,
                                        const model::Profile& profile, const std::vector<FunctionAnchor>& anchors) {
  std::map<int32_t, std::string> function_at;
  for (const auto& a : anchors) function_at.emplace(a.line, profile.strings[a.function]);
  std::vector<ProfiledLine> out;
  for (const auto& [line, cost] : lines) {
    ProfiledLine p;
    p.line = line;
    if (auto it = function_at.find(line); it != function_at.end()) p.function = it->second;
    for (const auto& [name, stat] : cost.by_name) p.work.insert("k:" + profile.strings[name]);
    for (const auto& [op, n] : cost.autograd_ops) p.work.insert("o:" + profile.strings[op]);
    for (const auto& [api, n] : cost.sync_apis) p.work.insert("s:" + profile.strings[api]);
    if (!p.work.empty()) out.push_back(std::move(p));
  }
  return out;
}

// Jaccard similarity of the lines' work; 0 across functions.
double similarity(const ProfiledLine& a, const ProfiledLine& b) {
  if (!a.function.empty() && !b.function.empty() && a.function != b.function) return 0;
  size_t common = 0;
  for (const auto& w : a.work) common += b.work.count(w);
  size_t all = a.work.size() + b.work.size() - common;
  return all == 0 ? 0 : static_cast<double>(common) / static_cast<double>(all);
}

constexpr double kMinSimilarity = 0.3;
constexpr size_t kMaxCells = 4'000'000;  // lines x lines: beyond this, no alignment

}  // namespace

LineAlignment alignProfiledLines(const std::map<int32_t, attribution::LineCost>& before,
                                 const model::Profile& before_profile,
                                 const std::vector<FunctionAnchor>& before_anchors,
                                 const std::map<int32_t, attribution::LineCost>& after,
                                 const model::Profile& after_profile,
                                 const std::vector<FunctionAnchor>& after_anchors) {
  auto b = profiledLines(before, before_profile, before_anchors);
  auto a = profiledLines(after, after_profile, after_anchors);
  LineAlignment out;
  out.unmatched = b.size();
  size_t n = b.size(), m = a.size();
  if (n == 0 || m == 0 || n * m > kMaxCells) return out;
  // Weighted longest common subsequence; a tiny cost per line of displacement prefers the
  // nearer of equally similar lines.
  std::vector<double> score((n + 1) * (m + 1), 0.0);
  auto at = [&](size_t i, size_t j) -> double& { return score[i * (m + 1) + j]; };
  auto gain = [&](size_t i, size_t j) {
    double s = similarity(b[i], a[j]);
    if (s < kMinSimilarity) return 0.0;
    return s - 1e-6 * std::abs(b[i].line - a[j].line);
  };
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      double g = gain(i - 1, j - 1);
      at(i, j) = std::max({at(i - 1, j), at(i, j - 1), g > 0 ? at(i - 1, j - 1) + g : 0.0});
    }
  for (size_t i = n, j = m; i > 0 && j > 0;) {
    double g = gain(i - 1, j - 1);
    if (g > 0 && at(i, j) == at(i - 1, j - 1) + g) {
      out.moved[b[i - 1].line] = a[j - 1].line;
      --i, --j;
    } else if (at(i, j) == at(i - 1, j)) {
      --i;
    } else {
      --j;
    }
  }
  out.unmatched = n - out.moved.size();
  return out;
}

std::string describe(const LineAlignment& alignment) {
  return std::to_string(alignment.moved.size()) + " of " +
         std::to_string(alignment.moved.size() + alignment.unmatched) + " profiled lines matched by the work they ran";
}

FileCosts moveLines(const FileCosts& costs, const LineAlignment& alignment) {
  FileCosts out;
  out.total_gpu_ns = costs.total_gpu_ns;
  out.steps = costs.steps;
  out.ranks = costs.ranks;
  for (const auto& [line, cost] : costs.lines) {
    auto it = alignment.moved.find(line);
    if (it != alignment.moved.end()) attribution::addCost(out.lines[it->second], cost);
  }
  return out;
}

}  // namespace sightline::join
