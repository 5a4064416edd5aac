// The step verdict from the steady steps' numbers.
#include "analysis/features/step_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_view.h"

namespace sightline::features {

const char* boundName(Bound b) {
  switch (b) {
    case Bound::Gpu:
      return "GPU-bound";
    case Bound::Launch:
      return "launch-bound";
    case Bound::Sync:
      return "sync-bound";
    case Bound::Input:
      return "input-bound";
    case Bound::Host:
      return "host-bound";
    case Bound::Comm:
      return "communication-bound";
    case Bound::Ranks:
      return "bound by waiting ranks";
    case Bound::Compile:
      return "compile-bound";
    case Bound::Unknown:
      return "bound unknown";
  }
  return "?";
}

std::string causeName(Bound b) {
  switch (b) {
    case Bound::Gpu:
      return "GPU busy";
    case Bound::Launch:
      return "host launch overhead";
    case Bound::Sync:
      return "host-device syncs";
    case Bound::Input:
      return "input pipeline";
    case Bound::Host:
      return "other host work";
    case Bound::Comm:
      return "exposed communication";
    case Bound::Ranks:
      return "ranks waiting for each other";
    case Bound::Compile:
      return "torch.compile compiling";
    case Bound::Unknown:
      return "lost records";
  }
  return "?";
}

const char* changeName(Change c) {
  switch (c) {
    case Change::CompileOrGraphs:
      return "torch-compile";
    case Change::DropSync:
      return "fewer-syncs";
    case Change::LoaderWorkers:
      return "loader-workers";
    case Change::MoveHostWork:
      return "move-host-work";
    case Change::Tf32:
      return "tf32";
    case Change::HostPace:
      return "host-pace";
    case Change::Overlap:
      return "overlap-communication";
    case Change::CudaGraphs:
      return "cuda-graphs";
    case Change::Recompiles:
      return "fewer-recompiles";
    case Change::BalanceRanks:
      return "balance-ranks";
    case Change::OutsideGraphs:
      return "launches-outside-graphs";
  }
  return "?";
}

std::string recompileCure(const join::CompiledFunctionSummary::Reason& r, bool name_guard) {
  std::string guard = name_guard ? " (`" + r.text + "`)" : "";
  if (r.value)
    return "its guard on a Python number" + guard +
           " fails for every new value; a value read from a tensor (`.item()`) is a constant to Dynamo, so keep it a "
           "tensor";
  if (r.text.find("size mismatch") != std::string::npos)
    return (name_guard ? "`" + r.text + "`: m" : std::string("m")) +
           "ark that dimension dynamic (torch._dynamo.mark_dynamic) or keep the shapes fixed (drop_last=True, "
           "padding)";
  return name_guard ? "`" + r.text + "`" : "";
}

namespace {

std::string fileLine(const std::string& path, int32_t line) {
  return path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line);
}

// What keeps torch.compile compiling inside the steps, from its most recompiled function.
std::string recompileText(const StepVerdict& v, const std::string& ms) {
  const join::CompiledFunctionSummary* f = nullptr;
  for (const auto& c : v.compiles)
    if (!f || std::pair(c.recompiles, c.seconds) > std::pair(f->recompiles, f->seconds)) f = &c;
  std::string waits = "the GPU waits " + ms + " while it compiles";
  if (!f) return "keep torch.compile from compiling inside the steps: " + waits;
  std::string name = f->function.function + " (" + fileLine(f->function.file, f->function.line) + ")";
  std::string secs = formatSeconds(f->seconds);
  if (f->recompiles == 0)
    return "count steps after torch.compile's warm-up: " + name + " compiled " + std::to_string(f->compiles) +
           " graph" + (f->compiles == 1 ? "" : "s") + " in " + secs + " inside the steps; " + waits;
  std::string out =
      "stop " + name + " recompiling (" + std::to_string(f->recompiles) + " recompiles, " + secs + " compiling in all)";
  out += ": " + recompileCure(f->recompile_reasons.front());
  if (f->recompile_limit > 0)
    out += "; after " + std::to_string(f->recompile_limit) + " recompiles Dynamo gave up and runs it uncompiled";
  return out + "; " + waits;
}

// What to change in the input pipeline: only what the script's DataLoader lacks, when known.
std::string loaderText(const std::optional<LoaderSettings>& loader, bool no_loader) {
  if (no_loader)
    return "build the next batch while the GPU works: the script makes its batches on the step's path (no "
           "DataLoader); load them in a DataLoader with workers and pin_memory=True, or prefetch the next batch to "
           "the GPU before the step";
  if (!loader)
    return "load data in DataLoader workers (where not set yet: num_workers, pin_memory=True, "
           "persistent_workers=True)";
  std::vector<std::string> missing;
  if (!loader->workers) missing.push_back("num_workers");
  if (!loader->pin_memory) missing.push_back("pin_memory=True");
  if (!loader->persistent) missing.push_back("persistent_workers=True");
  if (missing.empty() || (missing.size() == 1 && loader->workers && loader->pin_memory))
    return std::string(
               "the DataLoader's workers do not keep up: more of them (num_workers), a larger prefetch_factor") +
           (loader->persistent ? "" : ", persistent_workers=True") + ", or less work per sample in the Dataset";
  std::string list;
  for (size_t i = 0; i < missing.size(); ++i) list += (i ? ", " : "") + missing[i];
  return "load data in DataLoader workers (" + list + ")";
}

}  // namespace

