// Line costs moved through a document's edits.
#include "analysis/join/file_costs.h"

namespace sightline::join {

std::shared_ptr<const StepStory> timedStory(const StepStory& lines, const StepStory& timing,
                                            const std::string& timing_name) {
  auto out = std::make_shared<StepStory>(lines);
  out->summary = timing.summary;
  out->all_steps = timing.all_steps;
  out->steps_source = timing.steps_source;
  out->comm_exposed_ns = timing.comm_exposed_ns;
  out->ranks = timing.ranks;
  out->oneoff_steps = timing.oneoff_steps;
  out->timing_from = timing_name;
  out->work_ns = timing.work_ns, out->wall_hi_ns = timing.wall_hi_ns, out->compile_idle_ns = timing.compile_idle_ns;
  // Lines carry totals over the story's steady steps: the full capture's share of each, times
  // the light capture's total.
  auto rescale = [](std::vector<PlacedLine>& v, int64_t total) {
    int64_t sum = 0;
    for (const auto& l : v) sum += l.ns;
    for (auto& l : v) l.ns = sum > 0 ? static_cast<int64_t>(static_cast<double>(l.ns) * total / sum) : 0;
  };
  for (size_t w = 0; w < attribution::kWaitCount; ++w) rescale(out->wait_lines[w], timing.summary.wait_ns[w]);
  rescale(out->sync_lines, timing.summary.sync_ns);
  rescale(out->comm_lines, timing.comm_exposed_ns);
  return out;
}

FileCosts remapCosts(const FileCosts& costs, const source::LineTracker& tracker) {
  if (tracker.unchanged()) return costs;
  FileCosts out;
  out.total_gpu_ns = costs.total_gpu_ns;
  out.steps = costs.steps;
  out.ranks = costs.ranks;
  out.story = costs.story;
  out.memory = costs.memory;
  out.realigned_by = costs.realigned_by;
  out.off_code_lines = costs.off_code_lines;
  out.regression = costs.regression;
  for (const auto& [line, r] : costs.regressions) {
    int32_t now = line >= 1 ? tracker.currentLine(static_cast<uint32_t>(line - 1)) : -1;
    if (now >= 0) out.regressions[now + 1] = r;
  }
  if (costs.oom_line >= 1) out.oom_line = tracker.currentLine(static_cast<uint32_t>(costs.oom_line - 1)) + 1;
  for (const auto& span : costs.spans) {
    ContextSpan moved = span;
    moved.lines.clear();
    for (int32_t line : span.lines) {
      int32_t now = line >= 1 ? tracker.currentLine(static_cast<uint32_t>(line - 1)) : -1;
      if (now >= 0) moved.lines.push_back(now + 1);
    }
    if (moved.self_here && moved.self.line >= 1) {
      int32_t now = tracker.currentLine(static_cast<uint32_t>(moved.self.line - 1));
      moved.self.line = now >= 0 ? now + 1 : 0;
    }
    if (!moved.lines.empty()) out.spans.push_back(std::move(moved));
  }
  for (const auto& [line, cost] : costs.lines) {
    if (line < 1) continue;
    int32_t now = tracker.currentLine(static_cast<uint32_t>(line - 1));
    if (now < 0) continue;
    attribution::addCost(out.lines[now + 1], cost);
    if (tracker.stale(static_cast<uint32_t>(now))) out.stale_lines.insert(now + 1);
  }
  // Compiled functions: their def and break lines move with the text; a deleted one is dropped.
  auto moved = [&](int32_t line) {
    int32_t now = line >= 1 ? tracker.currentLine(static_cast<uint32_t>(line - 1)) : -1;
    return now >= 0 ? now + 1 : 0;
  };
  for (auto f : costs.compiled_functions) {
    f.function.line = moved(f.function.line);
    if (f.function.line == 0) continue;
    std::vector<CompiledFunctionSummary::Break> breaks;
    for (auto b : f.breaks)
      if ((b.line = moved(b.line)) > 0) breaks.push_back(std::move(b));
    f.breaks = std::move(breaks);
    out.compiled_functions.push_back(std::move(f));
  }
  return out;
}

}  // namespace sightline::join
