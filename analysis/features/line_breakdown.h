// What one line's GPU time is made of, in numbers: the figures a hover card or an inlay hint's
// tooltip shows (time, share, forward/backward, methods, top GPU work, autograd ops, copies,
// memsets, host syncs, launches). Text is made at the edge (server/render/profile_text.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/features/kernel_kinds.h"
#include "analysis/features/profile_view.h"

namespace sightline::features {

// Per step when the profile knows its steps and per-step figures are asked for, else totals.
struct Scale {
  double divisor = 1;     // steps, or 1
  bool per_step = false;  // figures are per step
};
Scale scaleFor(const FileCosts& costs, const HintOptions& options);

struct NamedWork {
  std::string name;  // as the profile names it (a kernel, copy or memset; a sync API)
  uint32_t count = 0;
  int64_t ns = 0;  // total over the profile (not scaled)
};

struct LineBreakdown {
  Scale scale;
  double gpu_ns = 0;                                    // scaled
  int64_t total_ns = 0;                                 // the line's GPU time over the whole profile
  double share = 0;                                     // of all GPU time in the profile
  double forward_ns = 0;                                // scaled
  double backward_ns = 0;                               // scaled; 0: no backward work
  std::vector<std::pair<std::string, double>> methods;  // attribution method -> share of the line
  std::vector<NamedWork> top_work;                      // the 5 costliest, by time
  std::vector<WorkKind> kinds;                          // the work by kind (two kinds or more), most first
  size_t more_work = 0;                                 // distinct names beyond those
  std::vector<std::string> autograd_ops;                // up to 6, most seen first
  double memcpy_ns = 0;                                 // scaled
  uint64_t memcpy_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> copy_bytes;  // "HtoD", "DtoH", ... -> bytes
  double pageable_share = 0;                                 // of memcpy_bytes (0: none pageable)
  uint32_t memsets = 0;
  double memset_ns = 0;  // scaled
  uint32_t syncs = 0;
  double sync_ns = 0;                // scaled
  std::vector<NamedWork> sync_apis;  // name and count (ns unused), by name
  double launches = 0;               // scaled
  // Several ranks: the line's time on each (scaled), and who is slowest.
  struct RankTime {
    std::string label;
    double ns = 0;
    double wait_ns = 0;  // of ns, waiting in collectives for another rank
  };
  std::vector<RankTime> ranks;                                  // in rank order; empty with one rank
  double rank_min_ns = 0, rank_median_ns = 0, rank_max_ns = 0;  // of `ranks`' figures
  bool slowest_is_max = true;  // `slowest` (by its own work) has the largest figure too
  std::string slowest;         // label of the slowest rank
  double comm_ns = 0;          // scaled: NCCL kernels launched from the line
  double comm_exposed_ns = 0;  // scaled: of which nothing else ran on the GPU
  uint32_t lost_launches = 0;  // launches whose GPU records are missing
  // Inclusive time (profile_view.h): everything launched beneath the line, scaled.
  double inclusive_ns = 0, inclusive_forward_ns = 0, inclusive_backward_ns = 0;
  double inclusive_share = 0;
  std::vector<join::PlacedLine> beneath;  // the costliest lines beneath it (ns: total, not scaled)
  size_t more_beneath = 0;
  int64_t oneoff_ns = 0;            // GPU time outside the steady steps (total; never per step)
  int64_t oneoff_inclusive_ns = 0;  // of that, beneath the line too (an evaluation a call line runs)
  // torch.compile fused other lines' work into kernels charged to this line: those lines.
  std::vector<join::PlacedLine> fused_with;
};

LineBreakdown breakdownOf(const attribution::LineCost& cost, const FileCosts& costs, const model::Profile& profile,
                          const Scale& scale);
// The breakdown of 1-based `line`: its own cost (when it has one) and its inclusive time.
LineBreakdown breakdownAt(const FileCosts& costs, const model::Profile& profile, const Scale& scale, int32_t line);
// Whether the line has anything to show: own GPU time, or work beneath it.
bool hasCost(const LineBreakdown& b);

}  // namespace sightline::features
