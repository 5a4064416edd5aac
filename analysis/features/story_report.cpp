// The report's rows (story_report.h): the profile, its machine, steps, verdict, attribution,
// comparison, memory and warnings. The job's rows are story_job.cpp's.
#include "analysis/features/story_report.h"

#include <algorithm>
#include <set>

#include "analysis/features/profile_view.h"
#include "analysis/features/story_verdict.h"
#include "analysis/features/units.h"

namespace sightline::features {
namespace {

using C = StoryChunk;

StoryChunk placeOf(const join::MemoryPlace& p) { return C::place(p.path, p.line); }

void append(Story& to, Story rows) {
  for (auto& r : rows) to.push_back(std::move(r));
}

// "2 × NVIDIA H200", or each name once per GPU kind.
std::string gpuList(const std::vector<std::string>& gpus) {
  std::vector<std::pair<std::string, int>> kinds;
  for (const auto& g : gpus) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == g; });
    if (it == kinds.end())
      kinds.emplace_back(g, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [name, n] : kinds)
    out += (out.empty() ? "" : ", ") + (n > 1 ? std::to_string(n) + " × " : "") + name;
  return out;
}

// The table of ranks: per rank over its steady steps (totals where it has none).
StoryTable rankTable(const attribution::Attribution& attr) {
  auto rows = rankRows(attr.ranks);
  bool per_step = std::all_of(rows.begin(), rows.end(), [](const auto& r) { return r.per_step; });
  std::string unit = per_step ? " ms/step" : " ms";
  bool paired = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.paired; });
  size_t width = 10;
  for (const auto& r : attr.ranks) width = std::max(width, r.label.size() + 2);
  StoryTable t;
  t.columns = {{"rank", true, width},
               {"GPU" + unit, false, 13},
               {"busy", false, 8},
               {"comm" + unit, false, 14},
               {"exposed", false, 10}};
  if (paired) t.columns.insert(t.columns.end(), {{"waiting", false, 9}, {"moving", false, 8}, {"last in", false, 9}});
  t.columns.insert(t.columns.end(), {{"steps", false, 7}, {"median step", false, 13}});
  auto cell = [](StoryChunk c) { return StoryLine{std::move(c)}; };
  for (const auto& row : rows) {
    const auto& r = *row.rank;
    std::vector<StoryLine> cells = {cell(C::plain(r.label)), cell(C::ms(row.gpu_ns)), cell(C::share(row.busy_share)),
                                    cell(C::ms(row.comm_ns)), cell(C::ms(row.comm_exposed_ns))};
    if (paired) {
      cells.push_back(row.paired ? cell(C::ms(row.comm_wait_ns)) : StoryLine{});
      cells.push_back(row.paired ? cell(C::ms(row.comm_transfer_ns)) : StoryLine{});
      cells.push_back(row.paired ? cell(C::share(row.late_share)) : StoryLine{});
    }
    cells.push_back(r.steady_steps > 0 ? cell(C::plain(std::to_string(r.steady_steps))) : StoryLine{});
    StoryLine median;
    if (r.median_step_ns > 0) median << C::ms(static_cast<double>(r.median_step_ns)) << " ms";
    cells.push_back(std::move(median));
    t.rows.push_back(std::move(cells));
  }
  if (per_step)
    t.note << "(per rank over its steady steps: GPU and comm the mean per step, busy its GPU busy time over their "
              "wall, the step their median)";
  return t;
}

