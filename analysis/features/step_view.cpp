// The step view's numbers from the joined profile: bars from each process's steps (their
// windows split in attribution), the timeline of the representative step from the rows of
// the profile inside it, lines placed once and referred to by index.
#include "analysis/features/step_view.h"

#include "analysis/features/line_figures.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/features/profile_view.h"
#include "analysis/features/step_headline.h"

namespace sightline::features {
namespace {

using attribution::Attribution;
using attribution::LineRef;
using Key = std::pair<model::StringId, int32_t>;

class LineTable {
 public:
  LineTable(const join::ProfileJoin& join, StepView& view)
      : join_(join), view_(view), inclusive_(inclusiveByLine(join.attribution())) {}

  int32_t indexOf(model::StringId file, int32_t line) {
    if (file == 0 || line <= 0) return -1;
    auto [it, added] = index_.try_emplace({file, line}, static_cast<int32_t>(view_.lines.size()));
    if (!added) return it->second;
    const auto& attr = join_.attribution();
    double divisor = attr.steps > 0 ? attr.steps : 1;
    ViewLine v;
    v.path = join_.placeOf(file);
    v.line = line;
    if (auto f = attr.files.find(file); f != attr.files.end())
      if (auto c = f->second.find(line); c != f->second.end()) {
        v.self_ns = static_cast<double>(c->second.gpu_ns) / divisor;
        v.forward_ns = static_cast<double>(c->second.forward_ns) / divisor;
        v.backward_ns = static_cast<double>(c->second.backward_ns) / divisor;
        v.idle_ns = static_cast<double>(c->second.idle_ns) / divisor;
        v.memory_peak_bytes = c->second.memory_peak_bytes;
        v.oneoff_ns = c->second.oneoff_inclusive_ns;
        v.oneoff_marked = marksOneoff(v.oneoff_ns, attr.step_summary.oneoff_gpu_ns);
        if (auto kinds = workByKind(c->second, join_.profile().strings); kinds.size() >= 2) v.kinds = std::move(kinds);
      }
    if (const Inclusive* in = inclusiveAt(file, line)) {
      v.inclusive_ns = static_cast<double>(in->gpu_ns) / divisor;
      v.inclusive_forward_ns = static_cast<double>(in->forward_ns) / divisor;
      v.inclusive_backward_ns = static_cast<double>(in->backward_ns) / divisor;
    }
    // Without inclusive data (or less of it than the line's own), the line's own time.
    if (v.inclusive_ns < v.self_ns)
      v.inclusive_ns = v.self_ns, v.inclusive_forward_ns = v.forward_ns, v.inclusive_backward_ns = v.backward_ns;
    double total = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
    v.share = v.self_ns * divisor / total;
    v.inclusive_share = v.inclusive_ns * divisor / total;
    v.inclusive_shown = showsInclusive(v.self_ns, v.inclusive_ns);
    view_.lines.push_back(std::move(v));
    return it->second;
  }
  int32_t indexOf(const LineRef& ref) { return indexOf(ref.file, ref.line); }
  // A line named by its placed path (the memory story's): the entry for it, else a new one
  // with its bytes at the peak alone.
  int32_t indexOfPlaced(const std::string& path, int32_t line, int64_t bytes) {
    for (size_t i = 0; i < view_.lines.size(); ++i)
      if (view_.lines[i].path == path && view_.lines[i].line == line) return static_cast<int32_t>(i);
    ViewLine v;
    v.path = path;
    v.line = line;
    v.memory_peak_bytes = bytes;
    view_.lines.push_back(std::move(v));
    return static_cast<int32_t>(view_.lines.size()) - 1;
  }
  const Inclusive* inclusiveAt(model::StringId file, int32_t line) const {
    auto f = inclusive_.find(file);
    if (f == inclusive_.end()) return nullptr;
    auto l = f->second.find(line);
    return l == f->second.end() ? nullptr : &l->second;
  }
  const std::map<model::StringId, std::map<int32_t, Inclusive>>& inclusive() const { return inclusive_; }

