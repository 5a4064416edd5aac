// What torch.compile's compilations cost, per compiled function of the user's code, from the
// TORCH_TRACE records (model/compiled_code.h): its compiles and recompiles, their seconds and
// why they happened, and the graph breaks inside it. The resume functions Dynamo makes after a
// graph break (`torch_dynamo_resume_in_forward_at_22`) count for the function they continue.
// Also each compilation's window on the profile's clock, when both clocks are known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"

namespace sightline::join {

struct CompiledFunctionSummary {
  model::SourceLine function;            // its `def` line (the run's path)
  std::vector<model::SourceLine> calls;  // the user's lines that called it, first seen first
  int graphs = 0;                        // frames compiled: 1 + a resume function per graph break
  int compiles = 0;                      // compilations, recompiles included
  int recompiles = 0;
  double seconds = 0;  // compile time, all of them
  struct Reason {
    std::string text;    // the failed guard, numbers elided ("tensor 'x' size mismatch at index 0")
    bool value = false;  // a guard on a Python number's value: each new value recompiles
    int count = 0;
  };
  std::vector<Reason> recompile_reasons;  // most frequent first
  struct Break {
    int32_t line = 0;    // in the function's file
    std::string reason;  // Dynamo's one-line reason ("Unsupported Tensor.item() call with ...")
    std::string hint;    // Dynamo's hints for it, joined
    int count = 0;       // compilations that broke there
  };
  std::vector<Break> breaks;
  int recompile_limit = 0;    // > 0: Dynamo hit its recompile limit (this value) and runs the code eagerly since
  bool profile_only = false;  // known from the profile's frames alone (no TORCH_TRACE records): its breaks
};

// The compiled functions of `code`, in the order they first compiled.
std::vector<CompiledFunctionSummary> summarizeCompiles(const model::CompiledCode& code);

// Graph breaks the profile's own frames show: Dynamo's resume functions
// (`torch_dynamo_resume_in_forward_at_22` ran: forward broke at line 22), added to `summaries`
// (a function without TORCH_TRACE records gets one of its own, `profile_only`).
void addProfileGraphBreaks(const model::Profile& profile, std::vector<CompiledFunctionSummary>& summaries);

// Each compilation's window on `profile`'s clock, charged to the user's line that called the
// compiled function; empty when either clock is unknown. The profile's paths are interned.
std::vector<attribution::CompileWindow> compileWindows(const model::CompiledCode& code, model::Profile& profile);

}  // namespace sightline::join
