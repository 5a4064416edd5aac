// Step detection.
#include "analysis/attribution/steps.h"

#include <map>
#include <set>
#include <unordered_map>

namespace sightline::attribution {
namespace {

using FrameKey = std::pair<model::StringId, model::StringId>;  // (file, function)

bool fromProfilerSteps(const model::Profile& p, Attribution& out) {
  std::set<model::StringId> step_ranges;
  for (const auto& r : p.ranges)
    if (p.strings[r.text].rfind("ProfilerStep#", 0) == 0) step_ranges.insert(r.text);
  if (step_ranges.empty()) return false;
  out.steps = static_cast<int>(step_ranges.size());
  out.steps_source = "ProfilerStep ranges";
  return true;
}

// Ranges of one text on the thread where it occurs most.
size_t rangeCount(const model::Profile& p, const std::string& text) {
  std::unordered_map<uint64_t, size_t> per_thread;
  size_t best = 0;
  for (const auto& r : p.ranges)
    if (r.op == 0 && p.strings[r.text] == text) best = std::max(best, ++per_thread[model::threadKey(r.pid, r.tid)]);
  return best;
}

// User ranges opened once per step: of the per-step sites, the text seen the fewest times
// (twice or more), so ranges inside a gradient-accumulation loop do not count micro-steps.
bool fromNvtxSites(const model::Profile& p, const Options& options, Attribution& out) {
  std::string fewest;
  size_t fewest_count = 0;
  std::set<std::string> seen;
  for (const auto& site : options.nvtx_sites) {
    if (!site.per_step || !seen.insert(site.text).second) continue;
    size_t n = rangeCount(p, site.text);
    if (n >= 2 && (fewest_count == 0 || n < fewest_count)) fewest = site.text, fewest_count = n;
  }
  if (fewest_count == 0) return false;
  out.steps = static_cast<int>(fewest_count);
  out.steps_source = "NVTX range \"" + fewest + "\" opened once per step";
  return true;
}

// The loop frame: the outermost user frame whose line changes between the backtraces.
FrameKey loopFrame(const model::Profile& p, const BacktraceIndex& backtraces, const std::vector<uint32_t>& marks) {
  std::map<FrameKey, std::set<int32_t>> lines_by_frame;
  for (uint32_t idx : marks) {
    const auto& m = p.marks[idx];
    for (uint32_t f = 0; f < m.frame_count; ++f) {
      const auto& fr = p.frames[m.first_frame + f];
      if (backtraces.isUser(p.strings[fr.file])) lines_by_frame[{fr.file, fr.function}].insert(fr.line);
    }
  }
  FrameKey loop{0, 0};
  size_t loop_depth = 0;
  for (uint32_t idx : marks) {
    const auto& m = p.marks[idx];
    for (uint32_t f = m.frame_count; f-- > 0;) {
      const auto& fr = p.frames[m.first_frame + f];
      FrameKey key{fr.file, fr.function};
      if (!backtraces.isUser(p.strings[fr.file]) || lines_by_frame[key].size() < 2) continue;
      size_t depth = m.frame_count - f;
      if (loop.first == 0 || depth < loop_depth) loop = key, loop_depth = depth;
      break;
    }
  }
  return loop;
}

// The thread with the most backtraces runs the loop; every time the loop frame's line jumps
// back, a step began.
void fromLoopLine(const model::Profile& p, const BacktraceIndex& backtraces, Attribution& out) {
  const std::vector<uint32_t>* marks = nullptr;
  for (const auto& [key, t] : backtraces.byThread())
    if (!marks || t.backtraces.size() > marks->size()) marks = &t.backtraces;
  if (!marks || marks->size() < 2) return;
  FrameKey loop = loopFrame(p, backtraces, *marks);
  if (loop.first == 0) return;
  int wraps = 0;
  int32_t last = -1;
  for (uint32_t idx : *marks) {
    const auto& m = p.marks[idx];
    for (uint32_t f = 0; f < m.frame_count; ++f) {
      const auto& fr = p.frames[m.first_frame + f];
      if (fr.file != loop.first || fr.function != loop.second) continue;
      if (last >= 0 && fr.line < last) ++wraps;
      last = fr.line;
      break;
    }
  }
  out.steps = wraps + 1;
  out.steps_source = "loop line of " + p.strings[loop.second] + "() in Python backtraces";
}

}  // namespace

void detectSteps(const model::Profile& profile, const Options& options, const BacktraceIndex& backtraces,
                 Attribution& out) {
  if (fromProfilerSteps(profile, out) || fromNvtxSites(profile, options, out)) return;
  fromLoopLine(profile, backtraces, out);
}

}  // namespace sightline::attribution
