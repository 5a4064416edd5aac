// User NVTX ranges opened by source sites.
#include "analysis/attribution/nvtx_site_ranges.h"

#include <algorithm>
#include <climits>

namespace sightline::attribution {

NvtxSiteRanges::NvtxSiteRanges(const model::Profile& profile, const std::vector<NvtxSite>& sites)
    : profile_(profile), sites_(sites) {
  for (size_t i = 0; i < sites.size(); ++i) sites_by_text_.emplace(sites[i].text, i);
  if (sites_by_text_.empty()) return;
  for (uint32_t i = 0; i < profile_.ranges.size(); ++i) {
    const auto& r = profile_.ranges[i];
    if (r.op == 0 && sites_by_text_.count(profile_.strings[r.text])) by_process_[r.pid].ranges.push_back(i);
  }
  for (auto& [pid, entry] : by_process_) {
    std::sort(entry.ranges.begin(), entry.ranges.end(),
              [&](uint32_t a, uint32_t b) { return profile_.ranges[a].start_ns < profile_.ranges[b].start_ns; });
    int64_t running = INT64_MIN;
    for (uint32_t idx : entry.ranges) entry.max_end.push_back(running = std::max(running, profile_.ranges[idx].end_ns));
  }
}

int NvtxSiteRanges::rangeAround(uint32_t pid, uint32_t tid, int64_t t) const {
  auto it = by_process_.find(pid);
  if (it == by_process_.end()) return -1;
  const auto& [list, max_end] = it->second;
  auto pos = std::upper_bound(list.begin(), list.end(), t,
                              [&](int64_t time, uint32_t idx) { return time < profile_.ranges[idx].start_ns; });
  for (size_t i = static_cast<size_t>(pos - list.begin()); i-- > 0 && max_end[i] >= t;) {
    const auto& r = profile_.ranges[list[i]];
    if (r.end_ns >= t && (tid == ~0u || r.tid == tid)) return static_cast<int>(list[i]);
  }
  return -1;
}

const NvtxSite* NvtxSiteRanges::siteAround(uint32_t pid, uint32_t tid, int64_t t) const {
  if (sites_by_text_.empty()) return nullptr;
  int range = rangeAround(pid, tid, t);
  if (range < 0) range = rangeAround(pid, ~0u, t);
  if (range < 0) return nullptr;
  return &sites_[sites_by_text_.at(profile_.strings[profile_.ranges[static_cast<size_t>(range)].text])];
}

}  // namespace sightline::attribution
