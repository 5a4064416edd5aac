// Code actions: the quick fixes of findings, and the refactors that need no profile (NVTX
// ranges, a timed-then-profiled window in a cudaProfilerApi capture range). Each action is a list of byte-offset edits
// that leaves valid Python, and is not offered again once applied.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/features/diagnostics.h"

namespace sightline::features {

struct CodeAction {
  std::string title;
  std::string kind;  // "quickfix" or "refactor.rewrite"
  std::vector<TextEdit> edits;
  int finding = -1;  // for a quick fix: index into the findings passed in
  bool preferred = false;
};

struct ActionOptions {
  uint32_t profile_first_step = 25;   // first iteration inside the capture window (0-based)
  uint32_t profile_last_step = 29;    // last iteration inside it
  uint32_t profile_timed_steps = 20;  // iterations timed without the profiler just before it
};

// Quick fixes of findings overlapping `selection`, then the refactors available there.
std::vector<CodeAction> computeCodeActions(const source::SourceFile& file, const source::SourceIndex& index,
                                           ByteRange selection, const std::vector<Finding>& findings,
                                           const ActionOptions& options);

// The single refactors, for callers (commands, tests) that want one by name.
// `name` overrides the range's name (otherwise the first call's callee, or the function's name).
std::optional<CodeAction> wrapInNvtxRange(const source::SourceFile& file, const source::SourceIndex& index,
                                          ByteRange selection, const std::string& name = "");
std::optional<CodeAction> annotateTrainingStep(const source::SourceFile& file, const source::SourceIndex& index,
                                               uint32_t offset);
// Sightline's measuring window in the training loop at `offset` (what `sightline capture` does
// from outside, docs/capture.md): iterations first..last inside nsys's cudaProfilerApi range,
// the `timed_steps` before them (leaving at least one to warm up) timed with CUDA events and no
// profiler, all written as <script>-profile.steps.json. None where the file opens a range.
std::optional<CodeAction> limitProfilingWindow(const source::SourceFile& file, const source::SourceIndex& index,
                                               uint32_t offset, uint32_t first_step, uint32_t last_step,
                                               uint32_t timed_steps = 20);
// GPU memory history recorded for steps first..last of the training loop at `offset`, a snapshot
// dumped at the window's end and, through PyTorch's out-of-memory observer, when it runs out
// (docs/memory.md). None where the file records memory already.
std::optional<CodeAction> recordMemoryHistory(const source::SourceFile& file, const source::SourceIndex& index,
                                              uint32_t offset, uint32_t first_step, uint32_t last_step);

}  // namespace sightline::features
