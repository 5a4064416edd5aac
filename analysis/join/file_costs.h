// A file's line costs from one profile: every profile path that maps onto the file, merged,
// with the totals that shares are taken of. Moved through a document's edits by remapCosts.
// Plain data and pure functions; no formatting (that is the edge's job).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/join/compile_logs.h"
#include "analysis/join/compile_summary.h"
#include "analysis/join/loader_settings.h"
#include "analysis/join/memory_story.h"
#include "analysis/model/step_measurement.h"
#include "analysis/source/line_tracker.h"

namespace sightline::join {

// One line's change against a baseline run, as the regression gate measured it (features::
// LineChange, copied here so that costs carry it through edits): GPU time per step, its 95%
// interval, and the line's synchronizing calls per step.
struct LineRegression {
  double base_ns = 0, new_ns = 0, delta_ns = 0, low_ns = 0, high_ns = 0;
  bool sampled = false;     // an interval from per-step samples (else totals per step)
  bool certain = false;     // the interval holds no change
  bool regressed = false;   // grew past its spread by at least RegressionBasis::min_regression_ns
  bool added = false;       // the base runs had no such line
  bool sync_added = false;  // the step grew, and this line now synchronizes more often (LineChange)
  double base_syncs = 0, new_syncs = 0;
  size_t base_samples = 0, new_samples = 0;  // the per-step samples of the line's medians
};

// What a file's regressions compare: the baseline's name and the step's change.
struct RegressionBasis {
  std::string base_name;   // the compareWith file's name
  std::string step_basis;  // "measured without the profiler ..." or "profiled steps ..."
  double step_base_ns = 0, step_new_ns = 0, step_low_ns = 0, step_high_ns = 0;
  bool step_certain = false;
  size_t base_samples = 0, new_samples = 0;
  double min_regression_ns = 0;  // a line regressed when its interval's lower end passes this
};

// A line of any file, named for display: the local path where the profile path maps onto one,
// else the profile's path.
struct PlacedLine {
  std::string path;
  int32_t line = 0;
  int64_t ns = 0;
  uint32_t count = 0;
};

// Work that ran beneath lines of this file (attribution::ContextCost, seen from one file).
struct ContextSpan {
  std::vector<int32_t> lines;  // 1-based lines of this file it ran beneath, sorted
  int64_t gpu_ns = 0, forward_ns = 0, backward_ns = 0;
  PlacedLine self;         // where it is charged itself (ns unused)
  bool self_here = false;  // that line is in this file
};

// The steady steps and what happened outside them, for the verdict (features/step_verdict.h):
// the whole profile's, shared by every file's costs.
struct StepStory {
  attribution::StepSummary summary;  // its line lists are in the placed fields below
  int all_steps = 0;                 // steps found, steady or not
  std::string steps_source;
  std::array<std::vector<PlacedLine>, attribution::kWaitCount> wait_lines;
  std::vector<PlacedLine> sync_lines;
  std::vector<PlacedLine> launch_lines;    // with graph replays: launches outside them by line (ns: count)
  std::vector<PlacedLine> lost_lines;      // lines whose launches in steady steps lost GPU records (count)
  std::vector<PlacedLine> compiled_lines;  // where torch.compile's kernels landed, costliest first
  // torch.compile's generated code: whether the profile's stacks through it reached the model's
  // lines (ProfileJoin::compiled), and where the code was or was looked for.
  struct Generated {
    uint64_t stacks = 0;                 // Python stacks through generated wrapper code
    uint64_t mapped = 0;                 // of those, put on the model's lines
    uint64_t traced_calls = 0;           // traced Python calls into it (PyTorch profiler traces)
    uint64_t mapped_calls = 0;           // of those, calls of modules read: their launches on the model's lines
    size_t missing_modules = 0;          // generated modules the run used that were not found
    size_t substituted_modules = 0;      // of those it used, found under another name by their launches
    size_t lineless_modules = 0;         // found as wrapper code only, which names no source line
    bool provenance = false;             // whole stacks (Inductor's line map)
    std::vector<std::string> read_from;  // folders the code was read from
    std::vector<std::string> run_from;   // the cache folders the profiled run used
  } generated;
  std::vector<PlacedLine> oneoff_lines;  // costliest first: GPU time + idle outside steady steps
  int64_t comm_exposed_ns = 0;           // NCCL time in steady steps not hidden behind compute
  std::vector<PlacedLine> comm_lines;    // its lines, most exposed first
  // Collectives paired across ranks (summary.comm_wait_ns / comm_transfer_ns): of the exposed
  // time, the part spent waiting for the last rank (the rest moved data), and the rank that
  // arrives last most often, with the line it spends longest on beyond the other ranks.
  int64_t comm_exposed_wait_ns = 0;
  struct LateRank {
    std::string label;
    double share = 0;       // of the steady collectives it took part in, those it arrived last at
    int64_t caused_ns = 0;  // the other ranks' waits for it, over the steady steps
    PlacedLine line;        // path empty: none found; ns: per step of its own, beyond the others' median
    // Per step: its GPU work (communication left out) beyond the other ranks' median, which
    // no profiler makes: what of the others' wait its own work explains.
    int64_t extra_ns = 0;
  };
  std::optional<LateRank> late;
  int ranks = 0;  // processes with GPU work in the profile
  // The job's ranks as its processes record them (NCCL's, a trace's distributedInfo): a report of
  // one rank of eight says 8 here and 1 in `ranks`. 0: not recorded.
  int world_size = 0;
  struct OneOffStep {
    int index = 0;  // 1-based, in its process
    attribution::StepKind kind = attribution::StepKind::Warmup;
    int64_t wall_ns = 0, gpu_ns = 0;
    PlacedLine top;          // what it ran most (path empty: unknown)
    int64_t compile_ns = 0;  // of its wall time, torch.compile compiling
  };
  std::vector<OneOffStep> oneoff_steps;
  std::vector<CompiledFunctionSummary> compiles;  // torch.compile's compilations (TORCH_TRACE), by function
  CompileLogs compile_logs;                       // the TORCH_TRACE logs read, and those set aside
  std::string timing_from;  // a second, light capture the figures come from (timedStory); "" for this one's
  // What surely bounds the step without the profiler, from the capture: at least the GPU's own
  // work in a steady step (compute, copies and collectives' transfers, not their waits, and
  // kernels beside a collective at their fastest: median over the busiest rank's steps), at most
  // the step as captured (the slowest rank's upper quartile: a run's steps vary by more than a
  // light capture adds).
  int64_t work_ns = 0, wall_hi_ns = 0;
  // GPU idle while torch.compile compiled (median per steady step, of that rank): the compiler's
  // time, which no profiler of CUDA calls makes. It adds to the step's lower end.
  int64_t compile_idle_ns = 0;
  std::optional<model::StepMeasurement> measured;  // the step without the profiler, measured
  // Where the measured loop asks its DataLoader for batches (measured->input_line), placed.
  std::optional<PlacedLine> input_site;
  bool memory_tracking = false;  // the capture recorded every allocation (profile_memory, --cuda-memory-usage)
  // The training script (placed path): the user file beneath whose lines the most GPU time ran
  // (the loop that calls the model is above all of it); "" when no stacks say.
  std::string script;
  ScriptLoaders loaders;  // what that script's DataLoader calls ask for, when it could be read
};

struct FileCosts {
  std::map<int32_t, attribution::LineCost> lines;           // 1-based line -> cost
  int64_t total_gpu_ns = 0;                                 // the steady steps' GPU time (shares are of this)
  int steps = 0;                                            // 0: unknown (per-step figures become totals)
  int64_t oneoff_gpu_ns = 0;                                // GPU time outside the steady steps (one-off)
  std::vector<attribution::RankInfo> ranks;                 // of the whole profile; LineCost::rank_ns indexes it
  std::vector<ContextSpan> spans;                           // inclusive time: work beneath this file's lines
  std::shared_ptr<const StepStory> story;                   // null when the profile knows no steps
  std::vector<CompiledFunctionSummary> compiled_functions;  // torch.compile'd functions defined in this file
  std::set<int32_t> stale_lines;                            // 1-based lines edited since they were profiled
  // The file changed since it was profiled (lines added or removed above its code): the profile's
  // lines were moved by this many to where their functions are now (join/source_alignment.h).
  int32_t realigned_by = 0;
  // Lines of the profile that fell on no code of the file (blank, comment, past its end): their
  // costs are not shown.
  size_t off_code_lines = 0;
  std::shared_ptr<const MemoryStory> memory;  // null when the profile has no memory
  int32_t oom_line = 0;                       // 1-based line of this file where the GPU ran out of memory; 0: none here
  // A second profile on the same lines (`compareWith`): hints and hovers show the change from it.
  std::shared_ptr<const FileCosts> compare;
  std::string compare_name;  // its file name, for the hover
  std::string compare_note;  // how its lines were placed when the script changed in between
  // The regression gate's change of each line against `compareWith` (features/regression.h:
  // a bootstrap interval of the per-step medians), by line; empty without a comparison.
  std::map<int32_t, LineRegression> regressions;
  std::shared_ptr<const RegressionBasis> regression;  // what the changes were measured against
};

// Merges the costs of every profile file for which `maps_here(profile path)` is true.
// `place(profile file id)` names a profile path for display.
template <class MapsHere, class Place>
FileCosts fileCosts(const model::Profile& profile, const attribution::Attribution& attr, MapsHere&& maps_here,
                    Place&& place) {
  FileCosts out;
  out.total_gpu_ns = attr.steady_gpu_ns;
  out.steps = attr.steps;
  out.oneoff_gpu_ns = attr.step_summary.oneoff_gpu_ns;
  out.ranks = attr.ranks;
  std::map<model::StringId, bool> here;
  auto isHere = [&](model::StringId file) {
    auto [it, added] = here.emplace(file, false);
    if (added) it->second = maps_here(profile.strings[file]);
    return it->second;
  };
  for (const auto& [file, lines] : attr.files) {
    if (!isHere(file)) continue;
    for (const auto& [line, cost] : lines) attribution::addCost(out.lines[line], cost);
  }
  for (const auto& cc : attr.context_costs) {
    ContextSpan span;
    for (const auto& f : attr.contexts[cc.context])
      if (isHere(f.file)) span.lines.push_back(f.line);
    if (span.lines.empty()) continue;
    std::sort(span.lines.begin(), span.lines.end());
    span.lines.erase(std::unique(span.lines.begin(), span.lines.end()), span.lines.end());
    span.gpu_ns = cc.gpu_ns, span.forward_ns = cc.forward_ns, span.backward_ns = cc.backward_ns;
    span.self = {place(cc.self.file), cc.self.line};
    span.self_here = isHere(cc.self.file);
    out.spans.push_back(std::move(span));
  }
  return out;
}

// One process's part of the bounds of the step without the profiler: the median of its steady
// steps' own work (and compiling), the upper quartile of their walls; the story keeps the largest.
inline void addStepBounds(const attribution::Attribution::ProcessSteps& steps, const attribution::StepSummary& sum,
                          StepStory& story) {
  std::vector<int64_t> work, wall, compiling;
  size_t n = steps.list.size();
  for (size_t i = 0; i < n; ++i) {
    const auto& st = steps.list[i];
    // The last step is cut short where the loop ends (as the summary's medians leave it out).
    if (st.kind != attribution::StepKind::Steady || (i + 1 == n && n > 3)) continue;
    work.push_back(st.compute_ns - st.compute_slowed_ns + st.copy_ns +
                   std::max<int64_t>(0, st.comm_ns - st.comm_wait_ns) *
                       (sum.comm_wait_ns + sum.comm_transfer_ns > 0 ? 1 : 0));
    wall.push_back(model::spanNs(st.window_start_ns, st.window_end_ns));
    compiling.push_back(st.wait_ns[static_cast<size_t>(attribution::Wait::Compile)]);
  }
  auto quantile = [](std::vector<int64_t>& v, size_t num, size_t den) {
    size_t at = std::min(v.size() - 1, v.size() * num / den);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
    return v[at];
  };
  if (!work.empty()) {
    int64_t w = quantile(work, 1, 2), c = quantile(compiling, 1, 2);
    if (w + c > story.work_ns + story.compile_idle_ns) story.work_ns = w, story.compile_idle_ns = c;
  }
  // The upper quartile (nearest rank: of 4 steps the third, never the largest): a run's steps
  // vary from run to run by more than a light capture adds.
  if (!wall.empty()) {
    size_t at = (wall.size() * 3 + 3) / 4 - 1;
    std::nth_element(wall.begin(), wall.begin() + static_cast<std::ptrdiff_t>(at), wall.end());
    story.wall_hi_ns = std::max(story.wall_hi_ns, wall[at]);
  }
}

// The steps' story of a profile, its lines named by `place`.
template <class Place>
std::shared_ptr<const StepStory> stepStory(const attribution::Attribution& attr, Place&& place) {
  const auto& sum = attr.step_summary;
  if (sum.steady == 0) return nullptr;
  auto story = std::make_shared<StepStory>();
  story->summary = sum;
  story->steps_source = attr.steps_source;
  auto placed = [&](const std::vector<attribution::WaitLine>& from) {
    std::vector<PlacedLine> v;
    for (size_t i = 0; i < from.size() && i < 5; ++i)
      v.push_back({place(from[i].line.file), from[i].line.line, from[i].ns, from[i].count});
    return v;
  };
  for (size_t w = 0; w < attribution::kWaitCount; ++w) story->wait_lines[w] = placed(sum.wait_lines[w]);
  story->sync_lines = placed(sum.sync_lines);
  story->launch_lines = placed(sum.launch_lines);
  story->lost_lines.clear();
  for (const auto& w : sum.lost_lines)
    if (w.line.file != 0) story->lost_lines.push_back({place(w.line.file), w.line.line, w.ns, w.count});
  story->compiled_lines = placed(sum.compiled_lines);
  for (auto& w : story->summary.wait_lines) w.clear();
  story->summary.sync_lines.clear();
  story->summary.launch_lines.clear();
  story->summary.lost_lines.clear();
  story->summary.compiled_lines.clear();
  // The lines where `ns_of(cost)` is positive, costliest first.
  auto linesBy = [&](auto&& ns_of) {
    attribution::LineTally tally;
    for (const auto& [file, lines] : attr.files)
      for (const auto& [line, cost] : lines)
        if (int64_t ns = ns_of(cost); ns > 0) tally[{file, line}] = {{file, line}, ns, 1};
    return attribution::costliestFirst(tally);
  };
  story->oneoff_lines = placed(linesBy([](const attribution::LineCost& c) { return c.oneoff_ns + c.oneoff_idle_ns; }));
  auto comm = linesBy([](const attribution::LineCost& c) { return c.comm_exposed_ns; });
  // Every rank's exposed communication, on a line or not (FSDP's hooks launch collectives no
  // user line is on): the job's figure too. The lines say where, as far as they know.
  for (const auto& r : attr.ranks) story->comm_exposed_ns += r.steady_comm_exposed_ns;
  story->comm_lines = placed(comm);
  story->ranks = static_cast<int>(attr.ranks.size());
  if (sum.comm_wait_ns + sum.comm_transfer_ns > 0) {
    // Of the exposed time, the waiting: collective by collective (attribution::exposedWaitNs).
    story->comm_exposed_wait_ns = std::min(sum.comm_exposed_wait_ns, story->comm_exposed_ns);
    size_t late = 0;
    for (size_t r = 1; r < attr.ranks.size(); ++r)
      if (attr.ranks[r].steady_caused_wait_ns > attr.ranks[late].steady_caused_wait_ns) late = r;
    const auto& rank = attr.ranks[late];
    if (rank.steady_paired_collectives > 0 && rank.steady_caused_wait_ns > 0) {
      StepStory::LateRank l;
      l.label = rank.label;
      l.share = static_cast<double>(rank.steady_late_collectives) / rank.steady_paired_collectives;
      l.caused_ns = rank.steady_caused_wait_ns;
      // Its line: the most GPU time per step beyond the other ranks' median on that line.
      auto per_step = [&](size_t r, int64_t ns) {
        int n = attr.ranks[r].steady_steps;
        return n > 0 ? static_cast<double>(ns) / n : static_cast<double>(ns);
      };
      double best = 0;
      for (const auto& [file, lines] : attr.files)
        for (const auto& [line, cost] : lines) {
          if (cost.comm_ns > 0 || cost.rank_ns.size() != attr.ranks.size()) continue;
          std::vector<double> others;
          for (size_t r = 0; r < attr.ranks.size(); ++r)
            if (r != late) others.push_back(per_step(r, cost.rank_ns[r]));
          std::sort(others.begin(), others.end());
          double median = others.empty() ? 0 : others[others.size() / 2];
          double over = per_step(late, cost.rank_ns[late]) - median;
          if (over > best) best = over, l.line = {place(file), line, static_cast<int64_t>(over), 1};
        }
      std::vector<double> others;
      for (size_t r = 0; r < attr.ranks.size(); ++r)
        if (r != late) others.push_back(per_step(r, attr.ranks[r].steady_gpu_ns - attr.ranks[r].steady_comm_ns));
      std::sort(others.begin(), others.end());
      if (!others.empty())
        l.extra_ns = std::max<int64_t>(
            0,
            static_cast<int64_t>(per_step(late, rank.steady_gpu_ns - rank.steady_comm_ns) - others[others.size() / 2]));
      story->late = std::move(l);
    }
  }
  {
    std::map<model::StringId, int64_t> beneath;  // file -> GPU time run beneath one of its lines
    for (const auto& c : attr.context_costs) {
      if (c.context >= attr.contexts.size()) continue;
      model::StringId last = 0;
      for (const auto& f : attr.contexts[c.context])  // sorted: each file's lines together
        if (f.file != last) beneath[last = f.file] += c.gpu_ns;
    }
    model::StringId best = 0;
    for (const auto& [file, ns] : beneath)
      if (best == 0 || ns > beneath[best]) best = file;
    if (best != 0) story->script = place(best);
  }
  for (const auto& [pid, steps] : attr.process_steps) {
    story->all_steps = std::max(story->all_steps, static_cast<int>(steps.list.size()));
    addStepBounds(steps, sum, *story);
    for (size_t i = 0; i < steps.list.size(); ++i) {
      const auto& st = steps.list[i];
      if (st.kind == attribution::StepKind::Steady) continue;
      StepStory::OneOffStep o{
          static_cast<int>(i + 1), st.kind, model::spanNs(st.start_ns, st.end_ns), st.gpu_ns, {}, st.compile_ns};
      if (st.top_line.file != 0) o.top = {place(st.top_line.file), st.top_line.line};
      story->oneoff_steps.push_back(o);
    }
  }
  return story;
}

// The story of a light capture of the script (`timing`, named `timing_name`: its steps, walls,
// busy time, idle by cause and the profiler's cost, measured with little tracing) told with the
// lines of a full capture of it (`lines`): each cause's lines are the full capture's, scaled to
// add up to the light capture's figure for that cause.
std::shared_ptr<const StepStory> timedStory(const StepStory& lines, const StepStory& timing,
                                            const std::string& timing_name);

// `costs` moved onto the current lines of an edited document (1-based both ways): a line
// inserted above shifts them, a deleted line's cost is dropped, an edited line keeps its cost
// and is listed in stale_lines.
FileCosts remapCosts(const FileCosts& costs, const source::LineTracker& tracker);

}  // namespace sightline::join
