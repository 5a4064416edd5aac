// Processes with GPU work as ranks, and communication kernels (internal to
// analysis/attribution). A report of `torchrun` holds several processes; each one with GPU
// activity is a rank, named from what the profile records (the distributed rank), else by its
// GPU, else by its pid. NCCL kernels are communication: the part of each that runs while no
// other kernel runs on its GPU is exposed, the rest overlapped with compute.
#pragma once

#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

bool isCommunicationKernel(std::string_view name);

struct RankTable {
  std::vector<RankInfo> ranks;          // ordered by rank, then pid
  std::vector<uint16_t> activity_rank;  // per activity: index into ranks
  std::vector<int64_t> exposed_ns;      // per activity: exposed communication time (-1: not comm)
};

// Ranks and exposure for every activity; gpu/busy/comm totals filled, steps left to the caller.
RankTable buildRanks(const model::Profile& profile);

}  // namespace sightline::attribution
