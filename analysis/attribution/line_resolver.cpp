// The attribution methods in order, per API call.
#include "analysis/attribution/line_resolver.h"

#include <algorithm>
#include <map>
#include <string>

#include "analysis/attribution/compiled_frames.h"
#include "analysis/attribution/extern_sites.h"

namespace sightline::attribution {

LineResolver::LineResolver(const model::Profile& profile, const Options& options)
    : profile_(profile),
      options_(options),
      backtraces_(profile, options.is_user_file ? options.is_user_file : isDefaultUserFile, contexts_),
      ranges_(profile),
      site_ranges_(profile, options.nvtx_sites),
      python_calls_(profile, options, contexts_),
      call_lines_(profile.api_calls.size()),
      call_resolved_(profile.api_calls.size(), false),
      call_ops_(profile.api_calls.size(), -1) {}

LineRef LineResolver::lineOfCall(size_t api) {
  if (!call_resolved_[api]) {
    call_resolved_[api] = true;
    if (!traced_placed_) placeTracedCalls();
    auto traced = traced_lines_.find(static_cast<uint32_t>(api));
    LineRef ref = traced != traced_lines_.end() ? traced->second : resolve(profile_.api_calls[api]);
    if (ref.file != 0 && ref.context == 0) ref.context = contexts_.single(ref.file, ref.line);
    call_lines_[api] = ref;
  }
  return call_lines_[api];
}

model::StringId LineResolver::forwardOpOf(size_t api) {
  if (call_ops_[api] < 0) call_ops_[api] = static_cast<int64_t>(ranges_.forwardOpOf(profile_.api_calls[api]));
  return static_cast<model::StringId>(call_ops_[api]);
}

LineRef LineResolver::resolve(const model::ApiCall& c) {
  int inner = ranges_.innermostRange(c.pid, c.tid, c.start_ns);
  if (!python_calls_.empty()) {
    LineRef ref = lineFromPythonCalls(c, inner);
    if (ref.file != 0) return ref;
  }
  if (enabled(Method::Stack)) {
    LineRef ref = backtraces_.stackLineWithin(c.pid, c.tid, c.start_ns, c.end_ns);
    if (ref.file != 0) return ref.backward ? withCaller(ref, c) : ref;  // compiled backward: and its caller
  }
  if (enabled(Method::Inferred) && hasCompiledSites()) {
    LineRef ref = lineFromCompiledSites(c);
    if (ref.file != 0) return ref.backward ? withCaller(ref, c) : ref;
  }
  // Backward: the innermost autograd range with a seq on this thread is an XBackward op (or
  // work the engine runs inside `evaluate_function: XBackward0` after it closed).
  int fwd = enabled(Method::Backward) ? ranges_.forwardOpOfBackward(inner) : -1;
  if (fwd >= 0) {
    LineRef ref = lineOfForwardRange(fwd);
    if (ref.file != 0) return withCaller({ref.file, ref.line, Method::Backward, true, false, ref.context}, c);
  }
  // Op: the outermost forward autograd range around the call has a backtraced call.
  int outer = ranges_.outermostAutograd(inner);
  if (enabled(Method::Op) && outer >= 0 && !ranges_.isBackwardOp(ranges_.range(outer))) {
    const auto& r = ranges_.range(outer);
    LineRef ref = backtraces_.stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
    if (ref.file != 0) return {ref.file, ref.line, Method::Op, ref.backward, false, ref.context};
  }
  if (enabled(Method::Inferred)) {
    LineRef ref = backtraces_.bracketedLine(c.pid, c.tid, c.start_ns);
    if (ref.file != 0) return {ref.file, ref.line, Method::Inferred, ref.backward, ref.input, ref.context};
  }
  // Inferred, nested: a forward op with no backtraced call (cuBLAS's cudaLaunchKernelExC gets no
  // Python backtrace) between a call into a function and one inside it: the deeper line.
  if (enabled(Method::Inferred) && outer >= 0 && !ranges_.isBackwardOp(ranges_.range(outer))) {
    const auto& r = ranges_.range(outer);
    LineRef ref = backtraces_.nestedLine(r.pid, r.tid, r.start_ns, r.end_ns);
    if (ref.file != 0) return {ref.file, ref.line, Method::Inferred, ref.backward, ref.input, ref.context};
  }
  if (enabled(Method::Sample)) {
    LineRef ref = backtraces_.nearestSample(c.pid, c.tid, c.start_ns);
    if (ref.file != 0) return {ref.file, ref.line, Method::Sample, ref.backward, ref.input, ref.context};
  }
  // Nvtx: the innermost user range that a source site opens around the call.
  if (enabled(Method::Nvtx)) {
    if (const NvtxSite* site = site_ranges_.siteAround(c.pid, c.tid, c.start_ns))
      return {site->file, site->line, Method::Nvtx, ranges_.inBackwardOp(inner)};
  }
  // Caller: a thread without Python (the autograd engine) works for the process's Python thread;
  // inside autograd ranges that work is the backward pass.
  if (enabled(Method::Caller)) {
    LineRef ref = backtraces_.callerLine(c.pid, c.tid, c.start_ns);
    if (ref.file != 0)
      return {ref.file, ref.line, Method::Caller, inner >= 0 || ranges_.inBackwardOp(inner), false, ref.context};
  }
  return {};
}

LineRef LineResolver::withCaller(LineRef ref, const model::ApiCall& c) {
  const auto* main = backtraces_.mainThread(c.pid);
  bool on_main = false;
  if (main && !main->backtraces.empty()) {
    const auto& first = profile_.marks[main->backtraces.front()];
    on_main = first.tid == c.tid;
  }
  if (on_main) return ref;
  LineRef caller = backtraces_.mainLineAt(c.pid, c.start_ns);
  if (caller.file != 0)
    ref.context = contexts_.merge(ref.context ? ref.context : contexts_.single(ref.file, ref.line), caller.context);
  return ref;
}

LineRef LineResolver::lineFromCompiledSites(const model::ApiCall& c) {
  constexpr int64_t kWindowNs = 50'000'000;  // one call() of a wrapper
  const auto& map = *options_.compiled;
  const auto& threads = backtraces_.byThread();
  auto t = threads.find(model::threadKey(c.pid, c.tid));
  if (t == threads.end()) return {};
  const auto& list = t->second.backtraces;
  auto pos = std::lower_bound(list.begin(), list.end(), c.start_ns,
                              [&](uint32_t idx, int64_t time) { return profile_.marks[idx].time_ns < time; });
  if (pos == list.begin() || pos == list.end()) return {};
  uint32_t prev = *std::prev(pos), next = *pos;
  int32_t a = map.mark_site[prev], b = map.mark_site[next];
  if (a < 0 || b <= a || map.sites[a].module != map.sites[b].module) return {};
  int64_t from = profile_.marks[prev].time_ns, until = profile_.marks[next].time_ns;
  if (until - from > kWindowNs) return {};
  // The earlier site too when it is an extern call: cuDNN attention sets memory (backtraced)
  // and launches its kernels (not).
  std::vector<int32_t> between;
  for (int32_t s = map.sites[a].single ? a + 1 : a; s < b; ++s)
    if (map.sites[s].at.first != 0) between.push_back(s);
  if (between.empty()) return {};
  // This thread's launching calls after the earlier backtrace and before the later one, which
  // took none of their own: the call's place among them picks its site.
  const auto& launches = launchesOf(c.pid, c.tid);
  auto first = std::upper_bound(launches.begin(), launches.end(), from,
                                [&](int64_t time, uint32_t i) { return time < profile_.api_calls[i].start_ns; });
  size_t n = 0, k = 0;
  for (auto it = first; it != launches.end() && profile_.api_calls[*it].start_ns < until; ++it) {
    const auto& x = profile_.api_calls[*it];
    if (x.end_ns >= until && x.start_ns <= until) continue;  // the later backtrace's own call
    if (&x == &c) k = n;
    ++n;
  }
  if (n == 0) return {};
  auto [placed, fresh] = window_sites_.try_emplace(prev);
  if (fresh) {
    std::vector<model::StringId> names;
    for (auto it = first; it != launches.end() && profile_.api_calls[*it].start_ns < until; ++it) {
      const auto& x = profile_.api_calls[*it];
      if (x.end_ns >= until && x.start_ns <= until) continue;
      names.push_back(kernelOf(*it));
    }
    placed->second = placeBetween(names, between);
  }
  if (k >= placed->second.size() || placed->second[k] < 0) return {};
  int32_t site = placed->second[k];
  SiteLine at = siteLine(site, prev);
  LineRef ref{at.at.first, at.at.second, Method::Inferred, map.sites[site].backward};
  ref.context = at.context;
  return ref;
}

bool LineResolver::hasCompiledSites() const { return options_.compiled && !options_.compiled->sites.empty(); }

bool LineResolver::isUserFile(model::StringId file) {
  auto [user, fresh] = user_files_.try_emplace(file);
  if (fresh) user->second = backtraces_.isUser(profile_.strings[file]);
  return user->second;
}

const std::vector<FrameLine>& LineResolver::userLinesOf(int32_t site) {
  auto [lines, fresh] = site_user_lines_.try_emplace(site);
  if (fresh)
    for (const auto& l : options_.compiled->sites[site].stack)
      if (isUserFile(l.first)) lines->second.push_back({l.first, l.second});
  return lines->second;
}

namespace {

// The line a site is charged to: its innermost user line, else the user line above the wrapper
// (file 0: none).
FrameLine chargedLine(const std::vector<FrameLine>& site_lines, FrameLine above) {
  return site_lines.empty() ? above : site_lines.back();
}

}  // namespace

LineResolver::SiteLine LineResolver::siteLine(int32_t site, uint32_t mark) {
  const auto& map = *options_.compiled;
  // The user lines above the wrapper (the loop's line), innermost first, once per distinct list.
  auto [outer, added] = outer_of_mark_.try_emplace(mark);
  if (added) {
    std::vector<FrameLine> above;
    const auto& m = profile_.marks[mark];
    for (uint32_t f = map.mark_outer[mark]; f < m.frame_count; ++f) {
      const auto& frame = profile_.frames[m.first_frame + f];
      if (frame.line > 0 && isUserFile(frame.file)) above.push_back({frame.file, frame.line});
    }
    auto [id, fresh] = outer_ids_.try_emplace(std::move(above), static_cast<uint32_t>(outer_lines_.size()));
    if (fresh) outer_lines_.push_back(&id->first);
    outer->second = id->second;
  }
  auto [line, fresh] = site_lines_.try_emplace((static_cast<uint64_t>(site) << 32) | outer->second);
  if (fresh) {
    const auto& above = *outer_lines_[outer->second];
    std::vector<FrameLine> lines = userLinesOf(site);
    // None on the autograd engine's thread running a library's model: other methods place it.
    FrameLine at = chargedLine(lines, above.empty() ? FrameLine{} : above.front());
    line->second.at = {at.file, at.line};
    lines.insert(lines.end(), above.begin(), above.end());
    line->second.context = contexts_.intern(std::move(lines));
  }
  return line->second;
}

std::vector<LineRef> LineResolver::replayedKernelLines(size_t api, const std::vector<model::StringId>& kernels) {
  if (!hasCompiledSites()) return {};
  const auto& map = *options_.compiled;
  const auto& c = profile_.api_calls[api];
  int64_t mark = backtraces_.markWithin(c.pid, c.tid, c.start_ns, c.end_ns);
  if (mark < 0 || map.mark_site[mark] < 0) return {};
  uint32_t module = map.sites[map.mark_site[mark]].module;
  int32_t first = map.mark_site[mark], last = first;
  while (first > 0 && map.sites[first - 1].module == module) --first;
  while (last + 1 < static_cast<int32_t>(map.sites.size()) && map.sites[last + 1].module == module) ++last;
  std::vector<int32_t> site_of = sitesOfKernels(first, last, kernels);
  std::vector<LineRef> out(kernels.size());
  LineRef fallback = lineOfCall(api);
  for (size_t k = 0; k < kernels.size(); ++k) {
    int32_t s = site_of[k];
    if (s < 0 || map.sites[s].at.first == 0) {
      out[k] = fallback;
      continue;
    }
    SiteLine at = siteLine(s, static_cast<uint32_t>(mark));
    if (at.at.first == 0) {
      out[k] = fallback;
      continue;
    }
    out[k] = {at.at.first, at.at.second, Method::Stack, map.sites[s].backward};
    out[k].context = at.context;
    if (out[k].backward) out[k] = withCaller(out[k], c);
  }
  return out;
}

std::vector<int32_t> LineResolver::sitesOfKernels(int32_t first, int32_t last,
                                                  const std::vector<model::StringId>& kernels) {
  const auto& map = *options_.compiled;
  // Triton kernels by name, in order.
  std::vector<int32_t> site_of(kernels.size(), -1);
  auto [wrapper, fresh] = wrapper_sites_.try_emplace(first);
  WrapperSites& w = wrapper->second;
  if (fresh)
    for (int32_t s = first; s <= last; ++s) {
      if (!map.sites[s].single) continue;
      auto [list, added] = w.list_of_name.try_emplace(map.sites[s].kernel, static_cast<int32_t>(w.lists.size()));
      if (added) w.lists.emplace_back();
      w.lists[static_cast<size_t>(list->second)].push_back(s);
    }
  std::vector<size_t> seen(w.lists.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    auto [list, added] = w.list_of_kernel.try_emplace(kernels[k], -1);
    if (added)
      if (auto it = w.list_of_name.find(profile_.strings[kernels[k]]); it != w.list_of_name.end())
        list->second = it->second;
    if (list->second < 0) continue;
    const auto& sites = w.lists[static_cast<size_t>(list->second)];
    size_t nth = seen[static_cast<size_t>(list->second)]++;
    if (nth < sites.size()) site_of[k] = sites[nth];
  }
  // The rest: the extern sites between the Triton kernels around them.
  for (size_t k = 0; k < kernels.size();) {
    if (site_of[k] >= 0) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < kernels.size() && site_of[end] < 0) ++end;
    int32_t lo = k > 0 ? site_of[k - 1] + 1 : first, hi = end < kernels.size() ? site_of[end] : last + 1;
    std::vector<int32_t> between;
    for (int32_t s = lo; s < hi; ++s)
      if (!map.sites[s].single && map.sites[s].at.first != 0) between.push_back(s);
    std::vector<model::StringId> run(kernels.begin() + static_cast<std::ptrdiff_t>(k),
                                     kernels.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<int32_t> placed = placeBetween(run, between);
    std::copy(placed.begin(), placed.end(), site_of.begin() + static_cast<std::ptrdiff_t>(k));
    k = end;
  }
  return site_of;
}

std::vector<int32_t> LineResolver::placeBetween(const std::vector<model::StringId>& kernels,
                                                const std::vector<int32_t>& between) {
  const auto& map = *options_.compiled;
  size_t n = kernels.size();
  std::vector<int32_t> out(n, -1);
  if (between.empty()) return out;
  // By what each kernel is: attention kernels on the attention call, GEMMs on the matmuls.
  std::vector<KernelFamily> families, calls;
  for (model::StringId k : kernels) families.push_back(k ? familyOfKernel(profile_.strings[k]) : KernelFamily::Before);
  for (int32_t s : between) calls.push_back(familyOfCall(map.sites[s].kernel));
  std::vector<int32_t> matched = matchExternCalls(families, calls);
  if (!matched.empty()) {
    for (size_t j = 0; j < n; ++j) out[j] = between[static_cast<size_t>(matched[j])];
    return out;
  }
  // Else by position: the j-th of n launches at the same share of the calls.
  for (size_t j = 0; j < n; ++j)
    out[j] = between[n == between.size() ? j : std::min(between.size() - 1, j * between.size() / n)];
  return out;
}

model::StringId LineResolver::kernelOf(uint32_t api) {
  if (!kernels_indexed_) {
    kernels_indexed_ = true;
    std::unordered_map<uint64_t, model::StringId> by_correlation;
    for (const auto& act : profile_.activities)
      if (act.correlation >= 0) by_correlation.try_emplace(model::correlationKey(act.pid, act.correlation), act.name);
    for (uint32_t i = 0; i < profile_.api_calls.size(); ++i) {
      const auto& x = profile_.api_calls[i];
      if (!x.launches || x.correlation < 0) continue;
      auto it = by_correlation.find(model::correlationKey(x.pid, x.correlation));
      if (it != by_correlation.end()) kernel_of_call_.emplace(i, it->second);
    }
  }
  auto it = kernel_of_call_.find(api);
  return it == kernel_of_call_.end() ? 0 : it->second;
}

const std::vector<uint32_t>& LineResolver::launchesOf(uint32_t pid, uint32_t tid) {
  auto [it, added] = thread_launches_.try_emplace(model::threadKey(pid, tid));
  if (added) {
    for (uint32_t i = 0; i < profile_.api_calls.size(); ++i) {
      const auto& x = profile_.api_calls[i];
      if (x.launches && x.pid == pid && x.tid == tid) it->second.push_back(i);
    }
    std::stable_sort(it->second.begin(), it->second.end(), [&](uint32_t a, uint32_t b) {
      return profile_.api_calls[a].start_ns < profile_.api_calls[b].start_ns;
    });
  }
  return it->second;
}

void LineResolver::placeTracedCalls() {
  traced_placed_ = true;
  if (!hasCompiledSites() || options_.compiled->traced.empty()) return;
  const auto& map = *options_.compiled;
  // The launching calls inside each traced call, in order, and the name of each one's first kernel.
  std::vector<std::vector<uint32_t>> inside(map.traced.size());
  for (size_t t = 0; t < map.traced.size(); ++t) {
    const auto& call = profile_.calls[map.traced[t].call];
    const auto& launches = launchesOf(call.pid, call.tid);
    auto from = std::lower_bound(launches.begin(), launches.end(), call.start_ns,
                                 [&](uint32_t i, int64_t time) { return profile_.api_calls[i].start_ns < time; });
    for (auto it = from; it != launches.end() && profile_.api_calls[*it].start_ns <= call.end_ns; ++it)
      inside[t].push_back(*it);
  }
  for (size_t t = 0; t < map.traced.size(); ++t) {
    if (inside[t].empty()) continue;
    const auto& tc = map.traced[t];
    const auto& call = profile_.calls[tc.call];
    std::vector<model::StringId> names;
    for (uint32_t api : inside[t]) names.push_back(kernelOf(api));
    std::vector<int32_t> site_of = sitesOfKernels(tc.first_site, tc.end_site - 1, names);
    // A launch no site fits (a memset Inductor adds) goes with the launch before it, else after.
    for (size_t k = 1; k < site_of.size(); ++k)
      if (site_of[k] < 0) site_of[k] = site_of[k - 1];
    for (size_t k = site_of.size() - 1; k > 0; --k)
      if (site_of[k - 1] < 0) site_of[k - 1] = site_of[k];
    // The lines above the wrapper: where Python ran when it was called (the loop's line; for a
    // backward graph on the autograd engine's thread, `loss.backward()`).
    LineRef above = python_calls_.lineAt(call.pid, call.tid, call.start_ns);
    for (size_t k = 0; k < site_of.size(); ++k) {
      int32_t s = site_of[k];
      if (s < 0 || map.sites[s].at.first == 0) continue;
      // As siteLine: the site's innermost user line, else the line the wrapper was called from.
      const auto& lines = userLinesOf(s);
      FrameLine at = chargedLine(lines, {above.file, above.line});
      if (at.file == 0) continue;
      LineRef ref{at.file, at.line, Method::Aligned, map.sites[s].backward};
      ref.context = contexts_.intern(lines);
      if (above.file != 0) ref.context = contexts_.merge(ref.context, above.context);
      traced_lines_[inside[t][k]] = ref;
    }
  }
}

LineRef LineResolver::lineFromPythonCalls(const model::ApiCall& c, int inner) {
  int fwd = ranges_.forwardOpOfBackward(inner);
  if (fwd >= 0) {
    const auto& r = ranges_.range(fwd);
    LineRef ref = python_calls_.lineAt(r.pid, r.tid, r.start_ns);
    ref.backward = true;
    if (ref.file != 0) {
      // The backward pass's own line (`loss.backward()`), where Python ran at the time.
      LineRef caller = python_calls_.lineAt(c.pid, c.tid, c.start_ns);
      if (caller.file != 0) ref.context = contexts_.merge(ref.context, caller.context);
      return ref;
    }
  }
  LineRef ref = python_calls_.lineAt(c.pid, c.tid, c.start_ns);
  ref.backward = ranges_.inBackwardOp(inner);
  return ref;
}

LineRef LineResolver::lineOfForwardRange(int range) {
  int outer = ranges_.outermostAutograd(range);
  if (outer < 0) outer = range;
  auto cached = forward_range_lines_.find(outer);
  if (cached != forward_range_lines_.end()) return cached->second;
  const auto& r = ranges_.range(outer);
  LineRef ref = backtraces_.stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
  if (ref.file == 0) ref = backtraces_.bracketedLine(r.pid, r.tid, r.start_ns);
  if (ref.file == 0) ref = backtraces_.nestedLine(r.pid, r.tid, r.start_ns, r.end_ns);
  if (ref.file == 0) ref = backtraces_.nearestSample(r.pid, r.tid, r.start_ns);
  return forward_range_lines_[outer] = ref;
}

LineRef LineResolver::lineAtTime(uint32_t pid, uint32_t tid, int64_t t) {
  if (!python_calls_.empty()) return python_calls_.lineAt(pid, tid, t);
  return backtraces_.bracketedLine(pid, tid, t);
}

// The line running at the gap's middle (at its very start the host is usually still returning
// from the sync that drained the GPU): Python calls running then, else a sample inside the gap,
// else backtraces bracketing its middle, else the line of the call that ends the gap.
LineRef LineResolver::hostLineAt(uint32_t api, const IdleGap& gap) {
  const auto& c = profile_.api_calls[api];
  int64_t middle = gap.start_ns + (gap.end_ns - gap.start_ns) / 2;
  if (!python_calls_.empty()) {
    LineRef ref = python_calls_.lineAt(c.pid, c.tid, middle);
    if (ref.file != 0) return ref;
  }
  LineRef ref = backtraces_.sampleWithin(c.pid, c.tid, gap.start_ns, gap.end_ns);
  if (ref.file == 0) ref = backtraces_.bracketedLine(c.pid, c.tid, middle);
  return ref.file != 0 ? ref : lineOfCall(api);
}

}  // namespace sightline::attribution
