// Attribution engine. Everything is indexed once (per-thread marks and ranges, range
// parents, api calls by (pid, correlation)); each API call is resolved once and its line
// reused by every activity it launched.
#include "analysis/attribution/attribution.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace sightline::attribution {
namespace {

using model::Profile;

uint64_t threadKey(int64_t pid, int64_t tid) { return (static_cast<uint64_t>(pid) << 24) | static_cast<uint64_t>(tid); }
uint64_t corrKey(int64_t pid, int64_t corr) { return (static_cast<uint64_t>(pid) << 40) ^ static_cast<uint64_t>(corr); }

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

class Engine {
 public:
  Engine(const Profile& p, const Options& o) : p_(p) { is_user_ = o.is_user_file ? o.is_user_file : isDefaultUserFile; }

  Attribution run() {
    indexMarks();
    indexRanges();
    Attribution out;
    out.activity_lines.resize(p_.activities.size());
    std::unordered_map<uint64_t, size_t> api_by_corr;
    for (size_t i = 0; i < p_.api_calls.size(); ++i)
      if (p_.api_calls[i].correlation > 0) api_by_corr[corrKey(p_.api_calls[i].pid, p_.api_calls[i].correlation)] = i;
    api_lines_.assign(p_.api_calls.size(), LineRef{});
    api_done_.assign(p_.api_calls.size(), false);
    api_ops_.assign(p_.api_calls.size(), -1);

    for (size_t a = 0; a < p_.activities.size(); ++a) {
      const auto& act = p_.activities[a];
      int64_t ns = act.duration();
      out.total_gpu_ns += ns;
      auto it = act.correlation > 0 ? api_by_corr.find(corrKey(act.pid, act.correlation)) : api_by_corr.end();
      if (it == api_by_corr.end()) {
        out.unattributed_gpu_ns += ns;
        continue;
      }
      LineRef ref = lineOfCall(it->second);
      out.activity_lines[a] = ref;
      if (ref.file == 0) {
        out.unattributed_gpu_ns += ns;
        continue;
      }
      out.attributed_gpu_ns += ns;
      out.by_method[static_cast<size_t>(ref.method)] += ns;
      LineCost& cost = out.files[ref.file][ref.line];
      cost.gpu_ns += ns;
      (ref.backward ? cost.backward_ns : cost.forward_ns) += ns;
      cost.by_method[static_cast<size_t>(ref.method)] += ns;
      auto& stat = cost.by_name[act.name];
      ++stat.count;
      stat.ns += ns;
      switch (act.kind) {
        case model::ActivityKind::Kernel:
        case model::ActivityKind::Graph:
          ++cost.kernels;
          break;
        case model::ActivityKind::Memcpy:
          cost.memcpy_bytes += act.bytes;
          cost.memcpy_ns += ns;
          cost.memcpy_bytes_by_kind[static_cast<size_t>(act.copy)] += act.bytes;
          if (act.src == model::MemoryKind::Pageable || act.dst == model::MemoryKind::Pageable)
            cost.pageable_bytes += act.bytes;
          break;
        case model::ActivityKind::Memset:
          ++cost.memsets;
          cost.memset_ns += ns;
          break;
      }
      if (!ref.backward) {
        if (api_ops_[it->second] < 0) api_ops_[it->second] = static_cast<int64_t>(forwardOpOf(it->second));
        if (api_ops_[it->second] != 0) ++cost.autograd_ops[static_cast<model::StringId>(api_ops_[it->second])];
      }
    }
    // Host-side costs: launches and synchronizations, on the line of the call.
    for (size_t i = 0; i < p_.api_calls.size(); ++i) {
      const auto& call = p_.api_calls[i];
      if (!call.launches && call.sync == model::SyncKind::None) continue;
      LineRef ref = lineOfCall(i);
      if (ref.file == 0) continue;
      LineCost& cost = out.files[ref.file][ref.line];
      if (call.launches) ++cost.launches;
      if (call.sync != model::SyncKind::None) {
        cost.sync_ns += call.end_ns - call.start_ns;
        ++cost.syncs;
        ++cost.sync_apis[call.name];
      }
    }
    detectSteps(out);
    return out;
  }

 private:
  struct ThreadMarks {
    std::vector<uint32_t> backtraces;  // indices into p_.marks, by time
    std::vector<uint32_t> samples;
  };
  struct ThreadRanges {
    std::vector<uint32_t> ranges;  // indices into p_.ranges, by start
  };

