// The verdict's rows (story_verdict.h): each sentence made once, from the verdict's numbers.
#include "analysis/features/story_verdict.h"

#include <algorithm>
#include <cstdio>

#include "analysis/features/step_headline.h"
#include "analysis/features/units.h"

namespace sightline::features {
namespace {

using C = StoryChunk;

std::string fileName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string captureEventLabel(model::CaptureEvent e) {
  switch (e) {
    case model::CaptureEvent::RuntimeCall:
    case model::CaptureEvent::DriverCall:
    case model::CaptureEvent::TraceApi:
      return "CUDA API tracing";
    case model::CaptureEvent::NativeBacktrace:
      return "native backtraces (--cudabacktrace)";
    case model::CaptureEvent::PythonBacktrace:
      return "Python backtraces";
    case model::CaptureEvent::AutogradRange:
      return "autograd ranges";
    case model::CaptureEvent::ShapesRange:
      return "autograd ranges' shapes";
    case model::CaptureEvent::TraceOp:
      return "operator events";
    case model::CaptureEvent::TraceShapes:
      return "record_shapes";
    case model::CaptureEvent::TracePython:
      return "with_stack";
  }
  return "?";
}

// The step as captured, the step without the profiler, the confidence and the profiler's cost.
void stepRows(const StepVerdict& v, Story& out) {
  // The steps the median and the range stand on: a loop's last step, cut short where it ends,
  // is left out (it once read "over 5 steady steps (102–126 ms)" with the fifth at 90.4 ms).
  bool cut = v.median_steps > 0 && v.median_steps < v.steady;
  StoryLine step;
  step << C::ms(v.wall_ns) << " ms median as captured over "
       << (cut ? std::to_string(v.median_steps) + " of the " + std::to_string(v.steady) + " steady steps ("
               : std::to_string(v.steady) + " steady steps (")
       << C::ms(v.wall_min_ns) << "–" << C::ms(v.wall_max_ns) << " ms"
       << (!cut          ? ""
           : v.ranks > 1 ? "; each rank's last, cut short where its loop ends, left out"
                         : "; the last, cut short where the loop ends, left out")
       << "), GPU busy ";
  // Lost records: the GPU ran more than the capture shows, so its busy share is a floor and its
  // idle time not known.
  if (v.low_confidence)
    step << "at least " << C::share(v.busy_share) << " (records lost)";
  else
    step << C::share(v.busy_share) << ", idle " << C::ms(v.idle_ns) << " ms/step";
  out.push_back(storyRow("Step", std::move(step)));
  StoryLine unprofiled;
  unprofiled << unprofiledText(v);
  out.push_back(storyRow("Unprofiled", std::move(unprofiled)));
  out.back().title = "Without the profiler";
  if (v.low_confidence) {
    StoryLine low;
    low << "confidence low: " << confidenceReason(v);
    out.push_back(storyRow("", std::move(low), RowRole::Warning));
  }
  if (auto cost = captureCostStory(v); !cost.empty()) out.push_back(storyRow("Profiler", std::move(cost)));
}

// Each cause with its figure (and the captured one where it was fitted) and its lines; then the
// changes to try, and how to measure the step where it was not.
void causeRows(const StepVerdict& v, Story& out) {
  // Under a label of their own: below the Profiler row they once read as the profiler's cost.
  for (size_t k = 0; k < v.causes.size(); ++k) {
    out.push_back(storyRow(k == 0 ? "Waits" : "", causeStory(v, v.causes[k], k == 0, 3), RowRole::Cause));
    if (k == 0) out.back().title = "Why the GPU waits";
  }
  for (size_t i = 0; i < v.changes.size(); ++i) {
    StoryLine change;
    change << changeText(v.changes[i], v);
    out.push_back(storyRow(i == 0 ? "Try" : "", std::move(change), RowRole::Change));
    if (v.as_captured) out.back().qualifier = "as captured";
  }
  if (auto command = measureCommand(v); !command.empty()) {
    StoryLine line;
    line << C::code(command) << kMeasureWhy;
    out.push_back(storyRow("Measure", std::move(line)));
  }
}

// What torch.compile ran and compiled: its kernels' time and lines, the compilations, and the
// TORCH_TRACE logs of other runs set aside.
void compileRows(const StepVerdict& v, Story& out) {
  if (v.triton_ns > 0) {
    char kernels[32];
    std::snprintf(kernels, sizeof kernels, "%.0f", v.triton_kernels);
    StoryLine line;
    line << C::ms(v.triton_ns) << " ms/step (" << C::share(v.compiled_share) << " of GPU time) in " << kernels
         << " torch.compile kernels/step";
    if (!v.compiled_lines.empty()) {
      line << (v.generated.mapped > 0 ? ", most on" : ", on");
      for (size_t i = 0; i < v.compiled_lines.size() && i < 3; ++i)
        line << (i ? ", " : " ") << C::place(v.compiled_lines[i].path, v.compiled_lines[i].line);
    }
    line << compiledCodeStory(v.generated);
    out.push_back(storyRow("Compiled", std::move(line)));
  }
  if (!v.compiles.empty()) out.push_back(storyRow("Compile", compileSummaryStory(v.compiles)));
  if (!v.compile_logs.set_aside.empty()) {
    // Another run's TORCH_TRACE log beside this one's: what was not counted, and why.
    const auto& aside = v.compile_logs.set_aside;
    StoryLine line;
    line << std::to_string(aside.size()) + " TORCH_TRACE " + (aside.size() == 1 ? "log" : "logs") +
                " of another run, not counted (";
    for (size_t i = 0; i < aside.size() && i < 3; ++i)
      line << (i ? "; " : "") << C::code(fileName(aside[i].log)) << ": " + aside[i].reason;
    if (aside.size() > 3) line << "; " + std::to_string(aside.size() - 3) + " more";
    line << ")";
    out.push_back(storyRow(v.compiles.empty() ? "Compile" : "", std::move(line)));
    out.back().title = "Set aside";
  }
}

// The work outside the steady steps (warm-up, outliers, compiling), told once, not per step.
void oneoffRows(const StepVerdict& v, Story& out) {
  // Told where it shows as a figure (0.01 ms or more) or a step stands out; never "0.00 ms of GPU
  // time and 0.00 ms of GPU idle".
  bool outlier = std::any_of(v.oneoff_steps.begin(), v.oneoff_steps.end(),
                             [](const auto& o) { return o.kind == attribution::StepKind::Outlier; });
  bool told = v.oneoff_gpu_ns + v.oneoff_idle_ns >= 5'000 || outlier || v.warmup > 0;
  if (told) {
    StoryLine line;
    line << C::ms(static_cast<double>(v.oneoff_gpu_ns)) << " ms of GPU time and "
         << C::ms(static_cast<double>(v.oneoff_idle_ns)) << " ms of GPU idle outside the steady steps";
    if (v.oneoff_compile_ns > 0)
      line << " (" << C::ms(static_cast<double>(v.oneoff_compile_ns)) << " ms of it while torch.compile compiled)";
    if (v.warmup > 0) line << "; " + std::to_string(v.warmup) + " warm-up step" + (v.warmup > 1 ? "s" : "");
    for (const auto& o : v.oneoff_steps) {
      if (o.kind != attribution::StepKind::Outlier) continue;
      line << "; step " + std::to_string(o.index) + " " << C::ms(static_cast<double>(o.wall_ns)) << " ms";
      if (!o.top.path.empty()) line << " ran " << C::place(o.top.path, o.top.line);
      if (o.compile_ns > 0) line << " (" << C::ms(static_cast<double>(o.compile_ns)) << " ms compiling)";
    }
    if (!v.oneoff_lines.empty()) {
      line << "; most at";
      for (size_t i = 0; i < v.oneoff_lines.size() && i < 3; ++i)
        line << (i ? ", " : " ") << placedFigure(v.oneoff_lines[i], 1) << " ms";
    }
    out.push_back(storyRow("One-off", std::move(line)));
    out.back().title = "One-off (not per step)";
  }
  if (v.all_counted) {
    // Under the One-off row it notes why nothing was set aside; alone it is that row.
    StoryLine line;
    line << (told ? "every step counted (--all-steps or the allSteps setting, or a capture range)"
                  : "none: every step counted as steady (--all-steps or the allSteps setting, or a capture range)");
    out.push_back(storyRow(told ? "" : "One-off", std::move(line), RowRole::Note));
    if (!told) out.back().title = "One-off (not per step)";
  }
}

// What places the kernels of a wrapper read without its post-grad graph.
constexpr const char* kLinelessRemedy =
    "its post-grad graph places them; name with --compiled-code the cache's fxgraph/ entries (the same "
    "TORCHINDUCTOR_CACHE_DIR), a TORCH_COMPILE_DEBUG=1 folder (output_code.py beside fx_graph_transformed.py) "
    "or a TORCH_TRACE folder";

}  // namespace

Story verdictStory(const StepVerdict& v) {
  Story out;
  stepRows(v, out);
  causeRows(v, out);
  compileRows(v, out);
  oneoffRows(v, out);
  return out;
}

std::string confidenceReason(const StepVerdict& v) {
  if (!v.low_confidence) return {};
  std::string out = "the capture lost GPU records in its steps";
  if (v.lost_steps > 0)
    out += ": " + std::to_string(v.lost_steps) + " of " + std::to_string(v.all_steps) + " steps had " +
           "almost none and are left out";
  if (v.lost_share > 0.0005)
    out +=
        (v.lost_steps > 0 ? ", and " : ": ") + formatShare(v.lost_share) + " of the counted steps' launches have none";
  return out + "; what those launches ran is missing from the figures";
}

StoryLine captureCostStory(const StepVerdict& v) {
  const auto& cap = v.capture;
  const auto& u = v.unprofiled;
  StoryLine out;
  if (u.wall_ns && u.source != StepSource::Model && u.source != StepSource::LightCapture) {
    // Measured: what the capture added is the difference, no model in it.
    if (u.added_ns < std::max(0.01 * v.wall_ns, 50e3)) return {};
    out << "the capture added " << C::ms(u.added_ns) << " ms/step: " << C::ms(v.wall_ns) << " ms captured, "
        << C::ms(*u.wall_ns) << " ms without it";
  } else {
    if (!cap.estimated || cap.overhead_ns < std::max(0.01 * v.wall_ns, 50e3) || u.added_max_ns <= 0) return {};
    out << "the capture added at most " << C::ms(u.added_max_ns)
        << " ms/step (the range's top, the captured steps' upper quartile, less the GPU's own work)";
  }
  if (!cap.estimated || cap.by_event.empty()) return out;
  // The kinds of events it recorded, costliest first by the model (named, not priced: the
  // model's prices are not validated), CUDA API tracing counted once.
  std::vector<std::pair<std::string, double>> parts;
  for (const auto& [e, ns] : cap.by_event) {
    std::string label = captureEventLabel(e);
    auto it = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == label; });
    if (it == parts.end())
      parts.emplace_back(label, ns);
    else
      it->second += ns;
  }
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "; it recorded ";
  for (size_t i = 0; i < parts.size() && i < 4; ++i) out << (i ? ", " : "") << parts[i].first;
  return out;
}

