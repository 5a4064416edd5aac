// Python calls: nesting per thread, children per call, and the line running at a time.
#include "analysis/attribution/python_calls.h"

#include <algorithm>

#include "analysis/attribution/thread_nesting.h"

namespace sightline::attribution {

PythonCalls::PythonCalls(const model::Profile& profile, const Options& options, ContextTable& contexts)
    : profile_(profile), options_(options), contexts_(contexts), user_files_(profile, options) {
  const auto& calls = profile_.calls;
  if (calls.empty()) return;
  thread_parent_ = enclosingOnThread(calls);
  uint64_t current = ~0ull;
  for (uint32_t i = 0; i < calls.size(); ++i) {
    uint64_t key = model::threadKey(calls[i].pid, calls[i].tid);
    if (key == current) continue;
    if (current != ~0ull) thread_span_[current].second = i;
    thread_span_[key] = {i, i};
    current = key;
  }
  thread_span_[current].second = static_cast<uint32_t>(calls.size());
  // Children by parent, in time order (calls are sorted by start within a thread; a child on
  // another thread than its parent is rare and sorted in by start below).
  child_offsets_.assign(calls.size() + 1, 0);
  for (const auto& c : calls)
    if (c.parent >= 0) ++child_offsets_[static_cast<size_t>(c.parent) + 1];
  for (size_t i = 0; i < calls.size(); ++i) child_offsets_[i + 1] += child_offsets_[i];
  child_list_.resize(child_offsets_.back());
  std::vector<uint32_t> fill(child_offsets_.begin(), child_offsets_.end() - 1);
  for (uint32_t i = 0; i < calls.size(); ++i)
    if (calls[i].parent >= 0) child_list_[fill[static_cast<size_t>(calls[i].parent)]++] = i;
  for (size_t i = 0; i < calls.size(); ++i)
    std::sort(child_list_.begin() + child_offsets_[i], child_list_.begin() + child_offsets_[i + 1],
              [&](uint32_t a, uint32_t b) { return calls[a].start_ns < calls[b].start_ns; });
}

int PythonCalls::innermostCall(uint32_t pid, uint32_t tid, int64_t t) const {
  constexpr int64_t kToleranceNs = 2;
  auto it = thread_span_.find(model::threadKey(pid, tid));
  if (it == thread_span_.end()) return -1;
  auto first = profile_.calls.begin() + it->second.first, last = profile_.calls.begin() + it->second.second;
  auto pos = std::upper_bound(first, last, t + kToleranceNs,
                              [](int64_t time, const model::PythonCall& c) { return time < c.start_ns; });
  if (pos == first) return -1;
  int j = static_cast<int>(pos - profile_.calls.begin()) - 1;
  while (j >= 0 && profile_.calls[static_cast<size_t>(j)].end_ns + kToleranceNs < t)
    j = thread_parent_[static_cast<size_t>(j)];
  return j;
}

// Thread 0 holds frames of threads that existed before tracing began: never nested under.
int PythonCalls::callOnOtherThread(uint32_t pid, uint32_t tid, int64_t t) const {
  int best = -1;
  for (const auto& [key, span] : thread_span_) {
    const auto& c = profile_.calls[span.first];
    if (c.pid != pid || c.tid == tid || c.tid == 0) continue;
    int j = innermostCall(c.pid, c.tid, t);
    if (j >= 0 && (best < 0 || profile_.calls[static_cast<size_t>(j)].start_ns >
                                   profile_.calls[static_cast<size_t>(best)].start_ns))
      best = j;
  }
  return best;
}

const model::PythonCall* PythonCalls::compiledModuleBelow(uint32_t call) const {
  // Dynamo's `__call__` -> OptimizedModule -> _call_impl -> compile_wrapper -> the model: a few
  // calls down, first calls first.
  std::vector<std::pair<uint32_t, int>> todo{{call, 0}};
  for (size_t i = 0; i < todo.size() && i < 64; ++i) {
    auto [id, depth] = todo[i];
    const auto& c = profile_.calls[id];
    if (id != call && c.kind == model::CallKind::Module && profile_.strings[c.function] != "OptimizedModule") return &c;
    if (depth < 6)
      for (uint32_t g = child_offsets_[id]; g < child_offsets_[id + 1]; ++g)
        todo.push_back({child_list_[g], depth + 1});
  }
  return nullptr;
}

std::vector<TracedChild> PythonCalls::tracedChildren(int frame, std::vector<uint32_t>& ids) const {
  std::vector<TracedChild> children;
  auto index = static_cast<size_t>(frame);
  for (uint32_t k = child_offsets_[index]; k < child_offsets_[index + 1]; ++k) {
    uint32_t id = child_list_[k];
    const auto& c = profile_.calls[id];
    TracedChild child;
    child.kind = c.kind;
    child.name = profile_.strings[c.function];
    // Names one and two calls down: a decorator's `wrapper` hides `step`, `inner` hides `zero_grad`.
    // A compiled module's call runs through Dynamo's `__call__` into the module it wraps: the
    // module call below stands for it (`model(x)` where `model = torch.compile(GPT(...))`).
    if (c.kind == model::CallKind::Function && child.name == "__call__" &&
        profile_.strings[c.file].find("_dynamo/eval_frame.py") != std::string::npos)
      if (const model::PythonCall* wrapped = compiledModuleBelow(id)) {
        child.kind = model::CallKind::Module;
        child.name = profile_.strings[wrapped->function];
      }
    for (uint32_t g = child_offsets_[id]; g < child_offsets_[id + 1] && child.alt_names.size() < 24; ++g) {
      uint32_t gid = child_list_[g];
      child.alt_names.push_back(profile_.strings[profile_.calls[gid].function]);
      for (uint32_t h = child_offsets_[gid]; h < child_offsets_[gid + 1] && child.alt_names.size() < 24; ++h)
        child.alt_names.push_back(profile_.strings[profile_.calls[child_list_[h]].function]);
    }
    children.push_back(std::move(child));
    ids.push_back(id);
  }
  return children;
}

const PythonCalls::Invocation& PythonCalls::invocationOf(int frame) {
  auto found = invocations_.find(frame);
  if (found != invocations_.end()) return found->second;
  Invocation& inv = invocations_[frame];
  const auto& f = profile_.calls[static_cast<size_t>(frame)];
  if (!options_.call_sites) return inv;
  inv.table = options_.call_sites(profile_.strings[f.file]);
  if (!inv.table) return inv;
  inv.function = inv.table->functionFor(profile_.strings[f.function], f.line);
  if (inv.function < 0) return inv;
  const SiteFunction& fn = inv.table->functions[static_cast<size_t>(inv.function)];
  std::vector<uint32_t> ids;
  auto children = tracedChildren(frame, ids);
  int32_t running = f.line != fn.def_line && f.line > fn.def_line && f.line != fn.first_line ? f.line : 0;
  if (inv.function == 0 && f.line > 1) running = f.line;
  auto placed = alignChildren(fn, children, running);
  for (size_t i = 0; i < ids.size(); ++i) inv.placements.emplace_back(ids[i], placed[i]);
  std::sort(inv.placements.begin(), inv.placements.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return inv;
}

int32_t PythonCalls::lineIn(int frame, int child, Method& method) {
  const auto& f = profile_.calls[static_cast<size_t>(frame)];
  const Invocation& inv = invocationOf(frame);
  int32_t def_line = f.line;
  if (inv.table && inv.function > 0) def_line = inv.table->functions[static_cast<size_t>(inv.function)].def_line;
  method = Method::Function;
  if (child < 0 || !enabled(Method::Aligned)) return enabled(Method::Function) ? def_line : 0;
  auto pos = std::lower_bound(inv.placements.begin(), inv.placements.end(), static_cast<uint32_t>(child),
                              [](const auto& entry, uint32_t id) { return entry.first < id; });
  if (pos != inv.placements.end() && pos->first == static_cast<uint32_t>(child) && pos->second.line > 0) {
    method = Method::Aligned;
    return pos->second.line;
  }
  return enabled(Method::Function) ? def_line : 0;
}

uint32_t PythonCalls::contextAbove(int frame, int32_t line, bool& input) {
  std::vector<FrameLine> lines{{profile_.calls[static_cast<size_t>(frame)].file, line}};
  int child = frame;
  for (int up = profile_.calls[static_cast<size_t>(frame)].parent; up >= 0;
       child = up, up = profile_.calls[static_cast<size_t>(up)].parent) {
    const auto& f = profile_.calls[static_cast<size_t>(up)];
    bool user = f.kind == model::CallKind::Function && user_files_.isUser(f.file);
    if (profile_.strings[f.file].find("torch/utils/data/") != std::string::npos ||
        (user && makesBatches(profile_.strings[f.function])))
      input = true;
    if (!user) continue;
    Method method = Method::Function;
    if (int32_t at = lineIn(up, child, method); at > 0) lines.push_back({f.file, at});
  }
  return contexts_.intern(std::move(lines));
}

// The innermost user frame, and the call in its body that leads to t.
LineRef PythonCalls::lineAt(uint32_t pid, uint32_t tid, int64_t t) {
  int leaf = innermostCall(pid, tid, t);
  if (leaf < 0) leaf = callOnOtherThread(pid, tid, t);
  if (leaf < 0) return {};
  int child = -1, frame = leaf;
  bool input = false;
  while (frame >= 0) {
    const auto& f = profile_.calls[static_cast<size_t>(frame)];
    if (f.kind == model::CallKind::Function && user_files_.isUser(f.file)) break;
    if (profile_.strings[f.file].find("torch/utils/data/") != std::string::npos) input = true;
    child = frame;
    frame = f.parent;
  }
  if (frame < 0) return {};
  Method method = Method::Function;
  int32_t line = lineIn(frame, child, method);
  if (line <= 0) return {};
  LineRef ref{profile_.calls[static_cast<size_t>(frame)].file, line, method, false};
  ref.context = contextAbove(frame, line, input);
  ref.input = input || makesBatches(profile_.strings[profile_.calls[static_cast<size_t>(frame)].function]);
  return ref;
}

}  // namespace sightline::attribution
