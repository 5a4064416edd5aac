// torch.compile's generated code in Python stacks (internal to analysis/attribution, used by
// the join before attribution): a backtrace through an Inductor wrapper's `call()` at the line
// that launches a kernel is rewritten so that, in place of that frame, it runs through the user's
// lines the kernel computes (model/compiled_code.h), outermost first; frames of a backward
// graph mark the stack `backward`. Everything else about the stack stays: the loop's line above,
// Inductor's runtime below. Without the generated code the stacks are left alone and the work
// stays on the compiled function's lines; the mapping says which modules were missing.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"

namespace sightline::attribution {

using LineKey = std::pair<model::StringId, int32_t>;

struct CompiledMapping {
  uint64_t generated_marks = 0;              // Python stacks through a generated wrapper's code
  uint64_t mapped_marks = 0;                 // of those, rewritten onto the user's lines
  uint64_t backward_marks = 0;               // of those, from backward graphs
  uint64_t generated_calls = 0;              // traced Python calls into generated code (PyTorch profiler traces)
  uint64_t mapped_calls = 0;                 // of those, calls of modules read: their launches go to the sites
  std::vector<std::string> missing_modules;  // generated modules the profile ran that `code` lacks
  // Modules the profile ran that `code` holds as wrapper code only: no launch has a source line
  // (a cache's `xx/c<hash>.py` without its fxgraph/ entry, a TORCH_LOGS=output_code log).
  std::vector<std::string> lineless_modules;
  // Modules the profile ran found in `code` under another name (their launch lines matched):
  // (the profile's name, the one read).
  std::vector<std::pair<std::string, std::string>> substituted;
  std::vector<std::string> generated_dirs;        // folders the profile's generated modules were in
  bool provenance = false;                        // some mapped stacks are whole (Inductor's line map)
  std::map<LineKey, std::vector<LineKey>> fused;  // line charged -> other lines of its fused kernels
  // Every launch site of the modules read (module by module, in line order), and per profile
  // mark the site its stack was mapped from (-1: none) and where its frames above the wrapper
  // begin: launches without a stack of their own (cuBLAS calls) between two sites of one
  // wrapper take the sites between them (LineResolver).
  struct Site {
    uint32_t module = 0;
    LineKey at;                  // the line charged
    std::vector<LineKey> stack;  // the user's lines, outermost first
    bool backward = false;
    bool single = false;  // a Triton kernel: one launch (extern calls may launch several kernels)
    std::string kernel;   // the Triton kernel's name, else the extern call ("extern_kernels.mm")
  };
  std::vector<Site> sites;
  std::vector<int32_t> mark_site;
  std::vector<uint32_t> mark_outer;
  // Traced calls of a wrapper's `call()` (PyTorch profiler traces name the function, not the
  // line): the launches inside one take its sites [first_site, end_site) by kernel name and
  // order (LineResolver).
  struct TracedCall {
    uint32_t call = 0;  // index into Profile::calls
    int32_t first_site = 0, end_site = 0;
  };
  std::vector<TracedCall> traced;
};

// "c<hash>" when `path` names an Inductor wrapper module (`<cache>/xx/c<hash>.py`), else "".
std::string generatedModuleName(std::string_view path);

// Rewrites the profile's stacks through generated code it knows; with `code` null or empty it
// only counts them (and names the folders they were in).
CompiledMapping mapCompiledFrames(model::Profile& profile, const model::CompiledCode* code);

}  // namespace sightline::attribution
