// The attribution methods in order, per API call.
#include "analysis/attribution/line_resolver.h"

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
    LineRef ref = resolve(profile_.api_calls[api]);
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
    if (ref.file != 0) return ref;
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
  if (ref.file == 0) ref = backtraces_.nearestSample(r.pid, r.tid, r.start_ns);
  return forward_range_lines_[outer] = ref;
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
