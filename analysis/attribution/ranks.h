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

// Each rank's name among `all`: "rank 12 (node3, GPU 4)" where its rank is known; else its GPU
// ("GPU 4", with the host where the ranks span several), when each process has a GPU of its own;
// else its pid.
std::vector<std::string> rankLabels(const std::vector<RankInfo>& all);

struct RankTable {
  std::vector<RankInfo> ranks;          // ordered by rank, then pid
  std::vector<uint16_t> activity_rank;  // per activity: index into ranks
  std::vector<int64_t> exposed_ns;      // per activity: exposed communication time (-1: not comm)
  // Per activity, after pairCollectives: of a collective's kernel, the time it waited for the
  // last rank to arrive (-1: not a collective, or found on one rank only), and, on the rank
  // that arrived last, the other ranks' waits for it (-1 on the others).
  std::vector<int64_t> wait_ns;
  std::vector<int64_t> caused_ns;
};

// Ranks and exposure for every activity; gpu/busy/comm totals filled, steps left to the caller.
RankTable buildRanks(const model::Profile& profile);

// Pairs each collective across ranks: the same kernel name, the same step (step_of: per
// activity, its step's ordinal in its process, -1 outside the steps) and the same order within
// it. All ranks leave a collective together, so the rank whose kernel ran shortest arrived
// last: that shortest time moved data (transfer) and each other rank waited the difference.
// Needs no common clock (one report per rank works). Fills wait_ns, caused_ns and each rank's
// comm_wait_ns / comm_transfer_ns / late_collectives over the whole profile.
void pairCollectives(const model::Profile& profile, const std::vector<int32_t>& step_of, RankTable& table);

}  // namespace sightline::attribution
