// The line of each CUDA API call, found once by trying the methods in order (internal to
// analysis/attribution; the order and what each method means: attribution.h). Also the host
// line during a GPU idle gap, and the forward op around a call.
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "analysis/attribution/autograd_ranges.h"
#include "analysis/attribution/backtrace_index.h"
#include "analysis/attribution/compiled_frames.h"
#include "analysis/attribution/nvtx_site_ranges.h"
#include "analysis/attribution/python_calls.h"

namespace sightline::attribution {

class LineResolver {
 public:
  LineResolver(const model::Profile& profile, const Options& options);

  // The line API call `api` is charged to (file 0: none), computed once.
  LineRef lineOfCall(size_t api);
  // The host line while the GPU idles in `gap`, on the thread of call `api` (which ends it).
  LineRef hostLineAt(uint32_t api, const IdleGap& gap);
  // The user line running at t on (pid, tid), else on the process's Python thread (the
  // autograd engine's thread runs beneath `loss.backward()` there): file 0 when none.
  LineRef lineAtTime(uint32_t pid, uint32_t tid, int64_t t);
  // The outermost operator range running at t on (pid, tid) (into Profile::ranges), or -1.
  int operatorAtTime(uint32_t pid, uint32_t tid, int64_t t) const { return ranges_.outermostOpAt(pid, tid, t); }
  // The forward autograd op around call `api` (0: none), computed once.
  model::StringId forwardOpOf(size_t api);
  const BacktraceIndex& backtraces() const { return backtraces_; }
  ContextTable& contexts() { return contexts_; }

  // The lines of the kernels a CUDA graph launch replays (`mode="reduce-overhead"`), in the
  // order they ran, when the launch ran from a compiled function whose wrapper recorded them:
  // a Triton kernel by its name (the k-th of a name at the k-th site launching it), an extern
  // call's kernels by their place between those. Empty when they cannot be placed.
  std::vector<LineRef> replayedKernelLines(size_t api, const std::vector<model::StringId>& kernels);
  // Whether stacks through generated code were mapped (there are launch sites to place on).
  bool hasCompiledSites() const;

 private:
  LineRef resolve(const model::ApiCall& call);
  // Backward work on a thread of its own (the autograd engine) also ran beneath the line the
  // process's Python thread was in (`loss.backward()`): its context joins the forward one.
  LineRef withCaller(LineRef ref, const model::ApiCall& call);
  // A launch's line from Python calls: backward work at its forward op, the rest where it ran.
  LineRef lineFromPythonCalls(const model::ApiCall& call, int inner_range);
  // A launch without a backtrace between two backtraced launches of one generated wrapper: the
  // wrapper's launch sites between those two, in order (cuBLAS and attention calls).
  LineRef lineFromCompiledSites(const model::ApiCall& call);
  // A site's line under the frames above the wrapper in `mark`, as a stack would give it: the
  // innermost user line of the site's stack, else of the frames above (a model in a library,
  // torchvision's: the user's call of it; none on the autograd engine's thread then); its
  // context holds the user lines of both.
  struct SiteLine {
    LineKey at;
    uint32_t context = 0;
  };
  SiteLine siteLine(int32_t site, uint32_t mark);
  // The site's own user lines (outermost first) and whether a file is the user's, once each.
  const std::vector<FrameLine>& userLinesOf(int32_t site);
  bool isUserFile(model::StringId file);
  // The sites of one wrapper, [first, last], that a sequence of its kernels ran from: a Triton
  // kernel by its name (the k-th of a name at the k-th site launching it), the rest at the
  // extern sites between those, evenly; -1 where none fits.
  std::vector<int32_t> sitesOfKernels(int32_t first, int32_t last, const std::vector<model::StringId>& kernels);
  // The sites among `between` (extern calls of one wrapper, in order) that a run of launches
  // ran from, by each kernel's family (extern_sites.h), else by position.
  std::vector<int32_t> placeBetween(const std::vector<model::StringId>& kernels, const std::vector<int32_t>& between);
  // The name of the first GPU activity call `api` launched (0: none), from an index built once.
  model::StringId kernelOf(uint32_t api);
  // The lines of the launches inside traced calls of generated wrappers (PyTorch profiler
  // traces), once: each launch at its site by the name of its first kernel, in order.
  void placeTracedCalls();
  // This thread's launching calls, in time order.
  const std::vector<uint32_t>& launchesOf(uint32_t pid, uint32_t tid);
  // The user line of a forward autograd range: a backtrace inside its outermost autograd
  // ancestor, else the backtraces bracketing it, else the nearest sample.
  LineRef lineOfForwardRange(int range);
  bool enabled(Method m) const { return (options_.methods >> static_cast<unsigned>(m)) & 1u; }

  const model::Profile& profile_;
  const Options& options_;
  ContextTable contexts_;
  BacktraceIndex backtraces_;
  AutogradRanges ranges_;
  NvtxSiteRanges site_ranges_;
  PythonCalls python_calls_;
  std::vector<LineRef> call_lines_;  // per API call, valid where call_resolved_
  std::vector<bool> call_resolved_;
  std::vector<int64_t> call_ops_;                         // per API call: forward op name, -1 until computed
  std::unordered_map<int, LineRef> forward_range_lines_;  // outermost autograd range -> line
  std::unordered_map<uint64_t, std::vector<uint32_t>> thread_launches_;  // thread -> its launching calls
  std::unordered_map<uint32_t, LineRef> traced_lines_;                   // API call -> its site (traced calls)
  bool traced_placed_ = false;
  // siteLine's user frames above the wrapper: per mark, an id for each distinct list (the
  // replays of one CUDA graph from one line share it), the line of (site, that id), and each
  // site's own user lines.
  std::unordered_map<uint32_t, uint32_t> outer_of_mark_;
  std::map<std::vector<FrameLine>, uint32_t> outer_ids_;
  std::vector<const std::vector<FrameLine>*> outer_lines_;
  std::unordered_map<uint64_t, SiteLine> site_lines_;
  std::unordered_map<int32_t, std::vector<FrameLine>> site_user_lines_;
  // sitesOfKernels' Triton sites of one wrapper (by its first site): per kernel name, in order,
  // and the list of each of the profile's kernel names met (-1: none).
  struct WrapperSites {
    std::unordered_map<std::string_view, int32_t> list_of_name;
    std::vector<std::vector<int32_t>> lists;
    std::unordered_map<model::StringId, int32_t> list_of_kernel;
  };
  std::unordered_map<int32_t, WrapperSites> wrapper_sites_;
  // lineFromCompiledSites' placement of the launches after each backtraced mark.
  std::unordered_map<uint32_t, std::vector<int32_t>> window_sites_;
  bool kernels_indexed_ = false;
  std::unordered_map<uint32_t, model::StringId> kernel_of_call_;
  // Whether a string table entry names a user file, computed once per file.
  std::unordered_map<model::StringId, bool> user_files_;
};

}  // namespace sightline::attribution