// The steps found, and the GPU time in them.
void stepsRows(const attribution::Attribution& attr, const StepVerdict* verdict, Story& out) {
  StoryLine steps;
  if (verdict) {
    steps << std::to_string(verdict->all_steps) +
                 (attr.step_ranks > 1 ? " per rank on " + std::to_string(attr.step_ranks) + " ranks" : "") + " (" +
                 verdict->steps_source +
                 (verdict->timing_from.empty() ? "" : "; figures from the light capture " + verdict->timing_from) +
                 "): " + std::to_string(verdict->steady) + " steady, " + std::to_string(verdict->warmup) +
                 " warm-up, " + std::to_string(verdict->outliers) + " outlier" + (verdict->outliers == 1 ? "" : "s");
    if (verdict->lost_steps > 0) steps << ", " + std::to_string(verdict->lost_steps) + " without GPU records";
  } else if (attr.steps > 0) {
    steps << std::to_string(attr.steps) + " (" + attr.steps_source + ")";
  } else {
    steps << "not detected";
  }
  out.push_back(storyRow("Steps", std::move(steps)));
  StoryLine gpu;
  // Without steps there are no steady ones: the whole profile's GPU time (it once read "0.00 ms
  // total" beside 69 ms of kernels).
  if (verdict || attr.steps > 0)
    gpu << C::ms(static_cast<double>(attr.steady_gpu_ns)) << " ms in steady steps";
  else
    gpu << C::ms(static_cast<double>(attr.total_gpu_ns)) << " ms total";
  if (attr.steps > 0)
    gpu << ", " << C::ms(static_cast<double>(attr.steady_gpu_ns) / attr.steps) << " ms/step"
        << (attr.step_ranks > 1 ? " per GPU" : "");
  out.push_back(storyRow("GPU time", std::move(gpu)));
}

// How the GPU time reached its lines: each method's share.
void methodsRow(const attribution::Attribution& attr, Story& out) {
  if (attr.files.empty()) return;
  double total = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  StoryLine line;
  for (size_t m = 0; m < attribution::kMethodCount; ++m)
    if (attr.by_method[m] > 0)
      line << (line.empty() ? "" : " ") + std::string(attribution::methodName(static_cast<attribution::Method>(m))) +
                  " "
           << C::share(static_cast<double>(attr.by_method[m]) / total);
  out.push_back(storyRow("Methods", std::move(line)));
}

void compareRows(const CompareFacts& c, Story& out) {
  if (c.time) {
    StoryLine line;
    line << c.path + ": " << C::ms(c.before_ns) << " -> " << C::ms(c.now_ns)
         << (c.per_step ? " ms/step" : " ms in total") << ", " << C::delta(c.now_ns - c.before_ns);
    out.push_back(storyRow("Compare", std::move(line)));
    for (const auto& [local, how] : c.aligned) {
      StoryLine a;
      a << local.substr(local.find_last_of('/') + 1) + " changed since the compared run: " + how;
      out.push_back(storyRow("", std::move(a)));
    }
  }
}

void memoryChangeRows(const CompareFacts& c, Story& out) {
  if (!c.memory) return;
  StoryLine line;
  line << "against " + c.path + ": peak " << C::bytes(c.peak_before_bytes) << " → " << C::bytes(c.peak_now_bytes)
       << " (" << C::signedBytes(c.peak_now_bytes - c.peak_before_bytes) << ")";
  out.push_back(storyRow("Change", std::move(line)));
  StoryLine peak;
  size_t shown = 0;
  for (const auto& l : c.lines) {
    if (l.peak_change == 0 || shown == 5) continue;
    peak << (shown++ == 0 ? "at the peak: " : ", ") << C::place(l.path, l.line) << " " << C::signedBytes(l.peak_change);
  }
  if (!peak.empty()) out.push_back(storyRow("", std::move(peak)));
  if (!c.memory_steps) return;
  auto by_step = c.lines;
  std::stable_sort(by_step.begin(), by_step.end(), [](const LineMemoryChange& a, const LineMemoryChange& b) {
    return std::llabs(a.step_change) > std::llabs(b.step_change);
  });
  StoryLine step;
  shown = 0;
  for (const auto& l : by_step) {
    if (l.step_change == 0 || shown == 5) continue;
    step << (shown++ == 0 ? "allocated per step: " : ", ") << C::place(l.path, l.line) << " "
         << C::signedBytes(l.step_change);
  }
  if (!step.empty()) out.push_back(storyRow("", std::move(step)));
}