std::optional<double> capturedFigure(const StepVerdict& v, const VerdictCause& c) {
  if (v.as_captured || c.captured_ns <= 0 || std::abs(c.ns - c.captured_ns) < 0.1 * c.captured_ns) return std::nullopt;
  return c.captured_ns;
}

bool lateRankExplains(const StepVerdict& v) {
  return v.late && v.late->share > 0.5 && static_cast<double>(v.late->extra_ns) >= kMeasurableNs &&
         static_cast<double>(v.late->extra_ns) >= 0.5 * v.comm_exposed_wait_ns;
}

// Evening out the ranks: for the late rank (and its line) where its own work explains the wait,
// else what the steps' spread says.
std::string balanceText(const StepVerdict& v, const std::string& ms, const std::string& at) {
  std::string wait = "the ranks wait " + ms + " for each other in collectives" + at;
  const auto& late = v.late;
  if (lateRankExplains(v)) {
    std::string text = "even out the ranks: " + wait + ", for " + late->label + ", last to arrive at " +
                       std::to_string(static_cast<int>(std::lround(late->share * 100))) + "% of them";
    if (!late->line.path.empty() && late->line.ns >= kMeasurableNs)
      text += "; " + late->line.path.substr(late->line.path.find_last_of('/') + 1) + ":" +
              std::to_string(late->line.line) + " runs " + formatMilliseconds(static_cast<double>(late->line.ns)) +
              " ms/step longer on " + late->label + " than on the others: give every rank the same work there";
    return text + " (communication settings would not help: moving the data takes " +
           formatMilliseconds(v.comm_transfer_ns) + " ms/step)";
  }
  if (late && late->share > 0.5)
    return "even out the steps: " + wait + ", " + late->label + " last to arrive at " +
           std::to_string(static_cast<int>(std::lround(late->share * 100))) + "% of them, " +
           (static_cast<double>(late->extra_ns) >= kMeasurableNs
                ? "yet its GPU work (" + formatMilliseconds(static_cast<double>(late->extra_ns)) +
                      " ms/step more than the others') explains less than half of the wait"
                : std::string("yet it does no measurably more GPU work than the others (under 0.5 ms/step)")) +
           ": its host is slower (Python work, data, syncs — or a profiler that slows some ranks more than "
           "others), not its GPU; moving the data takes " +
           formatMilliseconds(v.comm_transfer_ns) + " ms/step";
  return "even out the steps: " + wait +
         ", each rank late in turn (none arrives last at more than half of them), so the ranks' steps vary: "
         "look for work that differs between steps (data, host work, syncs) before communication settings; "
         "moving the data takes " +
         formatMilliseconds(v.comm_transfer_ns) + " ms/step";
}

// A run that replays CUDA graphs: the launches left outside them, by line.
std::string outsideGraphsText(const StepVerdict& v, const std::string& ms) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.0f %s a step, and %.0f launches/step are made outside them", v.graph_replays,
                v.graph_replays < 1.5 ? "time" : "times", v.outside_launches);
  std::string where;
  for (size_t i = 0; i < v.outside_lines.size() && i < 3; ++i)
    where += (i ? ", " : ", most at ") + fileLine(v.outside_lines[i].path, v.outside_lines[i].line) + " (" +
             formatFixed(static_cast<double>(v.outside_lines[i].ns) / std::max(1, v.steady), 0) + ")";
  return "launch less outside the CUDA graphs: they replay " + std::string(buf) + where +
         " (the optimizer, clipping, logging: a fused or foreach optimizer, or torch.compile of the optimizer "
         "step, puts them in one launch or the graph); the GPU waits " +
         ms + " for launches";
}

