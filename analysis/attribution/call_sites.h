// Call sites for traces that name Python frames by their callee only (the PyTorch profiler's
// `python_function` events carry the callee's `def` line, never the line that made the call).
// From the source index: every function body's calls in evaluation order, each with what a
// trace would show for it (the callee's last name, the nn.Module class it holds). Then one
// invocation's traced children, in time order, are aligned with those calls: a child that
// names a call (`nn.Module: Conv2d_0` <-> `self.conv(x)`, `cross_entropy` <-> `F.cross_entropy`,
// `<built-in method item ...>` <-> `loss.item()`) takes the next such call after the previous
// match, wrapping around as loops repeat; unnamed children between two matches take the
// unmatched calls between them when the counts agree. The rest stays on the `def` line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/profile.h"
#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::attribution {

struct SiteCall {
  int32_t line = 0;  // 1-based line of the call
  std::string name;  // callee's last name ("relu", "item", "conv"); "__next__" for a `for` header
  // The nn.Module classes the callee holds, when known ("Conv2d", "Net"; `model = GPT()` then
  // `model = DDP(model)` gives both, the imported alias resolved: "DistributedDataParallel").
  std::vector<std::string> module_classes;
  bool object_call = false;  // the callee is a name (a `for` target too) or attribute no `def` of the file defines
};

struct SiteFunction {
  std::string name;             // "<module>" for module scope
  int32_t first_line = 0;       // 1-based: the first decorator line, else the def line
  int32_t def_line = 0;         // 1-based
  int32_t last_line = 0;        // 1-based
  std::vector<SiteCall> calls;  // in evaluation order (callee and arguments before the call)
};

struct CallSiteTable {
  std::vector<SiteFunction> functions;  // [0] is module scope

  // The function a traced frame `name` at `line` runs: the def (or decorator) line of a
  // function of that name, else the innermost one of that name whose body holds the line
  // (frames already running when tracing began), else module scope for "<module>"; -1 if none.
  int functionFor(std::string_view name, int32_t line) const;
};

CallSiteTable buildCallSites(const source::SourceFile& file, const source::SourceIndex& index);

// One child of an invocation, as the trace shows it.
struct TracedChild {
  model::CallKind kind = model::CallKind::Builtin;
  std::string_view name;                    // function, module class or builtin name; op name for ops
  std::vector<std::string_view> alt_names;  // names of its first callees (decorators' wrappers hide names)
  bool is_op = false;                       // an op with no Python frame between it and the invocation
};

struct Placement {
  int32_t line = 0;  // 0: no call site found (charge the function)
  bool aligned = false;
};

// Placements for `children` (time order) of one invocation of `function`. `running_line`: for a
// frame that was already running when tracing began, the line it was on (its first child is
// the call on that line), else 0.
std::vector<Placement> alignChildren(const SiteFunction& function, const std::vector<TracedChild>& children,
                                     int32_t running_line = 0);

}  // namespace sightline::attribution
