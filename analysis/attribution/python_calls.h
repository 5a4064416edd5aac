// The Python-call path of traces (internal to analysis/attribution): PyTorch profiler traces
// record Python calls (`python_function`) named by callee. The code running at a time is the
// innermost user frame; the line within it is found by aligning that frame's traced children
// with the calls of its body (call_sites.h): the aligned method, else the function method
// (the `def` line).
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/contexts.h"
#include "analysis/attribution/user_files.h"

namespace sightline::attribution {

class PythonCalls {
 public:
  PythonCalls(const model::Profile& profile, const Options& options, ContextTable& contexts);
  bool empty() const { return profile_.calls.empty(); }
  // The line of the Python code running at t on (pid, tid), or file 0.
  LineRef lineAt(uint32_t pid, uint32_t tid, int64_t t);

 private:
  struct Invocation {  // one traced call of a user function, its children placed on its lines
    const CallSiteTable* table = nullptr;
    int function = -1;
    std::vector<std::pair<uint32_t, Placement>> placements;  // by child call index
  };
  // The innermost Python call on (pid, tid) running at t (2 ns tolerance), or -1.
  int innermostCall(uint32_t pid, uint32_t tid, int64_t t) const;
  // Python running at t on another thread of the process, or -1.
  int callOnOtherThread(uint32_t pid, uint32_t tid, int64_t t) const;
  const Invocation& invocationOf(int frame);
  // The line in user frame `frame` that led to `child` (its aligned call), else its def line.
  int32_t lineIn(int frame, int child, Method& method);
  // The user lines of `frame` and the user frames above it, and whether data loading is among them.
  uint32_t contextAbove(int frame, int32_t line, bool& input);
  std::vector<TracedChild> tracedChildren(int frame, std::vector<uint32_t>& ids) const;
  // The module a torch.compile'd module wraps, called a few calls below Dynamo's `__call__` `call`.
  const model::PythonCall* compiledModuleBelow(uint32_t call) const;
  bool enabled(Method m) const { return (options_.methods >> static_cast<unsigned>(m)) & 1u; }

  const model::Profile& profile_;
  const Options& options_;
  ContextTable& contexts_;
  UserFiles user_files_;
  std::vector<int32_t> thread_parent_;  // the enclosing Python call on the same thread, by time
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> thread_span_;  // thread -> [first, last) calls
  std::vector<uint32_t> child_offsets_, child_list_;                         // children by parent, in time order
  std::unordered_map<int, Invocation> invocations_;                          // by frame (call index)
};

}  // namespace sightline::attribution