  void indexMarks() {
    mark_lines_.resize(p_.marks.size());
    for (uint32_t i = 0; i < p_.marks.size(); ++i) {
      const auto& m = p_.marks[i];
      auto& t = marks_[threadKey(m.pid, m.tid)];
      (m.kind == model::MarkKind::Sample ? t.samples : t.backtraces).push_back(i);
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& frame = p_.frames[m.first_frame + f];
        if (frame.line > 0 && is_user_(p_.strings[frame.file])) {
          mark_lines_[i] = {frame.file, frame.line, Method::Stack, false};
          break;
        }
      }
    }
  }

  void indexRanges() {
    parent_.assign(p_.ranges.size(), -1);
    std::vector<int> open;
    uint64_t current = ~0ull;
    for (uint32_t i = 0; i < p_.ranges.size(); ++i) {
      const auto& r = p_.ranges[i];
      uint64_t key = threadKey(r.pid, r.tid);
      if (key != current) {
        open.clear();
        current = key;
      }
      while (!open.empty() && p_.ranges[static_cast<size_t>(open.back())].end_ns < r.end_ns) open.pop_back();
      parent_[i] = open.empty() ? -1 : open.back();
      open.push_back(static_cast<int>(i));
      ranges_[key].ranges.push_back(i);
      if (r.seq >= 0 && !isBackwardOp(r)) forward_by_seq_[corrKey(r.pid, r.seq)].push_back(i);
    }
    for (auto& [key, list] : forward_by_seq_)
      std::sort(list.begin(), list.end(),
                [&](uint32_t a, uint32_t b) { return p_.ranges[a].start_ns < p_.ranges[b].start_ns; });
  }

  // The forward op that created autograd node `seq`. Ops record `seq = ` the counter's value
  // when they start and only node-creating ops advance it, so several ops show the same seq; the
  // creator is the last of them to start before the backward op runs.
  int forwardRangeFor(const model::NvtxRange& backward) const {
    auto it = forward_by_seq_.find(corrKey(backward.pid, backward.seq));
    if (it == forward_by_seq_.end()) return -1;
    const auto& list = it->second;
    auto pos = std::upper_bound(list.begin(), list.end(), backward.start_ns,
                                [&](int64_t t, uint32_t idx) { return t < p_.ranges[idx].start_ns; });
    if (pos == list.begin()) return -1;
    return static_cast<int>(*(pos - 1));
  }

  // The first `XBackward0, seq = N` range inside an evaluate_function range, or -1.
  int backwardChildOf(int range) const {
    const auto& e = p_.ranges[static_cast<size_t>(range)];
    for (size_t j = static_cast<size_t>(range) + 1; j < p_.ranges.size(); ++j) {
      const auto& r = p_.ranges[j];
      if (r.pid != e.pid || r.tid != e.tid || r.start_ns > e.end_ns) break;
      if (r.seq >= 0 && isBackwardOp(r)) return static_cast<int>(j);
    }
    return -1;
  }

  bool isBackwardOp(const model::NvtxRange& r) const { return r.op != 0 && contains(p_.strings[r.op], "Backward"); }

  // The innermost range on (pid, tid) containing time t, or -1.
  int innermostRange(int64_t pid, int64_t tid, int64_t t) const {
    auto it = ranges_.find(threadKey(pid, tid));
    if (it == ranges_.end()) return -1;
    const auto& list = it->second.ranges;
    auto pos = std::upper_bound(list.begin(), list.end(), t,
                                [&](int64_t time, uint32_t idx) { return time < p_.ranges[idx].start_ns; });
    if (pos == list.begin()) return -1;
    int j = static_cast<int>(*(pos - 1));
    while (j >= 0 && p_.ranges[static_cast<size_t>(j)].end_ns < t) j = parent_[static_cast<size_t>(j)];
    return j;
  }

  int outermostAutograd(int range) const {
    int found = -1;
    for (int j = range; j >= 0; j = parent_[static_cast<size_t>(j)])
      if (p_.ranges[static_cast<size_t>(j)].op != 0) found = j;
    return found;
  }

  model::StringId forwardOpOf(size_t api) const {
    const auto& c = p_.api_calls[api];
    int outer = outermostAutograd(innermostRange(c.pid, c.tid, c.start_ns));
    if (outer < 0) return 0;
    const auto& r = p_.ranges[static_cast<size_t>(outer)];
    return isBackwardOp(r) ? 0 : r.op;
  }