 private:
  const join::ProfileJoin& join_;
  StepView& view_;
  std::map<model::StringId, std::map<int32_t, Inclusive>> inclusive_;
  std::map<Key, int32_t> index_;
};

// Per step of one process, the line whose work took most of the step's GPU window.
std::vector<LineRef> topLinesOfSteps(const model::Profile& p, const Attribution& attr, uint32_t pid,
                                     const std::vector<attribution::Step>& list) {
  // (file, line) -> ns, per step; activities come by start time, so the step moves forward
  // and is looked up again only when a start goes back.
  std::vector<std::unordered_map<uint64_t, int64_t>> tally(list.size());
  size_t k = 0;
  for (size_t a = 0; a < p.activities.size() && a < attr.activity_lines.size(); ++a) {
    const auto& act = p.activities[a];
    const LineRef& ref = attr.activity_lines[a];
    if (act.pid != pid || ref.file == 0) continue;
    if (act.start_ns < list[k].window_start_ns ||
        (k + 1 < list.size() && act.start_ns >= list[k + 1].window_start_ns)) {
      auto pos = std::upper_bound(list.begin(), list.end(), act.start_ns,
                                  [](int64_t t, const attribution::Step& s) { return t < s.window_start_ns; });
      if (pos == list.begin()) continue;
      k = static_cast<size_t>(pos - list.begin()) - 1;
    }
    if (act.start_ns >= list[k].window_end_ns) continue;
    tally[k][uint64_t{ref.file} << 32 | static_cast<uint32_t>(ref.line)] += act.duration();
  }
  std::vector<LineRef> out(list.size());
  for (size_t s = 0; s < list.size(); ++s) {
    int64_t best = 0;
    uint64_t best_key = ~uint64_t{0};
    for (const auto& [key, ns] : tally[s])
      if (ns > best || (ns == best && best > 0 && key < best_key)) best = ns, best_key = key;
    if (best > 0) {
      out[s].file = static_cast<decltype(out[s].file)>(best_key >> 32);
      out[s].line = static_cast<decltype(out[s].line)>(static_cast<uint32_t>(best_key));
    }
  }
  return out;
}

void addBars(const join::ProfileJoin& join, LineTable& lines, StepView& view) {
  const auto& attr = join.attribution();
  const auto& story = join.story();
  // The straggler as the verdict and `check` frame it: the rank last at more than half of the
  // collectives.
  std::string late = story && story->late && story->late->share > 0.5 ? story->late->label : "";
  for (const auto& rank : attr.ranks) {
    auto it = attr.process_steps.find(rank.pid);
    if (it == attr.process_steps.end() || it->second.list.empty()) continue;
    RankBars bars;
    bars.label = rank.label;
    bars.pid = rank.pid;
    bars.straggler = attr.ranks.size() > 1 && !late.empty() && late == rank.label;
    bars.median_wall_ns = it->second.median_ns;
    const auto& list = it->second.list;
    int64_t origin = list.front().window_start_ns;
    auto top = topLinesOfSteps(join.profile(), attr, rank.pid, list);
    for (size_t k = 0; k < list.size(); ++k) {
      const auto& s = list[k];
      StepBar b;
      b.index = static_cast<int>(k) + 1;
      b.kind = s.kind;
      b.start_ns = s.window_start_ns - origin;
      b.wall_ns = model::spanNs(s.window_start_ns, s.window_end_ns);
      b.compute_ns = s.compute_ns, b.copy_ns = s.copy_ns, b.comm_ns = s.comm_ns, b.comm_wait_ns = s.comm_wait_ns;
      b.idle_ns = s.wait_ns;
      // The profiler's own host cost in the step, as the model prices it, but never more than
      // the step holds beyond its GPU work (the report's "at most"): the model once put 81 ms
      // of profiler work in a 35 ms step.
      b.capture_ns =
          std::clamp<int64_t>(s.capture_ns, 0, std::max<int64_t>(0, b.wall_ns - b.compute_ns - b.copy_ns - b.comm_ns));
      b.top_line = lines.indexOf(top[k].file != 0 ? top[k] : s.top_line);
      bars.steps.push_back(b);
    }
    view.ranks.push_back(std::move(bars));
  }
}

// Spans of one lane merged where there are too many: neighbours of the same line (and the
// closest ones first) until the lane holds `budget`.
uint32_t thinLane(std::vector<TimelineSpan>& spans, size_t budget) {
  uint32_t merged = 0;
  if (spans.size() <= budget) return 0;
  int64_t span = spans.back().end_ns - spans.front().start_ns;
  for (int64_t tolerance = std::max<int64_t>(1, span / 100000); spans.size() > budget; tolerance *= 4) {
    std::vector<TimelineSpan> out;
    out.reserve(spans.size());
    for (auto& s : spans) {
      if (!out.empty() && out.back().line == s.line && s.start_ns - out.back().end_ns <= tolerance) {
        out.back().end_ns = std::max(out.back().end_ns, s.end_ns);
        ++merged;
        continue;
      }
      out.push_back(std::move(s));
    }
    spans = std::move(out);
    if (tolerance > span) break;
  }
  return merged;
}

// Whether a thread ran Python: backtraces or samples (nsys), or traced Python calls (a trace).
// Both tables are sorted by (pid, tid) first.
bool hasPython(const model::Profile& p, uint32_t pid, uint32_t tid) {
  auto mark = std::lower_bound(
      p.marks.begin(), p.marks.end(), std::make_pair(pid, tid),
      [](const model::PythonMark& m, std::pair<uint32_t, uint32_t> key) { return std::make_pair(m.pid, m.tid) < key; });
  if (mark != p.marks.end() && mark->pid == pid && mark->tid == tid) return true;
  auto call = std::lower_bound(
      p.calls.begin(), p.calls.end(), std::make_pair(pid, tid),
      [](const model::PythonCall& c, std::pair<uint32_t, uint32_t> key) { return std::make_pair(c.pid, c.tid) < key; });
  return call != p.calls.end() && call->pid == pid && call->tid == tid;
}

// One rank's representative step as lanes and gaps, its spans held to `max_spans`.
Timeline rankTimeline(const join::ProfileJoin& join, LineTable& lines, const attribution::RankInfo* rank,
                      const Attribution::ProcessSteps* steps, size_t max_spans) {
  const auto& p = join.profile();
  const auto& attr = join.attribution();
  const auto& step = steps->list[static_cast<size_t>(steps->representative)];
  Timeline t;
  t.rank = rank->label;
  t.step = steps->representative + 1;
  int64_t host_start = step.start_ns, host_end = std::max(step.start_ns, step.end_ns);
  t.origin_ns = std::min(host_start, step.window_start_ns);
  int64_t last = std::max(host_end, step.window_end_ns);
  t.wall_ns = model::spanNs(step.window_start_ns, step.window_end_ns);
  t.gpu_start_ns = step.window_start_ns - t.origin_ns;
  t.end_ns = last - t.origin_ns;
  // Streams: the GPU work inside the window, clipped to it.
  std::map<std::pair<uint32_t, uint32_t>, TimelineLane> streams;
  std::unordered_map<int64_t, int32_t> line_of_correlation;  // the launches' lines, for the host lane
  for (size_t a = 0; a < p.activities.size(); ++a) {
    const auto& act = p.activities[a];
    if (act.start_ns >= step.window_end_ns) break;
    if (act.pid != rank->pid || act.end_ns <= step.window_start_ns) continue;
    int32_t line = a < attr.activity_lines.size() ? lines.indexOf(attr.activity_lines[a]) : -1;
    auto& lane = streams[{act.device, act.stream}];
    lane.spans.push_back({std::max(act.start_ns, step.window_start_ns) - t.origin_ns,
                          std::min(act.end_ns, step.window_end_ns) - t.origin_ns, line, p.strings[act.name]});
    if (act.correlation > 0) line_of_correlation[act.correlation] = line;
  }
  // The host: the process's launching and synchronizing calls in the step, one lane per thread
  // that launched work in it (most launches first: the Python thread, then the autograd
  // engine's that launches the backward pass), as runs of one line.
  std::map<uint32_t, uint32_t> launches_by_thread;
  auto first = std::lower_bound(p.api_calls.begin(), p.api_calls.end(), t.origin_ns,
                                [](const model::ApiCall& c, int64_t time) { return c.start_ns < time; });
  for (auto c = first; c != p.api_calls.end() && c->start_ns < last; ++c)
    if (c->pid == rank->pid && line_of_correlation.count(c->correlation)) ++launches_by_thread[c->tid];
  // (has Python frames, launches, tid): Python threads first, then the most launches.
  std::vector<std::tuple<bool, uint32_t, uint32_t>> threads;
  for (const auto& entry : launches_by_thread) {
    uint32_t thread = entry.first;
    bool python = hasPython(p, rank->pid, thread);
    threads.emplace_back(python, entry.second, thread);
  }
  std::sort(threads.rbegin(), threads.rend());
  if (threads.size() > 4) threads.resize(4);
  std::vector<TimelineLane> hosts;
  for (const auto& thread : threads) {
    bool python = std::get<0>(thread);
    uint32_t tid = std::get<2>(thread);
    TimelineLane host{LaneKind::Host, (python ? "Python thread " : "thread ") + std::to_string(tid), {}, 0};
    for (auto c = first; c != p.api_calls.end() && c->start_ns < last; ++c) {
      if (c->pid != rank->pid || c->tid != tid) continue;
      auto line = line_of_correlation.find(c->correlation);
      bool sync = c->sync != model::SyncKind::None;
      if (line == line_of_correlation.end() && !sync) continue;
      int32_t at = line != line_of_correlation.end() ? line->second : -1;
      TimelineSpan span{c->start_ns - t.origin_ns, std::max(c->start_ns, c->end_ns) - t.origin_ns, at, ""};
      if (sync) {
        span.name = "sync: " + p.strings[c->name];
        for (const auto& g : steps->representative_gaps)
          if (g.wait == attribution::Wait::Sync && g.start_ns < c->end_ns && g.end_ns > c->start_ns)
            span.line = lines.indexOf(g.line);
      }
      // A run of launches from one line is one span, named by its line.
      if (!sync && !host.spans.empty() && host.spans.back().line == at && host.spans.back().name.empty())
        host.spans.back().end_ns = std::max(host.spans.back().end_ns, span.end_ns);
      else
        host.spans.push_back(std::move(span));
    }
    hosts.push_back(std::move(host));
  }
  size_t lanes = streams.size() + hosts.size();
  size_t budget = std::max<size_t>(200, max_spans / std::max<size_t>(1, lanes));
  for (auto& host : hosts) {
    host.merged = thinLane(host.spans, budget);
    t.lanes.push_back(std::move(host));
  }
  for (auto& [key, lane] : streams) {
    lane.kind = LaneKind::Stream;
    lane.name = "GPU " + std::to_string(key.first) + " · stream " + std::to_string(key.second);
    lane.merged = thinLane(lane.spans, budget);
    t.lanes.push_back(std::move(lane));
  }
  for (const auto& g : steps->representative_gaps)
    t.gaps.push_back({g.start_ns - t.origin_ns, g.end_ns - t.origin_ns, g.wait, lines.indexOf(g.line)});
  return t;
}

// Each rank's representative step (up to max_timelines ranks, the straggler among them), the
// spans shared out between them.
void addTimelines(const join::ProfileJoin& join, LineTable& lines, const StepViewOptions& options, StepView& view) {
  const auto& attr = join.attribution();
  const auto& story = join.story();
  std::string late = story && story->late ? story->late->label : "";
  std::vector<std::pair<const attribution::RankInfo*, const Attribution::ProcessSteps*>> ranks, shown;
  for (const auto& r : attr.ranks)
    if (auto it = attr.process_steps.find(r.pid); it != attr.process_steps.end() && it->second.representative >= 0)
      ranks.emplace_back(&r, &it->second);
  for (size_t i = 0; i < ranks.size() && shown.size() < options.max_timelines; ++i) shown.push_back(ranks[i]);
  // More ranks than timelines: the straggler takes the last place.
  auto straggler = std::find_if(ranks.begin(), ranks.end(), [&](const auto& r) { return r.first->label == late; });
  if (straggler != ranks.end() && std::find(shown.begin(), shown.end(), *straggler) == shown.end() && !shown.empty())
    shown.back() = *straggler;
  if (shown.empty()) return;
  size_t budget = std::max<size_t>(1000, options.max_spans / shown.size());
  for (const auto& [rank, steps] : shown) view.timelines.push_back(rankTimeline(join, lines, rank, steps, budget));
}

void addTopLines(const join::ProfileJoin& join, LineTable& lines, const StepViewOptions& options, StepView& view) {
  const auto& attr = join.attribution();
  std::vector<std::pair<int64_t, Key>> ranked;
  std::set<Key> seen;
  for (const auto& [file, by_line] : attr.files)
    for (const auto& [line, c] : by_line) {
      const Inclusive* in = lines.inclusiveAt(file, line);
      int64_t ns = std::max(c.gpu_ns, in ? in->gpu_ns : 0);
      if (ns > 0) ranked.push_back({ns, {file, line}}), seen.insert({file, line});
    }
  // Lines with inclusive time alone (a call into a module: `logits = model(x)`).
  for (const auto& [file, by_line] : lines.inclusive())
    for (const auto& [line, in] : by_line)
      if (!seen.count({file, line}) && in.gpu_ns > 0) ranked.push_back({in.gpu_ns, {file, line}});
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  for (size_t i = 0; i < ranked.size() && i < options.max_top_lines; ++i)
    view.top_lines.push_back(lines.indexOf(ranked[i].second.first, ranked[i].second.second));
}

void addMemory(const join::ProfileJoin& join, LineTable& lines, const StepViewOptions& options, StepView& view) {
  const auto& story = join.memory().story;
  if (!story || story->series.empty()) return;
  auto& m = view.memory;
  int64_t origin = story->series.front().time_us;  // the first sample's, or the peak's step's start
  if (!story->step_series.empty()) origin = std::min(origin, story->step_series.front().time_us);
  m.peak_allocated_bytes = story->peak_allocated_bytes;
  m.peak_reserved_bytes = story->peak_reserved_bytes;
  m.peak_time_ns = std::max<int64_t>(0, story->peak_time_us - origin) * 1000;
  for (const auto& s : story->series)
    m.series.push_back({(s.time_us - origin) * 1000, s.allocated, s.reserved, s.bands});
  for (const auto& s : story->step_series)
    m.step_series.push_back({(s.time_us - origin) * 1000, s.allocated, s.reserved, s.bands});
  for (int64_t t : story->step_starts_us)
    if (t >= origin) m.step_starts_ns.push_back((t - origin) * 1000);
  for (size_t i = 0; i < story->top.size() && i < options.max_memory_lines; ++i)
    m.top.emplace_back(lines.indexOfPlaced(story->top[i].path, story->top[i].line, story->top[i].bytes),
                       story->top[i].bytes);
  // After the top lines: a band line gets their entry, with its bytes at the peak.
  for (const auto& b : story->band_lines) m.bands.push_back(lines.indexOfPlaced(b.path, b.line, 0));
  if (const auto& oom = story->oom) {
    MemoryView::Oom o;
    int64_t last = story->series.back().time_us;
    o.time_ns = (oom->time_us >= origin ? std::min(oom->time_us, std::max(last, oom->time_us)) : last) - origin;
    o.time_ns *= 1000;
    o.requested_bytes = oom->requested_bytes, o.free_bytes = oom->free_bytes;
    if (!oom->where.path.empty()) o.line = lines.indexOfPlaced(oom->where.path, oom->where.line, 0);
    for (const auto& f : oom->chain) o.chain.push_back(f.path.empty() ? -1 : lines.indexOfPlaced(f.path, f.line, 0));
    m.oom = std::move(o);
  }
  view.has_memory = true;
}

}  // namespace

StepView computeStepView(const join::ProfileJoin& join, const StepViewOptions& options) {
  StepView view;
  const auto& attr = join.attribution();
  view.has_steps = attr.steps > 0;
  view.steps_source = attr.steps_source;
  view.steady_steps = attr.steps;
  LineTable lines(join, view);
  addTopLines(join, lines, options, view);
  for (size_t w = 0; w < attribution::kWaitCount; ++w) {
    const auto& list = attr.step_summary.wait_lines[w];
    for (size_t i = 0; i < list.size() && i < options.max_cause_lines; ++i)
      if (int32_t at = lines.indexOf(list[i].line); at >= 0) view.cause_lines[w].push_back(at);
  }
  if (!options.listed_paths.empty()) {
    std::set<std::string> listed(options.listed_paths.begin(), options.listed_paths.end());
    for (const auto& [file, by_line] : attr.files) {
      if (!listed.count(join.placeOf(file))) continue;
      for (const auto& [line, c] : by_line)
        if (c.gpu_ns > 0 || c.idle_ns > 0 || c.oneoff_inclusive_ns > 0 || c.memory_peak_bytes > 0)
          lines.indexOf(file, line);
    }
  }
  addBars(join, lines, view);
  addTimelines(join, lines, options, view);
  addMemory(join, lines, options, view);
  if (const StepVerdict* verdict = options.verdict) {
    const auto& u = verdict->unprofiled;
    if (u.wall_ns) {
      view.unprofiled_wall_ns = static_cast<int64_t>(*u.wall_ns);
      view.capture_overhead_ns = static_cast<int64_t>(u.added_ns);
    }
    view.headline.captured_ns = verdict->wall_ns;
    view.headline.unprofiled = unprofiledText(*verdict);
    view.headline.summary = unprofiledSummary(*verdict);
    view.headline.measure = measureAdvice(*verdict);
    view.headline.verdict = *verdict;
  }
  return view;
}

}  // namespace sightline::features
