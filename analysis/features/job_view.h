// The job: every rank's summary (join/rank_summary.h) put together. Collectives paired across
// ranks (waiting for the last rank vs moving data, who arrived last and in which steps), each
// line's spread across ranks, the ranks × steps picture, FSDP's communication per module, and
// the job's verdict. The same from summaries made on many nodes and merged (`report --merge`)
// as from the reports read in one process: both build it from the summaries alone.
#pragma once

#include <string>
#include <vector>

#include "analysis/join/rank_summary.h"

namespace sightline::features {

struct JobRank {
  size_t summary = 0;  // index into the summaries
  std::string label;   // "rank 12 (node3, GPU 4)"
  int steady_steps = 0;
  int64_t median_step_ns = 0;  // median steady step wall
  int64_t steady_gpu_ns = 0;   // GPU time launched in steady steps
  int64_t steady_busy_ns = 0;
  int64_t steady_wall_ns = 0;
  int64_t comm_ns = 0, comm_exposed_ns = 0;        // steady steps
  int64_t comm_wait_ns = 0, comm_transfer_ns = 0;  // steady, collectives paired across ranks
  int64_t caused_wait_ns = 0;                      // others' waits for it, steady
  uint32_t paired = 0, late = 0;                   // steady collectives paired; of them, last in
};

// A line's GPU time per steady step across ranks (ranks without it count 0).
struct LineSpread {
  std::string path;
  int32_t line = 0;
  int64_t median_ns = 0, p95_ns = 0, max_ns = 0;
  size_t max_rank = 0;  // index into JobView::ranks
  int64_t comm_ns = 0;  // median communication on it per step
};

// Communication FSDP issued for one module (or DDP's buckets: module ""), one direction.
struct ModuleComm {
  std::string module;  // "layers.0"; "" none named
  std::string kind;    // "all-gather", "reduce-scatter", "all-reduce", ...
  join::CollectivePass pass = join::CollectivePass::Unknown;
  uint32_t count = 0;  // over every rank's steady steps
  // Per rank per steady step (mean over ranks): its time, the part no compute overlapped, and of
  // that the part spent waiting for the last rank.
  int64_t ns = 0, exposed_ns = 0, wait_ns = 0;
};

// A change the measured exposure calls for: FSDP's forward or backward prefetch for a module
// whose all-gather moves data while nothing computes, reduce-scatters in a smaller dtype, DDP's
// buckets. Only where exposed time that is not waiting for other ranks was measured.
struct CommAdvice {
  size_t module = 0;              // index into JobView::modules
  std::string change;             // "forward-prefetch", "backward-prefetch", "reduce-dtype", "ddp-buckets"
  int64_t moving_exposed_ns = 0;  // per rank per step
};

// A rank that held up steps (the straggler, or another where the late rank changes between
// steps): the steps, and the lines with GPU work on it in those steps that no other rank runs
// (rank 0's logging `.item()`), costliest first, at most kMaxOnlyLines.
struct LateRank {
  size_t rank = 0;  // index into JobView::ranks
  std::vector<int32_t> steps;
  struct Line {
    std::string path;
    int32_t line = 0;
    int64_t ns = 0;  // its GPU time per held-up step on this rank
  };
  std::vector<Line> only_lines;
};
inline constexpr size_t kMaxOnlyLines = 3;

enum class JobBound : uint8_t { Unknown, WaitingRanks, Communication, Gpu, Host };
const char* jobBoundName(JobBound b);

struct JobView {
  std::vector<JobRank> ranks;  // by rank, then host, then pid
  std::vector<std::string> hosts;
  size_t duplicate_ranks = 0;  // ranks whose (rank, host, GPU) another summary also has
  int max_steps = 0;           // the most steps of one rank (in the job's step numbering)
  int max_steady_steps = 0;    // the most steady steps of one rank
  int min_steady_steps = 0;    // the fewest (a capture's window may cut one rank's last step)
  int world_size = 0;          // as the ranks record it (0: unknown)
  bool complete = false;       // two ranks or more, and every rank of world_size here
  // ranks × steps: each step's wall in ns (-1: the rank has no such step), and kinds. Steps are
  // the job's: ranks whose reports began a step apart are lined up (alignSteps).
  std::vector<std::vector<int64_t>> step_wall_ns;
  std::vector<std::vector<attribution::StepKind>> step_kind;
  int64_t median_step_ns = 0;  // over every rank's steady steps
  int steady_steps = 0;        // summed over ranks
  // Per rank per steady step (means over ranks).
  int64_t gpu_ns_per_step = 0, busy_ns_per_step = 0, comm_exposed_ns_per_step = 0;
  int64_t wait_ns_per_step = 0, transfer_ns_per_step = 0;
  // Of wait_ns_per_step, the part nothing else covered (attribution::exposedWaitNs, collective by
  // collective): the sum of the modules' wait_ns, and the verdict's "ranks waiting" figure.
  int64_t exposed_wait_ns_per_step = 0;
  uint32_t paired_collectives = 0;  // collectives found on two ranks or more
  uint32_t unpaired_collectives = 0;
  // The rank the others wait for most (-1: none waits measurably), the steps it held them up
  // (step indices), and the line that ran longer on it in those steps.
  int32_t straggler = -1;
  double straggler_late_share = 0;           // of the collectives paired, those it arrived last at
  int64_t straggler_caused_ns_per_step = 0;  // the others' wait for it per steady step (summed over them)
  std::vector<int32_t> straggler_steps;
  std::string straggler_line_path;
  int32_t straggler_line = 0;
  int64_t straggler_line_extra_ns = 0;  // per straggler step, over the other ranks' median
  int64_t straggler_gpu_extra_ns = 0;   // its GPU work per straggler step over the others' median
  bool straggler_lines_known = false;   // its summary has per-step line costs
  // Every rank that held up a step, the straggler first, then by their first step: more than one
  // when the late rank changes between steps.
  std::vector<LateRank> late_ranks;
  std::vector<LineSpread> lines;    // the costliest (median) first, at most kMaxSpreadLines
  std::vector<ModuleComm> modules;  // exposed first
  std::vector<CommAdvice> advice;
  JobBound bound = JobBound::Unknown;
};

inline constexpr size_t kMaxSpreadLines = 40;

JobView buildJob(const std::vector<join::RankSummary>& ranks);

// "all-gather" for ncclDevKernel_AllGather_RING_LL, ...; "" when the name says none.
std::string collectiveKind(std::string_view kernel_name);

}  // namespace sightline::features
