// The nvtx method (internal to analysis/attribution): user NVTX ranges whose text a source
// site opens (nvtx_sites.h), per process, so that a launch inside one is charged to the line
// that opened it when nothing finer is known.
#pragma once

#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

class NvtxSiteRanges {
 public:
  NvtxSiteRanges(const model::Profile& profile, const std::vector<NvtxSite>& sites);
  bool empty() const { return sites_by_text_.empty(); }
  // The site of the innermost such range around t: on thread `tid`, else on any thread of the
  // process (`loss.backward()` pushes its range on the main thread while the autograd engine's
  // thread launches the kernels); nullptr when none.
  const NvtxSite* siteAround(uint32_t pid, uint32_t tid, int64_t t) const;

 private:
  // The latest-starting site range of the process containing t (on `tid`, or any when ~0u), or -1.
  int rangeAround(uint32_t pid, uint32_t tid, int64_t t) const;

  const model::Profile& profile_;
  const std::vector<NvtxSite>& sites_;
  std::unordered_map<std::string_view, size_t> sites_by_text_;  // first site per range text
  struct ProcessRanges {
    std::vector<uint32_t> ranges;  // by start
    std::vector<int64_t> max_end;  // running maximum of their ends: a backwards scan stops early
  };
  std::unordered_map<uint32_t, ProcessRanges> by_process_;
};

}  // namespace sightline::attribution