StoryLine compiledCodeStory(const join::StepStory::Generated& g) {
  StoryLine out;
  std::string read_from = g.read_from.empty() ? std::string("?") : g.read_from[0];
  if (g.mapped > 0 || g.mapped_calls > 0) {
    out << " (model lines from the generated code in " << read_from;
    if (g.mapped == 0) out << ", each launch of a traced call placed by its kernel's name and order";
    out << (g.provenance
                ? ", with whole stacks from Inductor's line map)"
                : "; each kernel's innermost line only: run with INDUCTOR_PROVENANCE=1 for the lines above it)");
    if (g.substituted_modules > 0)
      out << "; " + std::to_string(g.substituted_modules) + (g.substituted_modules == 1 ? " module" : " modules") +
                 " found there under another name (generated again: matched by the lines of their launches)";
    if (g.missing_modules > 0)
      out << "; " + std::to_string(g.missing_modules) + " of the run's generated modules were not found there" +
                 " (their work stays on the compiled function)";
    if (g.lineless_modules > 0)
      out << "; " + std::to_string(g.lineless_modules) + " found as wrapper code only (their work stays on the " +
                 "compiled function: " + kLinelessRemedy + ")";
    return out;
  }
  out << ": the compiled function's lines carry them";
  if (g.stacks == 0 && g.traced_calls == 0)
    return out << " (the profile's Python stacks do not reach torch.compile's generated code)";
  if (g.lineless_modules > 0 && g.missing_modules == 0) {
    // Found, but as wrappers without their graph: naming the same folder again would not help.
    out << ". " << (g.lineless_modules == 1 ? "Its generated module was" : "Its generated modules were") << " found"
        << (g.read_from.empty() ? std::string() : " in " + g.read_from[0])
        << " as wrapper code only, which names no line of the model: " << kLinelessRemedy;
    return out;
  }
  std::string was = g.run_from.empty() ? std::string() : g.run_from[0];
  out << ". Its model lines need the code torch.compile generated";
  if (!g.read_from.empty()) out << " (not found in " + g.read_from[0] + ")";
  out << ": the run kept it in " + (was.empty() ? std::string("its Inductor cache") : was) +
             "; name that folder or a copy with --compiled-code DIR (editor setting sightline.compiledCode)";
  if (was.empty() || was.starts_with("/tmp/"))
    out << ", and set TORCHINDUCTOR_CACHE_DIR to a folder inside the project before the next run so the code stays "
           "with it";
  return out;
}