  // The first backtrace mark on the thread within [start, end] that resolves to a user line.
  LineRef stackLineWithin(int64_t pid, int64_t tid, int64_t start, int64_t end) const {
    auto it = marks_.find(threadKey(pid, tid));
    if (it == marks_.end()) return {};
    const auto& list = it->second.backtraces;
    auto pos = std::lower_bound(list.begin(), list.end(), start,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    for (; pos != list.end() && p_.marks[*pos].time_ns <= end; ++pos)
      if (mark_lines_[*pos].file != 0) return mark_lines_[*pos];
    return {};
  }

  // Nearest resolvable marks before and after t agree: that line.
  LineRef bracketed(const std::vector<uint32_t>& list, int64_t t) const {
    auto pos = std::lower_bound(list.begin(), list.end(), t,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    LineRef before{}, after{};
    for (auto b = pos; b != list.begin();) {
      --b;
      if (mark_lines_[*b].file != 0) {
        before = mark_lines_[*b];
        break;
      }
    }
    for (auto a = pos; a != list.end(); ++a) {
      if (mark_lines_[*a].file != 0) {
        after = mark_lines_[*a];
        break;
      }
    }
    if (before.file != 0 && before.file == after.file && before.line == after.line) return before;
    return {};
  }

  // The nearest sample on the thread, preferring the one just before t.
  LineRef nearestSample(const std::vector<uint32_t>& list, int64_t t) const {
    constexpr int64_t kWindowNs = 20'000'000;
    auto pos = std::lower_bound(list.begin(), list.end(), t,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    for (auto b = pos; b != list.begin();) {
      --b;
      if (t - p_.marks[*b].time_ns > kWindowNs) break;
      if (mark_lines_[*b].file != 0) return mark_lines_[*b];
    }
    for (auto a = pos; a != list.end() && p_.marks[*a].time_ns - t <= kWindowNs; ++a)
      if (mark_lines_[*a].file != 0) return mark_lines_[*a];
    return {};
  }

  // The user line of a forward autograd range: a backtrace inside its outermost autograd
  // ancestor, else the backtraces bracketing it.
  LineRef lineOfForwardRange(int range) {
    int outer = outermostAutograd(range);
    if (outer < 0) outer = range;
    auto cached = range_lines_.find(outer);
    if (cached != range_lines_.end()) return cached->second;
    const auto& r = p_.ranges[static_cast<size_t>(outer)];
    LineRef ref = stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
    if (ref.file == 0) {
      auto it = marks_.find(threadKey(r.pid, r.tid));
      if (it != marks_.end()) {
        ref = bracketed(it->second.backtraces, r.start_ns);
        if (ref.file == 0) ref = nearestSample(it->second.samples, r.start_ns);
      }
    }
    range_lines_[outer] = ref;
    return ref;
  }

  LineRef lineOfCall(size_t api) {
    if (api_done_[api]) return api_lines_[api];
    api_done_[api] = true;
    const auto& c = p_.api_calls[api];
    LineRef ref = stackLineWithin(c.pid, c.tid, c.start_ns, c.end_ns);
    if (ref.file != 0) return api_lines_[api] = ref;

    int inner = innermostRange(c.pid, c.tid, c.start_ns);
    // Backward: the innermost autograd range with a seq on this thread is an XBackward op. Work
    // that the engine runs after that range closed (grad reductions in `validate_outputs`)
    // sits only inside `autograd::engine::evaluate_function: XBackward0`: use its seq child.
    for (int j = inner; j >= 0; j = parent_[static_cast<size_t>(j)]) {
      int seq_range = j;
      if (p_.ranges[static_cast<size_t>(j)].seq < 0) {
        if (!p_.strings[p_.ranges[static_cast<size_t>(j)].text].starts_with("autograd::engine::evaluate_function: "))
          continue;
        seq_range = backwardChildOf(j);
        if (seq_range < 0) continue;
      }
      const auto& r = p_.ranges[static_cast<size_t>(seq_range)];
      if (!isBackwardOp(r)) break;
      int fwd = forwardRangeFor(r);
      if (fwd >= 0) {
        ref = lineOfForwardRange(fwd);
        if (ref.file != 0) {
          ref.method = Method::Backward;
          ref.backward = true;
          return api_lines_[api] = ref;
        }
      }
      break;
    }
    // Op: the outermost forward autograd range around the call has a backtraced call.
    int outer = outermostAutograd(inner);
    if (outer >= 0 && !isBackwardOp(p_.ranges[static_cast<size_t>(outer)])) {
      const auto& r = p_.ranges[static_cast<size_t>(outer)];
      ref = stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
      if (ref.file != 0) {
        ref.method = Method::Op;
        return api_lines_[api] = ref;
      }
    }
    auto it = marks_.find(threadKey(c.pid, c.tid));
    if (it != marks_.end()) {
      ref = bracketed(it->second.backtraces, c.start_ns);
      if (ref.file != 0) {
        ref.method = Method::Inferred;
        return api_lines_[api] = ref;
      }
      ref = nearestSample(it->second.samples, c.start_ns);
      if (ref.file != 0) {
        ref.method = Method::Sample;
        return api_lines_[api] = ref;
      }
    }
    return api_lines_[api] = LineRef{};
  }

  // Iterations: PyTorch's ProfilerStep#N ranges, else wrap-arounds of the loop frame's line.
  void detectSteps(Attribution& out) const {
    std::set<model::StringId> step_ranges;
    for (const auto& r : p_.ranges)
      if (p_.strings[r.text].rfind("ProfilerStep#", 0) == 0) step_ranges.insert(r.text);
    if (!step_ranges.empty()) {
      out.steps = static_cast<int>(step_ranges.size());
      out.steps_source = "ProfilerStep ranges";
      return;
    }
    // The thread with the most backtraces runs the loop. Its loop frame is the outermost user
    // frame whose line changes between marks; every time that line jumps back, a step began.
    uint64_t best = 0;
    size_t best_count = 0;
    for (const auto& [key, t] : marks_)
      if (t.backtraces.size() > best_count) best = key, best_count = t.backtraces.size();
    if (best_count < 2) return;
    const auto& list = marks_.at(best).backtraces;
    std::map<std::pair<model::StringId, model::StringId>, std::set<int32_t>> lines_by_frame;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& fr = p_.frames[m.first_frame + f];
        if (is_user_(p_.strings[fr.file])) lines_by_frame[{fr.file, fr.function}].insert(fr.line);
      }
    }
    // Outermost varying frame: the one seen in the most marks with more than one line.
    std::pair<model::StringId, model::StringId> loop{0, 0};
    size_t loop_depth = 0;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = m.frame_count; f-- > 0;) {
        const auto& fr = p_.frames[m.first_frame + f];
        auto key = std::make_pair(fr.file, fr.function);
        if (!is_user_(p_.strings[fr.file]) || lines_by_frame[key].size() < 2) continue;
        size_t depth = m.frame_count - f;
        if (loop.first == 0 || depth < loop_depth) loop = key, loop_depth = depth;
        break;
      }
    }
    if (loop.first == 0) return;
    int wraps = 0;
    int32_t last = -1;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& fr = p_.frames[m.first_frame + f];
        if (fr.file != loop.first || fr.function != loop.second) continue;
        if (last >= 0 && fr.line < last) ++wraps;
        last = fr.line;
        break;
      }
    }
    out.steps = wraps + 1;
    out.steps_source = "loop line of " + p_.strings[loop.second] + "() in Python backtraces";
  }

  const Profile& p_;
  std::function<bool(std::string_view)> is_user_;
  std::unordered_map<uint64_t, ThreadMarks> marks_;
  std::unordered_map<uint64_t, ThreadRanges> ranges_;
  std::vector<LineRef> mark_lines_;
  std::vector<int> parent_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> forward_by_seq_;  // (pid, seq) -> ranges, by start
  std::unordered_map<int, LineRef> range_lines_;
  std::vector<LineRef> api_lines_;
  std::vector<bool> api_done_;
  std::vector<int64_t> api_ops_;  // forward op name per API call, -1 until computed
};

}  // namespace

const char* methodName(Method m) {
  switch (m) {
    case Method::Stack:
      return "stack";
    case Method::Op:
      return "op";
    case Method::Backward:
      return "backward";
    case Method::Inferred:
      return "inferred";
    case Method::Sample:
      return "sample";
    case Method::Nvtx:
      return "nvtx";
  }
  return "?";
}

bool isDefaultUserFile(std::string_view path) {
  if (path.empty() || path[0] == '<') return false;
  if (contains(path, "site-packages") || contains(path, "dist-packages") || contains(path, "<frozen")) return false;
  // The standard library: .../lib/python3.X/<module>.py (site-packages excluded above).
  auto lib = path.find("/lib/python");
  if (lib != std::string_view::npos) return false;
  return true;
}

Attribution attribute(const Profile& profile, const Options& options) { return Engine(profile, options).run(); }

}  // namespace sightline::attribution
