// The headline's text, from the verdict's numbers.
#include "analysis/features/step_headline.h"

#include <algorithm>
#include <cstdio>

#include "analysis/features/profile_view.h"

namespace sightline::features {

std::string unprofiledBoundText(const UnprofiledStep& u) {
  return u.bound ? boundName(*u.bound) : "bound: cannot tell from this capture";
}

std::string unprofiledSourceShort(const UnprofiledStep& u) {
  switch (u.source) {
    case StepSource::Measured:
      return "measured";
    case StepSource::StepLog:
      return "from the script's log";
    case StepSource::LightCapture:
      return "from the light capture";
    case StepSource::Model:
    case StepSource::None:
      return "estimated";
  }
  return "";
}

std::string unprofiledReason(const StepVerdict& v) {
  const auto& u = v.unprofiled;
  auto count = [](int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  if (u.measurement && u.source == StepSource::Measured) {
    const auto& m = *u.measurement;
    // Steps of every rank: per rank where they divide evenly (20 steps of 2 ranks, not "40 steps").
    std::string over = m.ranks > 1 && m.steps % m.ranks == 0 ? count(m.steps / m.ranks, "step", "steps") +
                                                                   " on each of " + std::to_string(m.ranks) + " ranks"
                       : m.ranks > 1 ? count(m.steps, "step", "steps") + " of " + std::to_string(m.ranks) + " ranks"
                                     : count(m.steps, "step", "steps");
    // A loop with no optimizer is stepped by its backward() calls: say so, it is what a step means.
    std::string by = m.step_by == "backward" ? "; a step is each backward(): the loop has no optimizer" : "";
    // Under nsys the timed steps ran with nsys loaded, outside its range: say so (docs/capture.md
    // gives what its presence was measured to cost).
    std::string how = m.profiler == "nsys" ? "measured with nsys loaded but not recording, in the same run over "
                                           : "measured without the profiler in the same run over ";
    return how + over + " (" + m.from + ", by sightline capture" + by + ")";
  }
  if (u.measurement && u.source == StepSource::StepLog) {
    const auto& m = *u.measurement;
    std::string out = "from the script's own log of a run without the profiler (" + m.from + ": " +
                      count(m.log_lines, "line", "lines") + " of " + m.log_format;
    if (m.whole_run)
      out += ", one figure over the whole run, warm-up and evaluation included";
    else if (m.averaged)
      out += ", standing for " + count(m.steps, "step", "steps");
    if (m.log_set_aside > 0)
      out += "; " + count(m.log_set_aside, "line", "lines") + " with a time set aside: epoch totals, evaluation";
    return out + ")";
  }
  if (u.source == StepSource::LightCapture)
    return "the light capture " + v.timing_from + "'s own step (tracing CUDA calls alone adds a little)";
  switch (u.no_point) {
    case NoPoint::None:
      // The range's own figures: its floor is the GPU's own work per step (the busiest rank's).
      return "not measured, but the GPU's own work per step fills " + formatShare(u.hi_ns > 0 ? u.lo_ns / u.hi_ns : 0) +
             " of the captured step, so any figure in " + formatMilliseconds(u.lo_ns) + "–" +
             formatMilliseconds(u.hi_ns) + " ms is within 30% of the step without the profiler";
    case NoPoint::Unvalidated:
      return "not measured; the model of the profiler's cost has missed by over 30% on scripts it was not fitted on, "
             "so only the range is sure";
    case NoPoint::LostRecords:
      return "not measured, and the capture lost GPU records in its steps: only the range is sure";
    case NoPoint::MemoryTracking:
      return "not measured, and the capture tracked every allocation (profile_memory, --cuda-memory-usage), a cost "
             "never modeled: only the range is sure";
    case NoPoint::NoModel:
      return "not measured, and the capture recorded nothing of its own cost: only the range is sure";
  }
  return "";
}

std::string unprofiledText(const StepVerdict& v) {
  const auto& u = v.unprofiled;
  if (!u.wall_ns)
    return "between " + formatMilliseconds(u.lo_ns) +
           (u.compile_ns > 0 ? " ms (the GPU's own work and torch.compile compiling per step) and "
                             : " ms (the GPU's own work per step) and ") +
           formatMilliseconds(u.hi_ns) + " ms (the captured steps' upper quartile): " + unprofiledReason(v) + " · " +
           unprofiledBoundText(u);
  std::string out = formatMilliseconds(*u.wall_ns) + " ms, " + unprofiledReason(v);
  if ((u.source == StepSource::Measured || u.source == StepSource::StepLog) && u.hi_ns > u.lo_ns)
    out += ", " + formatMilliseconds(u.lo_ns) + "–" + formatMilliseconds(u.hi_ns) + " ms";
  if (!u.busy_known)
    return out + "; GPU busy: not known (" +
           (v.low_confidence ? "the capture lost GPU records in its steps: what they ran is not in its GPU time"
                             : "the capture's GPU work per step is more than this step") +
           ") · " + unprofiledBoundText(u);
  return out + "; GPU busy " + formatShare(u.busy_share) + " · " + unprofiledBoundText(u);
}

std::string unprofiledSummary(const StepVerdict& v) {
  const auto& u = v.unprofiled;
  if (!u.wall_ns)
    return "without the profiler " + formatMilliseconds(u.lo_ns) + "–" + formatMilliseconds(u.hi_ns) +
           " ms (not measured) · " + unprofiledBoundText(u);
  return "without the profiler " + formatMilliseconds(*u.wall_ns) + " ms (" + unprofiledSourceShort(u) + ") · " +
         (u.busy_known ? "GPU " + formatShare(u.busy_share) + " busy · " : "") + unprofiledBoundText(u);
}

std::string measureCommand(const StepVerdict& v) {
  const auto& u = v.unprofiled;
  if (u.wall_ns) return {};
  std::string script = v.script.empty() ? "YOUR_SCRIPT.py" : v.script;
  // Several ranks: the launcher's command as the run used it (torchrun's on one node), also for
  // a report of one rank of several.
  int ranks = std::max(v.ranks, v.world_size);
  std::string command =
      ranks > 1 ? "torchrun --nproc_per_node=" + std::to_string(ranks) + " " + script : "python " + script;
  return "sightline capture -- " + command;
}

const char* const kMeasureWhy =
    " measures the step without the profiler: it times steps with no profiler, then profiles a few in the same run "
    "(docs/capture.md)";

std::string measureAdvice(const StepVerdict& v) {
  std::string command = measureCommand(v);
  return command.empty() ? "" : "`" + command + "`" + kMeasureWhy;
}

}  // namespace sightline::features