std::string changeText(const VerdictChange& c, const StepVerdict& v) {
  std::string ms = formatMilliseconds(c.ns) + " ms/step";
  // The line named, with its own part of the figure where it holds less than the whole (the
  // whole cause was once told "at" its first line: "2.25 ms/step at train.py:106", 1.47 there).
  std::string place, part, at;
  if (c.line) {
    place = c.line->path.substr(c.line->path.find_last_of('/') + 1) + ":" + std::to_string(c.line->line);
    double own = static_cast<double>(c.line->ns) / std::max(1, v.steady);
    bool some = own > 0 && own < 0.9 * c.ns;
    at = some ? ", " + formatMilliseconds(own) + " of it at " + place : " at " + place;
    if (some) part = " (" + formatMilliseconds(own) + " of it after this one)";
  }
  char buf[160];
  switch (c.change) {
    case Change::CompileOrGraphs:
      std::snprintf(buf, sizeof buf, "%.0f kernels/step", v.kernels);
      return "fuse kernels with torch.compile(model) or replay them as CUDA graphs (mode=\"reduce-overhead\"): " +
             std::string(buf) + " averaging " + formatMicroseconds(v.mean_kernel_ns) + ", queued " +
             formatMicroseconds(v.mean_queue_ns) + " before they start; the GPU waits " + ms + " for launches";
    case Change::DropSync:
      // The figure is the host's blocked time, or the idle the drained queue leaves when longer.
      if (c.ns > v.sync_ns * 1.05)
        return "sync less often: after the sync" + (place.empty() ? "" : " at " + place) +
               " drains the queue the GPU idles " + ms + part +
               " until the host queues new work; keep values on the GPU and read them every N steps";
      return "sync less often: the host blocks " + ms + at + "; keep values on the GPU and read them every N steps";
    case Change::LoaderWorkers:
      return loaderText(v.loader, v.no_loader) + ": the loop waits " + ms + " for data" + at;
    case Change::MoveHostWork:
      return "move host work out of the step or overlap it with GPU work: the GPU idles " + ms + at;
    case Change::HostPace:
      std::snprintf(buf, sizeof buf, "%.0f kernels/step averaging %.0f µs", v.kernels, v.mean_kernel_ns / 1e3);
      return "keep the host ahead of the GPU: " + std::string(buf) +
             " should keep it busy, yet it runs dry between them for " + ms + at +
             " (the host spends longer than the kernel before the next launch: Python work, small copies, syncs); "
             "move that work off the step's path";
    case Change::BalanceRanks:
      return balanceText(v, ms, at);
    case Change::Overlap:
      if (v.comm_paired)
        return "overlap communication with compute: " + ms + " of NCCL transfer is exposed" + at +
               " (fewer, larger all-reduces with DDP's bucket_cap_mb, or launch independent compute before waiting)";
      return "overlap communication with compute, or even out the ranks: " + ms + " of NCCL time is exposed" + at +
             (v.ranks > 1 ? " (the ranks table shows which rank is slower)"
                          : "; a slower rank makes this one wait here (load every rank's report with this one, "
                            "one --profile each, to see which; nsys -o run_%q{RANK} writes one per rank)");
    case Change::Recompiles:
      return recompileText(v, ms);
    case Change::OutsideGraphs:
      return outsideGraphsText(v, ms);
    case Change::CudaGraphs:
      std::snprintf(buf, sizeof buf, "%.0f of its %.0f kernels/step come from Inductor, averaging %.1f µs",
                    v.triton_kernels, v.kernels, v.mean_kernel_ns / 1e3);
      return "the model is compiled, yet launches still set the pace (" + std::string(buf) +
             "): replay them as CUDA graphs with torch.compile(model, mode=\"reduce-overhead\"); the GPU waits " + ms +
             " for launches";
    case Change::Tf32:
      return "let fp32 matmuls use tensor cores (torch.set_float32_matmul_precision(\"high\"), or autocast to bf16): " +
             ms + " of fp32 matmuls";
  }
  return "";
}

