// Backtraces and samples by thread and time.
#include "analysis/attribution/backtrace_index.h"

#include <algorithm>
#include <tuple>

#include "analysis/attribution/user_files.h"

namespace sightline::attribution {

namespace {

// Frames of a data-loading call: PyTorch's DataLoader, or a user function fetching batches.
bool isInputFrame(const std::string& file, const std::string& function, bool user) {
  if (file.find("torch/utils/data/") != std::string::npos) return true;
  return user && (makesBatches(function) || function == "__getitem__");
}

}  // namespace

BacktraceIndex::BacktraceIndex(const model::Profile& profile, std::function<bool(std::string_view)> is_user,
                               ContextTable& contexts)
    : profile_(profile), is_user_(std::move(is_user)) {
  mark_lines_.resize(profile_.marks.size());
  mark_stacks_.resize(profile_.marks.size());
  // Marks with one stack share its frames: resolve each stack once.
  std::unordered_map<uint64_t, std::pair<LineRef, uint32_t>> by_stack;
  std::unordered_map<model::StringId, bool> user_file;
  for (uint32_t i = 0; i < profile_.marks.size(); ++i) {
    const auto& m = profile_.marks[i];
    auto& t = by_thread_[model::threadKey(m.pid, m.tid)];
    (m.kind == model::MarkKind::Sample ? t.samples : t.backtraces).push_back(i);
    uint64_t stack = ((static_cast<uint64_t>(m.first_frame) << 24) ^ m.frame_count) * 2 + (m.backward ? 1 : 0);
    if (auto it = by_stack.find(stack); it != by_stack.end()) {
      std::tie(mark_lines_[i], mark_stacks_[i]) = it->second;
      continue;
    }
    LineRef ref;
    std::vector<FrameLine> lines;
    for (uint32_t f = 0; f < m.frame_count; ++f) {
      const auto& frame = profile_.frames[m.first_frame + f];
      auto [known, added] = user_file.emplace(frame.file, false);
      if (added) known->second = is_user_(profile_.strings[frame.file]);
      bool user = known->second;
      if (isInputFrame(profile_.strings[frame.file], profile_.strings[frame.function], user)) ref.input = true;
      if (frame.line <= 0 || !user) continue;
      if (ref.file == 0) ref.file = frame.file, ref.line = frame.line;
      lines.push_back({frame.file, frame.line});
    }
    if (ref.file == 0) ref.input = false;
    ref.backward = ref.file != 0 && m.backward;  // a compiled backward graph's launch
    ref.context = contexts.intern(lines);
    mark_stacks_[i] = static_cast<uint32_t>(stacks_.size());
    stacks_.push_back(std::move(lines));
    mark_lines_[i] = ref;
    by_stack[stack] = {ref, mark_stacks_[i]};
  }
  std::unordered_map<uint32_t, size_t> best;  // pid -> resolvable backtraces of its main thread
  for (const auto& [key, t] : by_thread_) {
    size_t resolvable = 0;
    // A compiled backward graph's stacks reach the user's lines too, on the autograd thread.
    for (uint32_t idx : t.backtraces) resolvable += mark_lines_[idx].file != 0 && !profile_.marks[idx].backward ? 1 : 0;
    auto pid = static_cast<uint32_t>(key >> 32);
    auto& main = main_thread_[pid];
    if (!main || resolvable > best[pid] || (resolvable == best[pid] && t.backtraces.size() > main->backtraces.size()))
      main = &t, best[pid] = resolvable;
  }
}

LineRef BacktraceIndex::callerLine(uint32_t pid, uint32_t tid, int64_t t) const {
  const ThreadMarks* own = thread(pid, tid);
  if (own && !own->backtraces.empty()) return {};
  return mainLineAt(pid, t);
}

LineRef BacktraceIndex::mainLineAt(uint32_t pid, int64_t t) const {
  auto it = main_thread_.find(pid);
  if (it == main_thread_.end()) return {};
  const auto& list = it->second->backtraces;
  auto pos = std::upper_bound(list.begin(), list.end(), t,
                              [&](int64_t time, uint32_t idx) { return time < profile_.marks[idx].time_ns; });
  while (pos != list.begin()) {
    --pos;
    if (mark_lines_[*pos].file != 0) return mark_lines_[*pos];
  }
  return {};
}

const BacktraceIndex::ThreadMarks* BacktraceIndex::thread(uint32_t pid, uint32_t tid) const {
  auto it = by_thread_.find(model::threadKey(pid, tid));
  return it == by_thread_.end() ? nullptr : &it->second;
}

LineRef BacktraceIndex::firstResolvable(const std::vector<uint32_t>& list, int64_t from, int64_t until,
                                        bool inclusive) const {
  auto pos = std::lower_bound(list.begin(), list.end(), from,
                              [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; });
  for (; pos != list.end(); ++pos) {
    int64_t t = profile_.marks[*pos].time_ns;
    if (inclusive ? t > until : t >= until) break;
    if (mark_lines_[*pos].file != 0) return mark_lines_[*pos];
  }
  return {};
}

LineRef BacktraceIndex::stackLineWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const {
  const ThreadMarks* t = thread(pid, tid);
  return t ? firstResolvable(t->backtraces, start_ns, end_ns, true) : LineRef{};
}

int64_t BacktraceIndex::markWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const {
  const ThreadMarks* t = thread(pid, tid);
  if (!t) return -1;
  auto pos = std::lower_bound(t->backtraces.begin(), t->backtraces.end(), start_ns,
                              [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; });
  return pos != t->backtraces.end() && profile_.marks[*pos].time_ns <= end_ns ? static_cast<int64_t>(*pos) : -1;
}

LineRef BacktraceIndex::sampleWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const {
  const ThreadMarks* t = thread(pid, tid);
  return t ? firstResolvable(t->samples, start_ns, end_ns, false) : LineRef{};
}

LineRef BacktraceIndex::bracketedLine(uint32_t pid, uint32_t tid, int64_t t) const {
  const ThreadMarks* marks = thread(pid, tid);
  if (!marks) return {};
  const auto& list = marks->backtraces;
  auto pos = std::lower_bound(list.begin(), list.end(), t,
                              [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; });
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

LineRef BacktraceIndex::nestedLine(uint32_t pid, uint32_t tid, int64_t from, int64_t until) const {
  const ThreadMarks* marks = thread(pid, tid);
  if (!marks) return {};
  const auto& list = marks->backtraces;
  auto before_time = [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; };
  auto pos = std::lower_bound(list.begin(), list.end(), from, before_time);
  int64_t before = -1, after = -1;
  for (auto b = pos; b != list.begin();) {
    --b;
    if (mark_lines_[*b].file != 0) {
      before = *b;
      break;
    }
  }
  auto later = std::upper_bound(list.begin(), list.end(), until,
                                [&](int64_t time, uint32_t idx) { return time < profile_.marks[idx].time_ns; });
  for (auto a = later; a != list.end(); ++a) {
    if (mark_lines_[*a].file != 0) {
      after = *a;
      break;
    }
  }
  if (before < 0 || after < 0) return {};
  const auto& b = stacks_[mark_stacks_[static_cast<size_t>(before)]];
  const auto& a = stacks_[mark_stacks_[static_cast<size_t>(after)]];
  bool a_deeper = a.size() > b.size();
  const auto& deep = a_deeper ? a : b;
  const auto& shallow = a_deeper ? b : a;
  if (deep.size() == shallow.size() || !std::equal(shallow.begin(), shallow.end(), deep.end() - shallow.size()))
    return {};
  return mark_lines_[static_cast<size_t>(a_deeper ? after : before)];
}

LineRef BacktraceIndex::nearestSample(uint32_t pid, uint32_t tid, int64_t t) const {
  constexpr int64_t kWindowNs = 20'000'000;
  const ThreadMarks* marks = thread(pid, tid);
  if (!marks) return {};
  const auto& list = marks->samples;
  auto pos = std::lower_bound(list.begin(), list.end(), t,
                              [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; });
  for (auto b = pos; b != list.begin();) {
    --b;
    if (t - profile_.marks[*b].time_ns > kWindowNs) break;
    if (mark_lines_[*b].file != 0) return mark_lines_[*b];
  }
  for (auto a = pos; a != list.end() && profile_.marks[*a].time_ns - t <= kWindowNs; ++a)
    if (mark_lines_[*a].file != 0) return mark_lines_[*a];
  return {};
}

}  // namespace sightline::attribution
