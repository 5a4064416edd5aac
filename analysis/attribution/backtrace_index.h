// Python backtraces and samples per thread, each resolved once to its innermost user frame
// (internal to analysis/attribution). Answers the stack, inferred and sample methods: a
// backtrace taken during a call, backtraces bracketing a time that agree, the nearest sample.
#pragma once

#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/contexts.h"

namespace sightline::attribution {

class BacktraceIndex {
 public:
  // Each resolvable mark's lines are interned into `contexts` (LineRef::context).
  BacktraceIndex(const model::Profile& profile, std::function<bool(std::string_view)> is_user, ContextTable& contexts);

  // stack: the first backtrace on the thread within [start, end] that resolves to a user line.
  LineRef stackLineWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const;
  // The first backtrace on the thread within [start, end] (a mark index), or -1.
  int64_t markWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const;
  // inferred: the nearest resolvable backtraces before and after t on the thread agree.
  LineRef bracketedLine(uint32_t pid, uint32_t tid, int64_t t) const;
  // nested: the nearest resolvable backtraces before `from` and after `until` on the thread,
  // when one's user lines are the other's with inner frames added (the call into a function,
  // or its last launch before it returned): the deeper one's line, where work between ran.
  LineRef nestedLine(uint32_t pid, uint32_t tid, int64_t from, int64_t until) const;
  // sample: the nearest periodic sample on the thread within 20 ms, the one before t first.
  LineRef nearestSample(uint32_t pid, uint32_t tid, int64_t t) const;
  // The first resolvable sample on the thread within [start, end).
  LineRef sampleWithin(uint32_t pid, uint32_t tid, int64_t start_ns, int64_t end_ns) const;
  // caller: for a thread without backtraces, the last resolvable backtrace at or before t of
  // its process's Python thread (the one with the most backtraces).
  LineRef callerLine(uint32_t pid, uint32_t tid, int64_t t) const;
  // The last resolvable backtrace at or before t of the process's Python thread (any caller).
  LineRef mainLineAt(uint32_t pid, int64_t t) const;

  struct ThreadMarks {
    std::vector<uint32_t> backtraces;  // indices into Profile::marks, by time
    std::vector<uint32_t> samples;
  };
  const std::unordered_map<uint64_t, ThreadMarks>& byThread() const { return by_thread_; }
  bool isUser(std::string_view path) const { return is_user_(path); }
  // The process's Python thread: the one whose backtraces reach the user's code most often (not
  // the autograd engine's, whose backtraces of compiled backward graphs stop in generated code).
  const ThreadMarks* mainThread(uint32_t pid) const {
    auto it = main_thread_.find(pid);
    return it == main_thread_.end() ? nullptr : it->second;
  }

 private:
  const ThreadMarks* thread(uint32_t pid, uint32_t tid) const;
  // The first resolvable mark of `list` at or after `from`, up to `until` (inclusive or not).
  LineRef firstResolvable(const std::vector<uint32_t>& list, int64_t from, int64_t until, bool inclusive) const;

  const model::Profile& profile_;
  std::function<bool(std::string_view)> is_user_;
  std::unordered_map<uint64_t, ThreadMarks> by_thread_;           // thread key -> its marks
  std::unordered_map<uint32_t, const ThreadMarks*> main_thread_;  // pid -> its Python thread
  std::vector<LineRef> mark_lines_;                               // per mark: its innermost user frame
  std::vector<uint32_t> mark_stacks_;                             // per mark: its user lines (stacks_)
  std::vector<std::vector<FrameLine>> stacks_;                    // user lines, innermost first
};

}  // namespace sightline::attribution
