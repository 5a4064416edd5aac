// Step detection.
#include "analysis/attribution/steps.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <unordered_map>

namespace sightline::attribution {
namespace {

using FrameKey = std::pair<model::StringId, model::StringId>;  // (file, function)

using Span = std::pair<int64_t, int64_t>;

// Steps of one process from its step ranges (ProfilerStep#N, a per-step NVTX range). A range
// may cover only part of its step (`with nvtx.range("forward")`): a step runs from one range's
// start to the next one's, the last one to its range's end.
void addRangeSteps(std::map<uint32_t, std::map<model::StringId, Span>>& by_pid, Attribution& out) {
  for (const auto& [pid, steps] : by_pid) {
    std::vector<int64_t> lengths;
    std::vector<Step> list;
    for (const auto& [text, span] : steps) {
      lengths.push_back(model::spanNs(span.first, span.second));
      list.push_back({span.first, span.second});
    }
    std::sort(list.begin(), list.end(), [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
    for (size_t i = 0; i + 1 < list.size(); ++i) list[i].end_ns = std::max(list[i].end_ns, list[i + 1].start_ns);
    out.process_steps[pid] = {static_cast<int>(steps.size()), medianNs(lengths), std::move(list)};
  }
}

bool fromProfilerSteps(const model::Profile& p, Attribution& out) {
  std::map<uint32_t, std::map<model::StringId, Span>> by_pid;  // pid -> step text -> span
  for (const auto& r : p.ranges)
    if (p.strings[r.text].rfind("ProfilerStep#", 0) == 0) by_pid[r.pid][r.text] = {r.start_ns, r.end_ns};
  if (by_pid.empty()) return false;
  addRangeSteps(by_pid, out);
  for (const auto& [pid, steps] : out.process_steps) out.steps = std::max(out.steps, steps.count);
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
  std::map<uint32_t, std::map<model::StringId, Span>> by_pid;
  std::map<uint32_t, int> counts;
  for (const auto& r : p.ranges)
    if (r.op == 0 && p.strings[r.text] == fewest) {
      int n = counts[r.pid]++;
      by_pid[r.pid][static_cast<model::StringId>(n + 1)] = {r.start_ns, r.end_ns};
    }
  addRangeSteps(by_pid, out);
  out.steps_source = "NVTX range \"" + fewest + "\" opened once per step";
  return true;
}

// The loop frame: the outermost user frame whose line jumps back between the backtraces.
FrameKey loopFrame(const model::Profile& p, const BacktraceIndex& backtraces, const std::vector<uint32_t>& marks) {
  // Frames whose line jumps back at least once (a loop runs in them; `<module>` going from its
  // imports to `main()` does not).
  std::map<FrameKey, int32_t> last_line;
  std::set<FrameKey> loops;
  // Each file asked once: the marks repeat a few files millions of times.
  std::vector<int8_t> known(p.strings.size(), -1);
  auto isUser = [&](model::StringId file) {
    int8_t& k = known[file];
    if (k < 0) k = backtraces.isUser(p.strings[file]) ? 1 : 0;
    return k == 1;
  };
  // Stacks mapped from torch.compile's generated code run through the model's own loops
  // (`for block in self.blocks`), and nsys may have cut their outer frames: not the step loop.
  for (uint32_t idx : marks) {
    const auto& m = p.marks[idx];
    if (m.compiled) continue;
    for (uint32_t f = 0; f < m.frame_count; ++f) {
      const auto& fr = p.frames[m.first_frame + f];
      if (!isUser(fr.file)) continue;
      FrameKey key{fr.file, fr.function};
      auto [it, added] = last_line.emplace(key, fr.line);
      if (!added && fr.line < it->second) loops.insert(key);
      it->second = fr.line;
    }
  }
  FrameKey loop{0, 0};
  size_t loop_depth = 0;
  for (uint32_t idx : marks) {
    const auto& m = p.marks[idx];
    if (m.compiled) continue;
    for (uint32_t f = m.frame_count; f-- > 0;) {
      const auto& fr = p.frames[m.first_frame + f];
      FrameKey key{fr.file, fr.function};
      if (!isUser(fr.file) || !loops.count(key)) continue;
      size_t depth = m.frame_count - f;
      if (loop.first == 0 || depth < loop_depth) loop = key, loop_depth = depth;
      break;
    }
  }
  return loop;
}

// The steps on one thread: one begins every time the loop frame's line jumps back.
// In a gradient-accumulation loop the inner loop jumps back too, over fewer lines: when the jump
// lengths fall into a short and a long group (the widest ratio between two lengths seen is at
// least 1.5), only the long jumps (the outer loop's) start steps.
std::vector<Step> loopSteps(const model::Profile& p, const std::vector<uint32_t>& marks, FrameKey loop) {
  struct Jump {
    size_t at;  // index of the first mark after the jump
    int32_t distance;
  };
  std::vector<Jump> jumps;
  std::vector<int64_t> times;  // of the marks in the loop frame
  std::vector<int32_t> lines;  // their lines
  int32_t last = -1;
  // Stacks mapped from torch.compile's generated code run through the model's own loops
  // (`for block in self.blocks`), and nsys may have cut their outer frames: not the step loop.
  for (uint32_t idx : marks) {
    const auto& m = p.marks[idx];
    if (m.compiled) continue;
    for (uint32_t f = 0; f < m.frame_count; ++f) {
      const auto& fr = p.frames[m.first_frame + f];
      if (fr.file != loop.first || fr.function != loop.second) continue;
      if (last >= 0 && fr.line < last) jumps.push_back({times.size(), last - fr.line});
      times.push_back(m.time_ns);
      lines.push_back(fr.line);
      last = fr.line;
      break;
    }
  }
  if (times.empty()) return {};
  std::vector<int32_t> lengths;
  lengths.reserve(jumps.size());
  for (const auto& j : jumps) lengths.push_back(j.distance);
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  int32_t threshold = 0;
  double widest = 1.0;
  for (size_t i = 1; i < lengths.size(); ++i) {
    double ratio = static_cast<double>(lengths[i]) / std::max(1, lengths[i - 1]);
    if (ratio >= 1.5 && ratio > widest) widest = ratio, threshold = lengths[i];
  }
  // The loop's body: from the lowest line a step jumps back to, to the highest it jumps from.
  // Marks of the frame outside it run before or after the loop (set-up, a final sync).
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (const auto& j : jumps)
    if (j.distance >= threshold) lo = std::min(lo, lines[j.at]), hi = std::max(hi, lines[j.at - 1]);
  auto inBody = [&](size_t i) { return lo > hi || (lines[i] >= lo && lines[i] <= hi); };
  size_t first_in = 0, last_in = times.size() - 1;
  while (first_in < times.size() && !inBody(first_in)) ++first_in;
  while (last_in > 0 && !inBody(last_in)) --last_in;
  std::vector<size_t> starts{first_in < times.size() ? first_in : 0};
  for (const auto& j : jumps)
    if (j.distance >= threshold && j.at > starts.front()) starts.push_back(j.at);
  // A capture that opens or closes inside a step leaves a piece of one: a first or last step of
  // less than half the marks of the median step is not counted.
  std::vector<size_t> sizes;
  for (size_t i = 0; i < starts.size(); ++i)
    sizes.push_back((i + 1 < starts.size() ? starts[i + 1] : last_in + 1) - starts[i]);
  std::vector<size_t> sorted = sizes;
  std::sort(sorted.begin(), sorted.end());
  size_t typical = sorted[sorted.size() / 2];
  size_t first = 0, end = starts.size();
  if (starts.size() >= 3 && 2 * sizes.back() < typical) --end;
  if (starts.size() >= 3 && 2 * sizes.front() < typical) ++first;
  // A step ends where the next begins; the last one at its last mark in the loop frame.
  std::vector<Step> out;
  for (size_t i = first; i < end; ++i)
    out.push_back(
        {times[starts[i]], i + 1 < starts.size() ? times[starts[i + 1]] : times[std::max(last_in, starts[i])]});
  return out;
}

// Per process, its Python thread (BacktraceIndex::mainThread) runs the loop.
void fromLoopLine(const model::Profile& p, const BacktraceIndex& backtraces, Attribution& out) {
  std::map<uint32_t, const std::vector<uint32_t>*> main_marks;
  for (const auto& [key, t] : backtraces.byThread()) {
    auto pid = static_cast<uint32_t>(key >> 32);
    if (const auto* main = backtraces.mainThread(pid)) main_marks[pid] = &main->backtraces;
  }
  for (const auto& [pid, marks] : main_marks) {
    if (marks->size() < 2) continue;
    FrameKey loop = loopFrame(p, backtraces, *marks);
    if (loop.first == 0) continue;
    std::vector<Step> steps = loopSteps(p, *marks, loop);
    std::vector<int64_t> lengths;
    for (size_t i = 0; i + 1 < steps.size(); ++i) lengths.push_back(model::spanNs(steps[i].start_ns, steps[i].end_ns));
    int count = static_cast<int>(steps.size());
    out.process_steps[pid] = {count, medianNs(lengths), std::move(steps)};
    if (count > out.steps) {
      out.steps = count;
      out.steps_source = "loop line of " + p.strings[loop.second] + "() in Python backtraces";
    }
  }
}

// Steps of a capture that knows no Python and no step ranges (nsys -t cuda,nvtx): per process,
// the launches repeat once per step. The anchor is a GPU work name launched at an even spacing
// whose stretch of launches repeats (90% of the names at the same offsets); of those, the
// longest spacing is the step (a transformer's layers repeat within it), and of equal ones the
// anchor launched most often right after a sync (the loop's top after `loss.item()`).
bool fromRepetition(const model::Profile& p, const std::vector<int64_t>& call_of, Attribution& out) {
  std::vector<model::StringId> call_name(p.api_calls.size(), 0);
  for (size_t a = 0; a < p.activities.size(); ++a)
    if (call_of[a] >= 0 && call_name[static_cast<size_t>(call_of[a])] == 0)
      call_name[static_cast<size_t>(call_of[a])] = p.activities[a].name;
  std::map<uint32_t, std::vector<uint32_t>> launches;  // pid -> its launch calls with GPU work, in order
  for (uint32_t i = 0; i < p.api_calls.size(); ++i)
    if (call_name[i] != 0) launches[p.api_calls[i].pid].push_back(i);
  bool any = false;
  for (const auto& [pid, seq] : launches) {
    if (seq.size() < 30) continue;
    std::unordered_map<model::StringId, std::vector<uint32_t>> at;  // name -> positions in seq
    for (uint32_t k = 0; k < seq.size(); ++k) at[call_name[seq[k]]].push_back(k);
    struct Best {
      size_t period = 0, after_sync = 0;
      const std::vector<uint32_t>* positions = nullptr;
    } best;
    for (const auto& [name, pos] : at) {
      if (pos.size() < 3 || pos.size() > seq.size() / 4) continue;
      std::vector<int64_t> spacing;
      for (size_t i = 0; i + 1 < pos.size(); ++i) spacing.push_back(pos[i + 1] - pos[i]);
      auto period = static_cast<size_t>(medianNs(spacing));
      if (period < 4) continue;
      size_t even = 0;
      for (int64_t d : spacing) even += std::abs(d - static_cast<int64_t>(period)) * 10 <= static_cast<int64_t>(period);
      if (even * 10 < spacing.size() * 9) continue;
      // The stretch after each occurrence repeats after the next one.
      size_t same = 0, compared = 0;
      for (size_t i = 0; i + 1 < pos.size() && i < 32; ++i)
        for (size_t j = 0; j < period && j < 64 && pos[i + 1] + j < seq.size(); ++j, ++compared)
          same += call_name[seq[pos[i] + j]] == call_name[seq[pos[i + 1] + j]];
      if (compared == 0 || same * 10 < compared * 9) continue;
      size_t after_sync = 0;
      for (uint32_t k : pos) {
        uint32_t call = seq[k];
        for (uint32_t c = call; c-- > 0 && call - c < 64;)
          if (p.api_calls[c].pid == pid) {
            after_sync += p.api_calls[c].sync != model::SyncKind::None;
            break;
          }
      }
      if (period > best.period || (period == best.period && after_sync > best.after_sync))
        best = {period, after_sync, &pos};
    }
    if (!best.positions) continue;
    std::vector<Step> steps;
    const auto& pos = *best.positions;
    for (size_t i = 0; i < pos.size(); ++i) {
      int64_t start = p.api_calls[seq[pos[i]]].start_ns;
      int64_t end = i + 1 < pos.size() ? p.api_calls[seq[pos[i + 1]]].start_ns : p.api_calls[seq.back()].end_ns;
      steps.push_back({start, end});
    }
    std::vector<int64_t> lengths;
    for (size_t i = 0; i + 1 < steps.size(); ++i) lengths.push_back(model::spanNs(steps[i].start_ns, steps[i].end_ns));
    int count = static_cast<int>(steps.size());
    out.process_steps[pid] = {count, medianNs(lengths), std::move(steps)};
    any = true;
  }
  if (any) out.steps_source = "launches that repeat once per step (no step ranges, and no loop in Python backtraces)";
  return any;
}

// Warm-up and outlier steps. A step far above the median (1.5x, and 2 ms more) is an outlier;
// outliers before the first ordinary one are warm-up, and so is the first step unless the
// profiler's own schedule already left warm-up out (ProfilerStep ranges). Fewer than four
// steps, or every step asked for: all steady. Steps a capture range chose are all counted,
// but for leading ones that are no training step at all (5x the median and 100 ms more: the
// compiles and lazy set-up of a range opened before the first step); returns how many.
int classifySteps(Attribution::ProcessSteps& steps, bool all_steps, bool in_range, bool first_is_warmup) {
  auto& list = steps.list;
  if (all_steps || list.size() < 4) return 0;
  std::vector<int64_t> lengths;
  lengths.reserve(list.size());
  for (const auto& s : list) lengths.push_back(model::spanNs(s.start_ns, s.end_ns));
  int64_t m = medianNs(lengths);
  if (in_range) {
    int setup = 0;
    for (size_t i = 0; i < list.size() && lengths[i] > 5 * m && lengths[i] > m + 100'000'000; ++i, ++setup)
      list[i].kind = StepKind::Warmup;
    return setup;
  }
  auto far = [&](size_t i) { return lengths[i] > m + std::max(m / 2, int64_t{2'000'000}); };
  bool leading = true;
  for (size_t i = 0; i < list.size(); ++i) {
    if ((i == 0 && first_is_warmup) || (leading && far(i)))
      list[i].kind = StepKind::Warmup;
    else if (far(i))
      list[i].kind = StepKind::Outlier;
    if (i > 0 && !far(i)) leading = false;
  }
  return 0;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

int64_t medianNs(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void detectSteps(const model::Profile& profile, const Options& options, const BacktraceIndex& backtraces,
                 const std::vector<int64_t>& call_of, Attribution& out) {
  bool scheduled = fromProfilerSteps(profile, out);
  if (!scheduled && !fromNvtxSites(profile, options, out)) {
    fromLoopLine(profile, backtraces, out);
    if (out.process_steps.empty()) fromRepetition(profile, call_of, out);
  }
  bool in_range = std::find(profile.info.capabilities.begin(), profile.info.capabilities.end(), "capture-range") !=
                  profile.info.capabilities.end();
  out.step_summary.all_steps = options.all_steps || in_range;
  out.step_summary.capture_range = in_range;
  for (auto& [pid, steps] : out.process_steps)
    if (classifySteps(steps, options.all_steps, in_range, !scheduled) > 0) out.step_summary.all_steps = false;
}

void countSteadySteps(Attribution& out) {
  int total = 0, most = 0, ranks = 0;
  for (const auto& [pid, steps] : out.process_steps) {
    int steady = 0;
    for (const auto& s : steps.list) steady += s.kind == StepKind::Steady ? 1 : 0;
    if (steps.list.empty()) steady = steps.count;  // counts known without their times
    total += steady, most = std::max(most, steady), ranks += steady > 0 ? 1 : 0;
  }
  out.steps = total;
  out.steps_per_rank = most;
  out.step_ranks = ranks;
}

}  // namespace sightline::attribution