namespace {

// The capture's own cost per steady step, and the step replayed without it (`wall_ns`: the
// captured step's median, to judge whether the estimate changes it).
CaptureCost captureCost(const attribution::StepSummary& s, double wall_ns) {
  CaptureCost cap;
  const auto& u = s.unprofiled;
  if (!u.estimated) return cap;
  double n = s.steady;
  cap.estimated = true;
  cap.kineto = u.overhead_ns[static_cast<size_t>(model::CaptureEvent::TraceApi)] > 0;
  for (size_t e = 0; e < model::kCaptureEventKinds; ++e)
    if (u.overhead_ns[e] > 0) cap.by_event.emplace_back(static_cast<model::CaptureEvent>(e), u.overhead_ns[e] / n);
  std::sort(cap.by_event.begin(), cap.by_event.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  cap.overhead_ns = static_cast<double>(u.overhead_total_ns) / n;
  auto api = [&](model::CaptureEvent e) { return static_cast<double>(u.overhead_ns[static_cast<size_t>(e)]) / n; };
  cap.light_overhead_ns = cap.kineto ? api(model::CaptureEvent::TraceApi)
                                     : api(model::CaptureEvent::RuntimeCall) + api(model::CaptureEvent::DriverCall);
  cap.light = cap.overhead_ns <= cap.light_overhead_ns * 1.01;
  cap.wall_ns = static_cast<double>(u.wall_ns);
  cap.wall_min_ns = static_cast<double>(u.wall_min_ns), cap.wall_max_ns = static_cast<double>(u.wall_max_ns);
  cap.busy_share = std::min(1.0, u.busy_share);
  cap.calibrated = u.calibrated, cap.logged_step_ns = static_cast<double>(u.logged_step_ns), cap.scale = u.scale;
  cap.applied = u.steps > 0 && wall_ns > 0 && (wall_ns - cap.wall_ns) >= 0.1 * wall_ns;
  cap.capture_range = s.capture_range;
  return cap;
}

// Waits are means over the steps and the wall a median: one long step must not give the
// typical replayed step more idle time than it has. The idle causes are scaled to fit it (and
// dropped below the floor of a cause); communication is GPU time spent in collectives, not
// idle, and keeps its figure.
void fitToIdleBudget(std::vector<VerdictCause>& causes, double idle, double wall_ns);

void fitToIdle(std::vector<VerdictCause>& causes, double wall_ns, double busy_share) {
  fitToIdleBudget(causes, wall_ns * (1 - busy_share), wall_ns);
}

// The idle causes (but a measured one) scaled to `idle` where they hold more; those left under a
// twentieth of the step dropped.
void fitToIdleBudget(std::vector<VerdictCause>& causes, double idle, double wall_ns) {
  auto idleCause = [](const VerdictCause& c) { return c.kind != Bound::Comm && c.kind != Bound::Ranks && !c.measured; };
  double sum = 0;
  for (const auto& c : causes)
    if (idleCause(c)) sum += c.ns;
  if (sum <= idle || sum <= 0) return;
  double k = idle / sum;
  for (auto& c : causes) {
    if (!idleCause(c)) continue;
    c.ns *= k;
    for (auto& line : c.lines) line.ns = static_cast<int64_t>(static_cast<double>(line.ns) * k);
  }
  double floor = std::max(0.05 * wall_ns, 200e3);
  std::erase_if(causes, [&](const VerdictCause& c) { return idleCause(c) && c.ns < floor; });
}

// The verdict's figures, per steady step, as the story gives them (no causes, bound or changes).
StepVerdict storyFigures(const join::StepStory& st) {
  const join::StepStory* story = &st;
  const auto& s = story->summary;
  double n = s.steady;
  StepVerdict v;
  v.steady = s.steady, v.warmup = s.warmup, v.outliers = s.outliers, v.all_steps = story->all_steps;
  v.median_steps = s.median_steps;
  v.all_counted = s.all_steps;
  v.steps_source = story->steps_source;
  v.timing_from = story->timing_from;
  v.lost_steps = s.lost;
  v.lost_share = s.launches ? static_cast<double>(s.lost_launches) / static_cast<double>(s.launches) : 0;
  // A few percent of lost launches, or a tenth of the steps lost whole, and the figures miss work.
  v.low_confidence = v.lost_share > 0.02 || (s.lost > 0 && 10 * s.lost >= story->all_steps);
  v.wall_ns = static_cast<double>(s.wall_ns);
  v.wall_min_ns = static_cast<double>(s.wall_min_ns), v.wall_max_ns = static_cast<double>(s.wall_max_ns);
  v.busy_ns = static_cast<double>(s.busy_ns);
  v.busy_share = std::min(1.0, s.busy_share);
  v.idle_ns = std::max(0.0, v.wall_ns - v.busy_ns);
  v.kernels = static_cast<double>(s.kernels) / n;
  v.mean_kernel_ns = s.kernels ? static_cast<double>(s.kernel_ns) / static_cast<double>(s.kernels) : 0;
  v.mean_queue_ns = s.kernels ? static_cast<double>(s.queue_ns) / static_cast<double>(s.kernels) : 0;
  v.launch_api_ns = static_cast<double>(s.launch_api_ns) / n;
  v.sync_ns = static_cast<double>(s.sync_ns) / n;
  v.fp32_matmul_ns = static_cast<double>(s.fp32_matmul_ns) / n;
  v.comm_exposed_ns = static_cast<double>(story->comm_exposed_ns) / n;
  v.comm_paired = s.comm_wait_ns + s.comm_transfer_ns > 0;
  v.comm_wait_ns = static_cast<double>(s.comm_wait_ns) / n;
  v.comm_transfer_ns = static_cast<double>(s.comm_transfer_ns) / n;
  v.comm_exposed_wait_ns = static_cast<double>(story->comm_exposed_wait_ns) / n;
  v.late = story->late;
  v.ranks = story->ranks;
  v.world_size = story->world_size;
  v.triton_kernels = static_cast<double>(s.triton_kernels) / n;
  v.compiled = s.kernels > 0 && s.triton_kernels * 10 >= s.kernels;
  v.graphs = s.graph_launches > 0;
  v.graph_replays = static_cast<double>(s.graph_launches) / n;
  v.outside_launches = s.launches > s.graph_launches ? static_cast<double>(s.launches - s.graph_launches) / n : 0;
  // Launches with no line of the user's (the runtime's own) are counted, never named as ":0".
  for (const auto& l : story->launch_lines)
    if (!l.path.empty()) v.outside_lines.push_back(l);
  v.triton_ns = static_cast<double>(s.triton_ns) / n;
  v.compiled_share = s.gpu_ns > 0 ? static_cast<double>(s.triton_ns) / static_cast<double>(s.gpu_ns) : 0;
  v.compiled_lines = story->compiled_lines;
  v.generated = story->generated;
  v.oneoff_gpu_ns = s.oneoff_gpu_ns, v.oneoff_idle_ns = s.oneoff_idle_ns;
  v.oneoff_steps = story->oneoff_steps;
  v.oneoff_lines = story->oneoff_lines;
  v.compiles = story->compiles;
  v.compile_logs = story->compile_logs;
  v.oneoff_compile_ns = s.oneoff_compile_ns;

  return v;
}

// The changes that would help, one per cause of `v` (largest first), with TF32 where fp32
// matmuls cost enough; at most three.
std::vector<VerdictChange> changesFor(const StepVerdict& v) {
  std::vector<VerdictChange> changes;
  auto first = [](const std::vector<join::PlacedLine>& l) {
    return l.empty() ? std::nullopt : std::optional<join::PlacedLine>(l.front());
  };
  for (const auto& c : v.causes) {
    switch (c.kind) {
      case Bound::Launch: {  // fusing helps short kernels; between long ones the host is slow
        // Never advise what the run already does: compiled → graphs; graphs too → what the
        // graphs leave outside, or the host's pace.
        Change change = Change::HostPace;
        if (v.graphs && v.outside_launches >= 1)
          change = Change::OutsideGraphs;
        else if (v.graphs)
          change = Change::HostPace;
        else if (v.mean_kernel_ns < 50e3 && !v.compiled)
          change = Change::CompileOrGraphs;
        else if (v.mean_kernel_ns < 50e3 && !v.graphs)
          change = Change::CudaGraphs;
        changes.push_back({change, c.ns, first(c.lines)});
        break;
      }
      case Bound::Comm:
        // Transfer advice only where moving data, not waiting for a rank, is most of it.
        if (v.comm_paired && v.comm_exposed_wait_ns >= c.ns) break;
        changes.push_back({Change::Overlap, c.ns, first(c.lines)});
        break;
      case Bound::Ranks:
        changes.push_back({Change::BalanceRanks, c.ns, first(c.lines)});
        break;
      case Bound::Sync:
        changes.push_back({Change::DropSync, c.ns, first(c.lines)});
        break;
      case Bound::Input:
        changes.push_back({Change::LoaderWorkers, c.ns, first(c.lines)});
        break;
      case Bound::Host:
        changes.push_back({Change::MoveHostWork, c.ns, first(c.lines)});
        break;
      case Bound::Compile:
        changes.push_back({Change::Recompiles, c.ns, first(c.lines)});
        break;
      case Bound::Gpu:
      case Bound::Unknown:
        break;
    }
  }
  // On a busy GPU, fp32 matmuls on CUDA cores are the time to win first.
  if (v.fp32_matmul_ns >= std::max(0.1 * v.busy_ns, 500e3)) {
    VerdictChange tf32{Change::Tf32, v.fp32_matmul_ns, std::nullopt};
    if (v.bound == Bound::Gpu)
      changes.insert(changes.begin(), tf32);
    else
      changes.push_back(tf32);
  }
  if (changes.size() > 3) changes.resize(3);
  return changes;
}

// The step without the profiler: measured, logged, from a light capture, or the range the
// capture bounds it by (a point from the model only where that range is narrow).
UnprofiledStep unprofiledStep(const join::StepStory& story, const StepVerdict& v) {
  UnprofiledStep u;
  const auto& cap = v.capture;
  double hi = std::max({static_cast<double>(story.wall_hi_ns), v.wall_ns, 1.0});
  double compiling = static_cast<double>(story.compile_idle_ns);
  double lo = std::min(static_cast<double>(story.work_ns) + compiling, hi);
  u.lo_ns = lo, u.hi_ns = hi, u.compile_ns = std::min(compiling, lo);
  u.added_max_ns = hi - lo;
  // The GPU's work in a step: its compute (less what kernels beside a collective were slowed),
  // copies and collectives moving data; never collectives spinning while they wait for a rank,
  // which the profiler's slowing of some ranks makes (4-GPU DDP, computing 34-38 ms a step with
  // a plain step of 38.1 ms, once read "GPU busy: not known ... bound by waiting ranks").
  double work = std::max(static_cast<double>(story.work_ns), 1.0);
  if (const auto& m = story.measured; m && m->median_ns > 0) {
    u.source = m->source == model::StepMeasurement::Source::Measured ? StepSource::Measured : StepSource::StepLog;
    u.wall_ns = static_cast<double>(m->median_ns);
    u.lo_ns = static_cast<double>(m->min_ns > 0 ? m->min_ns : m->median_ns);
    u.hi_ns = static_cast<double>(std::max(m->max_ns, m->median_ns));
    u.steps = m->steps, u.ranks = m->ranks;
    u.measurement = m;
  } else if (!v.timing_from.empty()) {
    u.source = StepSource::LightCapture;  // the light capture's own step (its figures are the story's)
    u.wall_ns = v.wall_ns;
    u.lo_ns = lo, u.hi_ns = std::max(lo, v.wall_ns);
    u.steps = v.steady;
  } else {
    u.source = cap.estimated ? StepSource::Model : StepSource::None;
    if (v.low_confidence)
      u.no_point = NoPoint::LostRecords;
    else if (story.memory_tracking)
      u.no_point = NoPoint::MemoryTracking;
    else if (hi <= 1.3 * lo)
      // Any point of so narrow a range is within 30% of the truth: the model's, kept inside it.
      u.wall_ns = std::clamp(cap.estimated ? cap.wall_ns : hi, lo, hi);
    else
      u.no_point = cap.estimated ? NoPoint::Unvalidated : NoPoint::NoModel;
  }
  if (u.wall_ns) {
    u.busy_share = std::min(1.0, work / *u.wall_ns);
    // A measured step shorter than the capture's own GPU work by over a tenth: the capture's work
    // is not the run's (a model's point is never below that work).
    u.busy_known = work <= 1.1 * *u.wall_ns;
    u.added_ns = std::clamp(v.wall_ns - *u.wall_ns, 0.0, v.wall_ns);
    if (u.source == StepSource::Measured || u.source == StepSource::StepLog) u.added_max_ns = u.added_ns;
  } else {
    // A bound that holds at every point of the range: GPU work no profiler makes (compute,
    // collectives moving data, waits the late rank's own work explains) for a third (collectives)
    // or four fifths (the GPU) of even the captured step.
    double transfer = std::max(0.0, v.comm_exposed_ns - v.comm_exposed_wait_ns);
    double explained =
        lateRankExplains(v) ? std::min(v.comm_exposed_wait_ns, static_cast<double>(v.late->extra_ns)) : 0;
    double unexplained = std::max(0.0, v.comm_exposed_wait_ns - explained);
    if (compiling >= hi / 2)
      u.bound = Bound::Compile;  // the compiler, not the profiler, holds half of even the captured step
    else if (transfer + explained >= hi / 3)
      u.bound = explained > transfer ? Bound::Ranks : Bound::Comm;
    else if ((v.busy_ns - unexplained) / hi >= 0.8)
      u.bound = Bound::Gpu;
  }
  return u;
}

}  // namespace

const char* stepSourceName(StepSource s) {
  switch (s) {
    case StepSource::Measured:
      return "measured";
    case StepSource::StepLog:
      return "step-log";
    case StepSource::LightCapture:
      return "light-capture";
    case StepSource::Model:
      return "model";
    case StepSource::None:
      return "none";
  }
  return "?";
}

namespace {

// The causes of idle time and the bound, from one set of figures: the capture's, or the
// replayed steps'. A sync costs the host's blocked time or the idle it leaves, whichever is
// more (the replay knows only the idle).
struct Figures {
  double wall, busy, steps, blocked;
  const std::array<int64_t, attribution::kWaitCount>& waits;
};

class CauseFinder {
 public:
  CauseFinder(const join::StepStory& story, const StepVerdict& v) : story_(story), v_(v) {}

