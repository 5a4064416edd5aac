// The job's rows (story_report.h's jobStory): ranks lined up, collectives paired, the straggler
// and what it ran, each line's spread across ranks, communication per module and its advice.
#include <algorithm>
#include <set>

#include "analysis/features/story_report.h"
#include "analysis/features/units.h"

namespace sightline::features {
namespace {

using C = StoryChunk;

StoryChunk ms(int64_t ns) { return C::ms(static_cast<double>(ns)); }

// Steps numbered from 1, as the step bars number them (the JSON keeps 0-based indices).
std::string stepList(const std::vector<int32_t>& steps) {
  std::string out;
  size_t shown = 0;
  for (int32_t s : steps) {
    if (shown == 12) return out + ", … (" + std::to_string(steps.size()) + " steps)";
    out += (out.empty() ? "" : ", ") + std::to_string(s + 1);
    ++shown;
  }
  return out;
}

// The job's size, what is missing from it, and its summaries' own warnings.
void jobRows(const JobView& job, const std::vector<join::RankSummary>& ranks, Story& out) {
  size_t hosts = job.hosts.size();
  StoryLine head;
  head << std::to_string(job.ranks.size()) + (job.ranks.size() == 1 ? " rank" : " ranks") +
              (job.world_size > 0 && static_cast<int>(job.ranks.size()) != job.world_size
                   ? " of " + std::to_string(job.world_size)
                   : "") +
              (hosts > 0 ? " on " + std::to_string(hosts) + (hosts == 1 ? " host" : " hosts") : "");
  if (job.steady_steps > 0)
    head << ", " + (job.min_steady_steps < job.max_steady_steps ? std::to_string(job.min_steady_steps) + "–" : "") +
                std::to_string(job.max_steady_steps) + " steady steps per rank; median step "
         << ms(job.median_step_ns) << " ms (as captured)";
  out.push_back(storyRow("Job", std::move(head)));
  if (!job.complete && job.world_size > 0 && static_cast<int>(job.ranks.size()) < job.world_size) {
    StoryLine line;
    line << "only " + std::to_string(job.ranks.size()) + " of the job's " + std::to_string(job.world_size) +
                " ranks: a collective's waiting and moving need every rank's summary (no advice without them)";
    out.push_back(storyRow("", std::move(line), RowRole::Warning));
  }
  if (job.duplicate_ranks > 0) {
    StoryLine line;
    line << std::to_string(job.duplicate_ranks) +
                (job.duplicate_ranks == 1 ? " summary repeats" : " summaries repeat") +
                " a rank another has (the same rank, host and GPU: the same report twice?), left out";
    out.push_back(storyRow("", std::move(line), RowRole::Warning));
  }
  // What the summaries' own reports warned of, once each.
  std::set<std::string> warned;
  for (const auto& r : ranks)
    for (const auto& w : r.warnings)
      if (warned.size() < 5 && warned.insert(w).second) {
        StoryLine line;
        line << r.report + ": " + w;
        out.push_back(storyRow("Warning", std::move(line), RowRole::Warning));
      }
  if (job.paired_collectives > 0) {
    StoryLine line;
    line << "collectives: " + std::to_string(job.paired_collectives) + " paired across ranks" +
                (job.unpaired_collectives ? ", " + std::to_string(job.unpaired_collectives) + " on one rank only"
                                          : "") +
                "; per rank and step, waiting for the last rank "
         << ms(job.wait_ns_per_step) << " ms (" << ms(job.exposed_wait_ns_per_step)
         << " of it exposed: nothing else ran), moving data " << ms(job.transfer_ns_per_step) << " ms";
    out.push_back(storyRow("", std::move(line)));
  }
}

// Beside a straggler found in the profiled steps, what the steps timed without the profiler show:
// every rank's step ends at the same collectives, so their medians agree and cannot name a late
// rank; the profiled waits carry the profiler's slowdown of each rank's host, which differs.
void measuredStragglerRow(const model::StepMeasurement& m, Story& out) {
  if (m.rank_median_ns.size() < 2) {  // one figure for the run (a log): no rank of its own
    StoryLine line;
    line << "without the profiler the step is " << ms(m.median_ns)
         << " ms (" + m.from +
                "): the waits above are as captured, under a profiler that slows each rank's host by its own amount";
    out.push_back(storyRow("", std::move(line), RowRole::Note));
    return;
  }
  auto [lo, hi] = std::minmax_element(m.rank_median_ns.begin(), m.rank_median_ns.end());
  StoryLine line;
  line << "without the profiler each rank's timed step (median) is " << ms(*lo);
  // A spread under half a percent is one figure ("21.7–21.7 ms" once).
  if (static_cast<double>(*hi - *lo) >= 0.005 * static_cast<double>(*lo)) line << "–" << ms(*hi);
  line << " ms (" + m.from +
              "): the ranks meet at every collective, so the timed steps cannot name a late rank; "
              "the waits above are as captured, under a profiler that slows each rank's host by its own amount";
  out.push_back(storyRow("", std::move(line), RowRole::Note));
}

// Where the late rank changes between steps, who held up which; and a line only a late rank runs
// in the steps it held up (rank 0's logging `.item()`), named.
void lateRankRows(const JobView& job, Story& out) {
  auto label = [&](const LateRank& l) { return job.ranks[l.rank].label; };
  if (job.late_ranks.size() > 1) {
    StoryLine line;
    line << "the late rank changes between steps:";
    for (size_t i = 0; i < job.late_ranks.size(); ++i) {
      const auto& l = job.late_ranks[i];
      line << std::string(i ? "; " : " ") + label(l) + " held up step" + (l.steps.size() == 1 ? " " : "s ") +
                  stepList(l.steps);
    }
    out.push_back(storyRow("", std::move(line)));
  }
  for (const auto& l : job.late_ranks) {
    if (l.only_lines.empty()) continue;
    StoryLine line;
    line << "in the step" + std::string(l.steps.size() == 1 ? " " : "s ") + stepList(l.steps) + " that " + label(l) +
                " held up, it launches GPU work at ";
    for (size_t i = 0; i < l.only_lines.size(); ++i) {
      if (i) line << (i + 1 == l.only_lines.size() ? " and " : ", ");
      line << C::place(l.only_lines[i].path, l.only_lines[i].line);
    }
    line << std::string(l.only_lines.size() == 1 ? ": no other rank's profile puts GPU work on that line"
                                                 : ": no other rank's profile puts GPU work on those lines");
    out.push_back(storyRow("", std::move(line)));
  }
}

// The rank the others wait for, the steps it held up, and what it ran longer in them.
// Why a rank's lines are unknown, and what to do, as `source` says.
std::string unknownLinesRemedy(JobSource source) {
  switch (source) {
    case JobSource::Summaries:
      return "its summary has none: name the script with --format summary, or capture Python stacks";
    case JobSource::Reports:
      return "no script was named: name it after the profiles, or capture Python stacks";
    case JobSource::ReportsWithScripts:
      break;
  }
  return "its profile's Python stacks reach none of the script's lines: capture them (sightline capture)";
}

void stragglerRows(const JobView& job, const model::StepMeasurement* measured, JobSource source, Story& out) {
  if (job.straggler < 0) {
    if (job.ranks.size() > 1 && job.paired_collectives > 0) {
      StoryLine line;
      line << "none: no rank keeps the others waiting measurably (over 2% of a step)";
      out.push_back(storyRow("Straggler", std::move(line)));
    }
    return;
  }
  const auto& r = job.ranks[static_cast<size_t>(job.straggler)];
  size_t others = job.ranks.size() - 1;
  StoryLine line;
  // As captured, beside a measured step: one colon in the row ("as captured: rank 3 (...): last").
  line << (measured ? "as captured, " + r.label + " was last to arrive at " : r.label + ": last to arrive at ")
       << C::share(job.straggler_late_share) << " of its collectives; the "
       << (others == 1 ? "other rank waits " : std::to_string(others) + " others wait ")
       << ms(job.straggler_caused_ns_per_step / static_cast<int64_t>(others)) << " ms/step"
       << (others == 1 ? "" : " each") << " for it (mean over its steady steps)";
  if (!job.straggler_steps.empty())
    line << "; it held up step" + std::string(job.straggler_steps.size() == 1 ? " " : "s ") +
                stepList(job.straggler_steps);
  out.push_back(storyRow("Straggler", std::move(line)));
  if (measured) measuredStragglerRow(*measured, out);
  if (job.straggler_steps.empty()) return lateRankRows(job, out);
  int64_t floor = std::max<int64_t>(500'000, job.median_step_ns / 100);
  StoryLine why;
  if (!job.straggler_line_path.empty())
    why << "in those steps " << C::place(job.straggler_line_path, job.straggler_line) << " runs "
        << ms(job.straggler_line_extra_ns) << " ms/step longer on it than the other ranks' median";
  else if (job.straggler_gpu_extra_ns >= floor)
    why << "in those steps it launches " << ms(job.straggler_gpu_extra_ns)
        << " ms/step more GPU work than the other ranks' median"
        << (job.straggler_lines_known ? ", spread over its lines"
                                      : " (its lines are unknown: " + unknownLinesRemedy(source) + ")");
  else if (job.straggler_lines_known)
    why << "no line does measurably more GPU work on it in those steps: its host is slower (Python work, data, "
           "syncs), not its GPU";
  else
    why << "it launches no more GPU work than the others in those steps; its lines are unknown (" +
               unknownLinesRemedy(source) + ")";
  out.push_back(storyRow("", std::move(why)));
  lateRankRows(job, out);
}

// The lines whose time differs most across ranks, as a table.
void spreadRows(const JobView& job, Story& out) {
  if (job.lines.empty()) return;
  StoryLine line;
  line << "each line's GPU time per step across the ranks (ms/step)";
  out.push_back(storyRow("Spread", std::move(line)));
  StoryTable t;
  t.columns = {{"line", true, 23}, {"median", false, 10}, {"p95", false, 10}, {"max", false, 10}, {"on", true, 0}};
  for (size_t i = 0; i < job.lines.size() && i < 8; ++i) {
    const auto& l = job.lines[i];
    t.rows.push_back({StoryLine{C::place(l.path, l.line)}, StoryLine{ms(l.median_ns)}, StoryLine{ms(l.p95_ns)},
                      StoryLine{ms(l.max_ns)}, StoryLine{C::plain(job.ranks[l.max_rank].label)}});
  }
  out.back().table = std::move(t);
}

// Communication per module (FSDP) or by kind, exposed first, and the changes its exposure calls for.
void commRows(const JobView& job, Story& out) {
  bool fsdp = std::any_of(job.modules.begin(), job.modules.end(), [](const auto& m) { return !m.module.empty(); });
  size_t shown = 0;
  for (const auto& m : job.modules) {
    if (m.kind.empty() || m.exposed_ns < 100'000 || shown == 8) continue;
    if (shown++ == 0) {
      StoryLine head;
      head << (fsdp ? "exposed communication per module (ms/step, mean over ranks)"
                    : "exposed communication by kind (ms/step, mean over ranks)");
      out.push_back(storyRow(fsdp ? "FSDP" : "Comm", std::move(head)));
    }
    StoryLine line;
    line << (m.module.empty() ? "(no module)" : m.module) + " " + m.kind +
                (m.pass == join::CollectivePass::Other     ? " outside backward"
                 : m.pass == join::CollectivePass::Unknown ? " (its pass unknown: no line)"
                                                           : std::string(" in ") + join::collectivePassName(m.pass)) +
                ": "
         << ms(m.exposed_ns) << " of " << ms(m.ns) << " exposed";
    if (m.wait_ns > 0) line << " (" << ms(m.wait_ns) << " waiting for other ranks)";
    out.push_back(storyRow("", std::move(line)));
  }
  bool first = true;
  for (const auto& a : job.advice) {
    const auto& m = job.modules[a.module];
    StoryLine line;
    if (a.change == "forward-prefetch")
      line << m.module + "'s all-gather moves data for " << ms(a.moving_exposed_ns)
           << " ms/step while nothing computes in forward: prefetch it one module earlier "
              "(set_modules_to_forward_prefetch on the module before it), or keep it gathered "
              "(fully_shard(..., reshard_after_forward=False))";
    else if (a.change == "backward-prefetch")
      line << m.module + "'s all-gather moves data for " << ms(a.moving_exposed_ns)
           << " ms/step while nothing computes in backward: prefetch more modules ahead "
              "(set_modules_to_backward_prefetch)";
    else if (a.change == "reduce-dtype")
      line << m.module + "'s reduce-scatter is exposed " << ms(a.moving_exposed_ns)
           << " ms/step in backward: reduce in bf16 (MixedPrecisionPolicy(reduce_dtype=torch.bfloat16)) or group "
              "small modules into one fully_shard";
    else if (a.change == "ddp-buckets")
      line << "DDP's all-reduce is exposed " << ms(a.moving_exposed_ns)
           << " ms/step in backward: start it earlier with smaller buckets (bucket_cap_mb), or overlap it with "
              "gradient accumulation (no_sync)";
    else
      continue;
    out.push_back(storyRow(first ? "Try" : "", std::move(line), RowRole::Change));
    first = false;
  }
}

}  // namespace

Story jobStory(const JobView& job, const std::vector<join::RankSummary>& ranks, const model::StepMeasurement* measured,
               JobSource source) {
  Story out;
  jobRows(job, ranks, out);
  stragglerRows(job, measured, source, out);
  spreadRows(job, out);
  commRows(job, out);
  return out;
}

}  // namespace sightline::features
