// Does a local file still look like the source a profile measured? Profiles keep no copy or
// hash of the script, but they name functions at lines: nsys Python backtraces (function, line
// being run), PyTorch profiler traces (function, line of its frame). A profiled line that no
// longer falls inside a `def` of that name means the file changed since it was profiled, and
// the line costs would land on the wrong lines. The profile-source-mismatch finding built on
// this is in analysis/features/source_match.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/model/profile.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_index.h"

namespace sightline::join {

struct FunctionAnchor {
  model::StringId function = 0;
  int32_t line = 0;  // 1-based
};

// Distinct (function, line) pairs per profile path, from backtrace frames and Python calls.
std::map<model::StringId, std::vector<FunctionAnchor>> collectFunctionAnchors(const model::Profile& profile);

struct SourceMatch {
  size_t checked = 0;     // anchors on this file that could be checked
  size_t mismatched = 0;  // of those, lines that are not inside a def of the named function
  std::string example;    // "line 33 is not in `forward`"
  // The file differs from the profiled source (mismatches are not noise).
  bool differs() const { return mismatched > 0 && mismatched * 10 >= checked; }
};

// Checks `anchors` (of the profile paths that map onto this file) against the file; lines are
// taken through `tracker` (the editor's edits since the profile loaded are not a mismatch).
SourceMatch matchSource(const source::SourceFile& file, const source::SourceIndex& index,
                        const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                        const source::LineTracker* tracker = nullptr);

}  // namespace sightline::join