  // Each cause of at least a twentieth of the wall (0.2 ms at least), largest first. With
  // `captured` (the capture's causes), each line keeps its share of the capture's cause.
  std::vector<VerdictCause> causesOf(const Figures& f, const std::vector<VerdictCause>* captured) const {
    std::vector<VerdictCause> causes;
    double floor = std::max(0.05 * f.wall, 200e3);
    auto wait = [&](attribution::Wait w) { return static_cast<double>(f.waits[static_cast<size_t>(w)]) / f.steps; };
    auto add = [&](Bound kind, double ns, std::vector<join::PlacedLine> l) {
      for (auto it = l.begin(); it != l.end();)
        if (lost(*it))
          ns -= static_cast<double>(it->ns) / v_.steady, it = l.erase(it);
        else
          ++it;
      // The replayed step's lines keep their share of the cause: scaled from the capture's.
      if (captured) {
        auto it = std::find_if(captured->begin(), captured->end(), [&](const auto& c) { return c.kind == kind; });
        double was = it != captured->end() ? it->ns : 0;
        for (auto& line : l) line.ns = was > 0 ? static_cast<int64_t>(static_cast<double>(line.ns) * ns / was) : 0;
      }
      if (ns >= floor) causes.push_back({kind, ns, std::move(l)});
    };
    add(Bound::Launch, wait(attribution::Wait::Launch), lines(attribution::Wait::Launch));
    add(Bound::Sync, std::max(f.blocked, wait(attribution::Wait::Sync)),
        f.blocked >= wait(attribution::Wait::Sync) && !story_.sync_lines.empty() ? story_.sync_lines
                                                                                 : lines(attribution::Wait::Sync));
    add(Bound::Input, wait(attribution::Wait::Input), lines(attribution::Wait::Input));
    add(Bound::Host, wait(attribution::Wait::Host), lines(attribution::Wait::Host));
    // Paired collectives split the exposed time: ranks waiting for each other, and moving data;
    // each line keeps its share of either part (never the whole exposed time on both).
    double moving = v_.comm_exposed_ns - v_.comm_exposed_wait_ns;
    add(Bound::Comm, moving, commShare(moving));
    if (v_.comm_exposed_wait_ns > 0) add(Bound::Ranks, v_.comm_exposed_wait_ns, commShare(v_.comm_exposed_wait_ns));
    add(Bound::Compile, wait(attribution::Wait::Compile), lines(attribution::Wait::Compile));
    std::sort(causes.begin(), causes.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
    return causes;
  }

  // What bounds the step: communication the GPU waits in for a third of the step (its busy
  // time then is not compute); a host blocked for half the step waits on the GPU every step; a
  // GPU busy 80% of it is the limit; else the largest cause of idle time.
  Bound boundOf(const Figures& f, const std::vector<VerdictCause>& causes) const {
    if (v_.comm_exposed_ns >= f.wall / 3)
      return v_.comm_exposed_wait_ns * 2 > v_.comm_exposed_ns ? Bound::Ranks : Bound::Comm;
    if (f.blocked >= 0.5 * f.wall) return Bound::Sync;
    if (f.busy < 0.8 && causes.empty() && v_.low_confidence) return Bound::Unknown;
    if (f.busy >= 0.8 || causes.empty()) return Bound::Gpu;
    return causes.front().kind;
  }

 private:
  std::vector<join::PlacedLine> lines(attribution::Wait w) const { return story_.wait_lines[static_cast<size_t>(w)]; }
  // A line whose launches lost their GPU records idles the GPU only on paper: no cause there.
  bool lost(const join::PlacedLine& l) const {
    return std::any_of(story_.lost_lines.begin(), story_.lost_lines.end(),
                       [&](const join::PlacedLine& x) { return x.line == l.line && x.path == l.path; });
  }
  std::vector<join::PlacedLine> commShare(double part) const {
    auto l = story_.comm_lines;
    double k = v_.comm_exposed_ns > 0 ? part / v_.comm_exposed_ns : 0;
    for (auto& line : l) line.ns = static_cast<int64_t>(static_cast<double>(line.ns) * k);
    return l;
  }

  const join::StepStory& story_;
  const StepVerdict& v_;
};

// Measured (or logged): the step's idle is known, and what the capture shows of it is told to
// fit it; the bound follows the fitted causes where the GPU is not busy most of the step.
void fitToMeasured(StepVerdict& v) {
  auto& up = v.unprofiled;
  bool refit = false;
  if (!lateRankExplains(v)) {
    // Waits in collectives that the late rank's own work does not explain: a profiler slowing
    // the ranks unevenly makes them too, so only the explained part is kept.
    for (auto& c : v.causes) {
      if (c.kind != Bound::Ranks) continue;
      double kept = v.late ? std::min(c.ns, static_cast<double>(v.late->extra_ns)) : 0;
      for (auto& line : c.lines)
        line.ns = c.ns > 0 ? static_cast<int64_t>(static_cast<double>(line.ns) * kept / c.ns) : 0;
      c.ns = kept, refit = true;
    }
    double floor = std::max(0.05 * *up.wall_ns, 200e3);
    std::erase_if(v.causes, [&](const VerdictCause& c) { return c.kind == Bound::Ranks && c.ns < floor; });
  }
  if (!v.capture.applied && *up.wall_ns < 0.9 * v.wall_ns && up.busy_known) {
    fitToIdle(v.causes, *up.wall_ns, up.busy_share);
    refit = true;
  }
  std::sort(v.causes.begin(), v.causes.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
  if (refit && up.busy_share < 0.8) v.bound = v.causes.empty() ? Bound::Unknown : v.causes.front().kind;
}

// The loop's wait for data, measured without the profiler in the same run (sightline capture
// timed each DataLoader fetch of its timed steps): the input cause is that measurement, on the
// loop line that asks for batches; the capture's view of input gives way to it, and the other
// idle causes share what idle is left. A starved loader once read "launch-bound" (resnet.py, one
// worker: the GPU idled because no batch was ready, and the next launch's line took the blame).
void addMeasuredInput(StepVerdict& v, const join::StepStory& story) {
  const auto& m = story.measured;
  auto& up = v.unprofiled;
  if (!m || m->input_ns < 0 || !up.wall_ns || up.source != StepSource::Measured) return;
  double wall = *up.wall_ns;
  double input = std::min(static_cast<double>(m->input_ns), wall);
  std::erase_if(v.causes, [](const VerdictCause& c) { return c.kind == Bound::Input; });
  double floor = std::max(0.05 * wall, 200e3);
  if (input >= floor) {
    double idle = up.busy_known ? wall * (1 - up.busy_share) : wall;
    fitToIdleBudget(v.causes, std::max(0.0, idle - input), wall);
    VerdictCause c{Bound::Input, input, {}, 0, true};
    if (story.input_site) {
      join::PlacedLine at = *story.input_site;
      at.ns = static_cast<int64_t>(input * std::max(1, v.steady));
      c.lines.push_back(std::move(at));
    }
    v.causes.push_back(std::move(c));
  }
  std::sort(v.causes.begin(), v.causes.end(), [](const auto& a, const auto& b) { return a.ns > b.ns; });
  if (up.busy_share < 0.8 && !v.causes.empty() && v.causes.front().kind == Bound::Input) v.bound = Bound::Input;
}

// Each cause's figure as captured (what the step bars draw), from every cause of the capture.
// A cause of idle time fitted to the step without the profiler is never more than it was as
// captured (the replay once told "14.1 ms/step, 11.1 as captured").
void withCaptured(StepVerdict& v, const std::vector<VerdictCause>& every_captured) {
  for (auto& c : v.causes) {
    auto it = std::find_if(every_captured.begin(), every_captured.end(),
                           [&](const VerdictCause& e) { return e.kind == c.kind; });
    c.captured_ns = it != every_captured.end() ? it->ns : 0;
    if (c.measured) continue;  // the measurement stands, whatever the capture showed
    bool idle = c.kind != Bound::Comm && c.kind != Bound::Ranks;
    if (idle && c.captured_ns > 0 && c.ns > c.captured_ns) {
      double k = c.captured_ns / c.ns;
      for (auto& line : c.lines) line.ns = static_cast<int64_t>(static_cast<double>(line.ns) * k);
      c.ns = c.captured_ns;
    }
  }
}

// A capture that lost GPU records in its steps (a thread's kernels missing in every step, or the
// capture ending before the GPU delivered them) shows idle where the GPU ran the missing work: no
// busy share, bound, cause or change rests on that. What was measured without the profiler (the
// loop's wait for data) stands, and bounds the step where it is half of it. ImageNet's example,
// its autograd thread's kernels lost, once read "host-bound ... other host work at loss.backward()".
void withoutLostRecords(StepVerdict& v) {
  if (!v.low_confidence) return;
  auto& up = v.unprofiled;
  std::erase_if(v.causes, [](const VerdictCause& c) { return !c.measured; });
  up.busy_known = false;
  bool measured_half = up.wall_ns && !v.causes.empty() && v.causes.front().ns * 2 >= *up.wall_ns;
  v.bound = measured_half ? v.causes.front().kind : Bound::Unknown;
  up.bound = v.bound == Bound::Unknown ? std::nullopt : std::optional<Bound>(v.bound);
}

}  // namespace

std::optional<StepVerdict> stepVerdict(const join::StepStory* story) {
  if (!story || story->summary.steady == 0) return std::nullopt;
  const auto& s = story->summary;
  double n = s.steady;
  StepVerdict v = storyFigures(*story);
  if (!story->script.empty()) v.script = story->script.substr(story->script.find_last_of('/') + 1);
  v.loader = story->loaders.settings;
  v.no_loader = story->loaders.none;

  // The step without the profiler: when the capture changed it by a tenth or more, every cause
  // and change below is the replayed step's (the host's own time, not the profiler's).
  v.capture = captureCost(s, v.wall_ns);
  const auto& cap = v.capture;
  CauseFinder finder(*story, v);
  Figures captured{v.wall_ns, v.busy_share, n, v.sync_ns, s.wait_ns};
  v.causes = finder.causesOf(captured, nullptr);
  v.bound = v.capture.captured_bound = finder.boundOf(captured, v.causes);
  const std::vector<VerdictCause> as_captured = v.causes;
  // Every cause of the capture, however small: the figure beside a fitted one, and each
  // replayed line's share.
  const std::vector<VerdictCause> every_captured =
      finder.causesOf(Figures{0, v.busy_share, n, v.sync_ns, s.wait_ns}, nullptr);
  if (cap.applied) {
    Figures replayed{cap.wall_ns, cap.busy_share, n, 0, s.unprofiled.wait_ns};
    v.causes = finder.causesOf(replayed, &every_captured);
    fitToIdle(v.causes, cap.wall_ns, cap.busy_share);
    v.bound = finder.boundOf(replayed, v.causes);
  }

  v.unprofiled = unprofiledStep(*story, v);
  auto& up = v.unprofiled;
  if (!up.wall_ns) {
    // Without a point, what the capture shows of the host is the profiler's as much as the
    // program's: no bound the range does not bear out; the causes and changes are as captured
    // (never the model's replay, which no measurement confirms, under the words "as captured").
    v.causes = as_captured;
    v.bound = up.bound.value_or(Bound::Unknown);
    v.as_captured = true;
    withoutLostRecords(v);
    withCaptured(v, every_captured);
    v.changes = changesFor(v);
    return v;
  }
  if (up.source != StepSource::Model) fitToMeasured(v);
  addMeasuredInput(v, *story);
  // A GPU busy four fifths of the step with its own work bounds it (the busy share counts compute,
  // copies and moving data, never waiting), unless moving data is what keeps it busy, or a late
  // rank's own extra work makes the others wait (then evening out the ranks is the change).
  if (up.busy_known && up.busy_share >= 0.8 && v.bound != Bound::Comm &&
      !(v.bound == Bound::Ranks && lateRankExplains(v)))
    v.bound = Bound::Gpu;
  up.bound = v.bound == Bound::Unknown ? std::nullopt : std::optional<Bound>(v.bound);
  withoutLostRecords(v);
  withCaptured(v, every_captured);
  v.changes = changesFor(v);
  return v;
}

}  // namespace sightline::features