void warningRows(const std::vector<std::string>& warnings, Story& out) {
  for (const auto& w : warnings) {
    StoryLine line;
    line << w;
    out.push_back(storyRow("Warning", std::move(line), RowRole::Warning));
  }
}

}  // namespace

std::string memoryPeakWhen(const join::MemoryStory& m) {
  std::string pass = m.peak_phase == attribution::MemoryPhase::Optimizer ? "optimizer step"
                     : m.peak_phase != attribution::MemoryPhase::Unknown
                         ? std::string(join::phaseName(m.peak_phase)) + " pass"
                         : "";
  if (m.peak_step > 0 && m.steps > 1)
    return "in step " + std::to_string(m.peak_step) + " of the " + std::to_string(m.steps) + " recorded" +
           (pass.empty() ? "" : " (" + pass + ")");
  return pass.empty() ? "" : "in the " + pass;
}

Story memoryStory(const join::MemoryStory& m) {
  Story out;
  if (m.pool_growth_bytes > 0) {
    StoryLine line;
    line << "the caching allocator's pool grew by " << C::bytes(m.pool_growth_bytes) << " (cudaMalloc), at most "
         << C::bytes(m.peak_reserved_bytes) << " reserved at once";
    for (size_t i = 0; i < m.growth.size() && i < 3; ++i)
      line << (i ? ", " : "; grown by ") << placeOf(m.growth[i]) << " " << C::bytes(m.growth[i].bytes);
    out.push_back(storyRow("Reserved", std::move(line)));
  }
  if (!m.allocated_known) return out;
  StoryLine peak;
  peak << "peak " << C::bytes(m.peak_allocated_bytes) << " allocated, " << C::bytes(m.peak_reserved_bytes)
       << " reserved";
  if (m.peak_reserved_bytes > m.peak_allocated_bytes)
    peak << " (" << C::bytes(m.peak_reserved_bytes - m.peak_allocated_bytes) << " cached, not allocated)";
  if (std::string when = memoryPeakWhen(m); !when.empty()) peak << ", " + when;
  if (m.devices > 1) peak << ", on device " + std::to_string(m.device) + " of " + std::to_string(m.devices);
  out.push_back(storyRow("Memory", std::move(peak)));
  if (m.allocated_before_trace_bytes > 0) {
    StoryLine before;
    before << C::bytes(m.allocated_before_trace_bytes)
           << (m.source == "memory-snapshot"
                   ? " was allocated before the oldest event the recorded history kept (a full ring buffer keeps the "
                     "last; their lines are unknown unless still alive at the dump)"
                   : " was allocated before the trace began (the model, optimizer state, ...: on no line)");
    out.push_back(storyRow("", std::move(before)));
  }
  if (!m.top.empty()) {
    StoryLine held;
    held << "held at the peak by";
    for (size_t i = 0; i < m.top.size() && i < 5; ++i)
      held << (i ? ", " : " ") << placeOf(m.top[i]) << " " << C::bytes(m.top[i].bytes);
    if (m.unattributed_bytes > 0) held << "; " << C::bytes(m.unattributed_bytes) << " on no line of the user's";
    out.push_back(storyRow("", std::move(held)));
  }
  if (!m.oom) return out;
  StoryLine oom;
  if (m.oom->where.path.empty())
    oom << "on no line of the user's";
  else
    oom << placeOf(m.oom->where);
  if (!m.oom->where.function.empty()) oom << " (" << C::code(m.oom->where.function) << ")";
  oom << " asked " << C::bytes(m.oom->requested_bytes) << " with " << C::bytes(m.oom->free_bytes) << " free";
  out.push_back(storyRow("Out of memory", std::move(oom)));
  if (m.oom->chain.size() > 1) {
    StoryLine chain;
    chain << "called from";
    for (size_t i = 0; i < m.oom->chain.size(); ++i) {
      chain << (i ? " → " : " ") << placeOf(m.oom->chain[i]);
      if (!m.oom->chain[i].function.empty()) chain << " (" << C::code(m.oom->chain[i].function) << ")";
    }
    out.push_back(storyRow("", std::move(chain)));
  }
  return out;
}