StoryLine compileSummaryStory(const std::vector<join::CompiledFunctionSummary>& compiles) {
  StoryLine out;
  for (size_t i = 0; i < compiles.size() && i < 3; ++i) {
    const auto& f = compiles[i];
    if (i) out << "; ";
    std::string file = fileName(f.function.file);
    if (f.function.line > 0) file += ":" + std::to_string(f.function.line);
    out << C::code(f.function.function) << " (" << file << "): ";
    if (f.profile_only) {
      for (size_t b = 0; b < f.breaks.size(); ++b)
        out << std::string(b ? ", " : "") + "graph break at line " + std::to_string(f.breaks[b].line);
      out << " (Dynamo's resume function ran in the profile); its reason and the compile cost are in a TORCH_TRACE "
             "folder: run with TORCH_TRACE=<dir> and name it with --compiled-code";
      continue;
    }
    out << std::to_string(f.compiles) + (f.compiles == 1 ? " compilation" : " compilations") + " in " +
               formatSeconds(f.seconds);
    if (f.graphs > 1) out << ", " + std::to_string(f.graphs) + " graphs";
    for (const auto& b : f.breaks) {
      out << ", graph break at line " + std::to_string(b.line);
      if (!b.reason.empty()) out << " (" + b.reason + (b.hint.empty() ? "" : "; Dynamo's hint: " + b.hint) + ")";
    }
    if (f.recompiles > 0) {
      out << ", " + std::to_string(f.recompiles) + (f.recompiles == 1 ? " recompile" : " recompiles") + " (";
      for (size_t r = 0; r < f.recompile_reasons.size() && r < 3; ++r)
        out << (r ? ", " : "") + std::to_string(f.recompile_reasons[r].count) + "× "
            << C::code(f.recompile_reasons[r].text);
      out << ")";
    } else {
      out << ", no recompiles";
    }
    if (f.recompile_limit > 0)
      out << ", recompile limit (" + std::to_string(f.recompile_limit) + ") hit: runs uncompiled since";
  }
  if (compiles.size() > 3) out << "; " + std::to_string(compiles.size() - 3) + " more compiled functions";
  return out;
}

}  // namespace sightline::features