Story machineStory(const std::vector<std::string>& gpus, const attribution::Attribution& attr) {
  Story out;
  if (!gpus.empty()) {
    // A report lists its machine's GPUs: say how many the ranks ran on where that is fewer.
    std::set<std::pair<std::string, uint32_t>> used;
    for (const auto& r : attr.ranks)
      for (uint32_t d : r.devices) used.emplace(r.host, d);
    StoryLine line;
    line << gpuList(gpus) + (!used.empty() && used.size() < gpus.size()
                                 ? " (the profile's work ran on " + std::to_string(used.size()) + ")"
                                 : "");
    out.push_back(storyRow("GPUs", std::move(line)));
  }
  if (attr.ranks.size() <= 1) return out;
  bool recorded = std::all_of(attr.ranks.begin(), attr.ranks.end(), [](const auto& r) { return r.rank >= 0; });
  bool named =
      std::any_of(attr.ranks.begin(), attr.ranks.end(), [](const auto& r) { return r.rank_source == "file name"; });
  bool measured =
      std::any_of(attr.ranks.begin(), attr.ranks.end(), [](const auto& r) { return r.rank_source == "steps file"; });
  StoryLine line;
  line << std::to_string(attr.ranks.size()) + " (" + std::to_string(attr.processes) + " processes, " +
              std::to_string(attr.ranks.size()) + " with GPU work" +
              (!recorded  ? "; no distributed rank recorded, named by GPU"
               : named    ? "; ranks from the reports' file names"
               : measured ? "; ranks from the capture's steps file"
                          : "") +
              ")";
  out.push_back(storyRow("Ranks", std::move(line)));
  out.back().table = rankTable(attr);
  return out;
}

Story reportStory(const ReportFacts& f) {
  Story out;
  const model::Profile& profile = *f.profile;
  const attribution::Attribution& attr = *f.attr;
  StoryLine head;
  head << f.profile_path + " (" +
              (profile.info.format == "nsys-sqlite"       ? "Nsight Systems "
               : profile.info.format == "memory-snapshot" ? "PyTorch memory snapshot"
                                                          : "") +
              profile.info.tool_version + ")";
  out.push_back(storyRow("Profile", std::move(head)));
  if (profile.activities.empty() && f.memory) {
    // A memory snapshot alone: no time to tell.
    append(out, memoryStory(*f.memory));
    if (f.compare) memoryChangeRows(*f.compare, out);
    warningRows(f.warnings, out);
    if (f.memory->top.empty())
      warningRows({"No memory could be put on source lines: " + f.no_memory_lines_advice}, out);
    return out;
  }
  append(out, machineStory(profile.info.gpus, attr));
  if (f.job && f.job->ranks.size() > 1 && f.summaries) {
    const auto& u = f.verdict ? f.verdict->unprofiled : UnprofiledStep{};
    // A step measured without the profiler, by sightline capture or in the script's own log.
    bool measured = u.measurement && (u.source == StepSource::Measured || u.source == StepSource::StepLog);
    append(out, jobStory(*f.job, *f.summaries, measured ? &*u.measurement : nullptr, f.job_source));
  }
  stepsRows(attr, f.verdict, out);
  if (f.verdict) append(out, verdictStory(*f.verdict));
  methodsRow(attr, out);
  if (f.compare) compareRows(*f.compare, out);
  if (f.memory) append(out, memoryStory(*f.memory));
  if (f.compare) memoryChangeRows(*f.compare, out);
  warningRows(f.warnings, out);
  return out;
}

}  // namespace sightline::features
