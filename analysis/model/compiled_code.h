// What torch.compile generated for a run, read from its Inductor cache or TORCH_TRACE folder
// (ingest/inductor_reader.h): per generated wrapper module, the lines of its `call()` that launch
// GPU work and the user's lines each launch computes. Plain data; paths and lines are as the
// generated code names them (the machine that compiled), mapped onto local files like a
// profile's paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sightline::model {

struct SourceLine {
  std::string file;
  int32_t line = 0;  // 1-based
  std::string function;
  bool operator==(const SourceLine&) const = default;
};

// One launch in a wrapper's call(): a Triton kernel (`triton_poi_fused_gelu_3.run(...)`), an
// extern kernel (`extern_kernels.mm(...)`) or an ATen op (`torch.ops.aten._scaled_dot_...`).
struct CompiledLaunch {
  int32_t line = 0;    // 1-based line of the wrapper module
  std::string kernel;  // the Triton kernel's name, or "extern_kernels.mm", "aten.<op>"
  // The user's frames it computes, outermost first; the last is the line it is charged to.
  // One frame when only the innermost line is known (no provenance); empty: unresolved.
  std::vector<SourceLine> stack;
  std::vector<SourceLine> fused;  // other user lines whose nodes the same kernel computes
};

struct CompiledModule {
  std::string name;                      // the wrapper's file stem, "c<hash>": the frames' file name names it
  std::string path;                      // where it was read (a cache entry or a trace file)
  std::string graph;                     // AOT graph id ("0_forward", "1_backward")
  bool backward = false;                 // a backward graph: its lines are forward lines, its time their backward
  bool provenance = false;               // stacks are whole (Inductor's provenance line map), not innermost lines only
  std::vector<CompiledLaunch> launches;  // by line
};

// A compilation recorded in a TORCH_TRACE log (`compilation_metrics`).
struct CompileRecord {
  std::string id;                 // "0/0": frame 0, compile 0 (a recompile is "0/1")
  SourceLine function;            // the compiled function (co_filename, co_firstlineno, co_name)
  std::vector<SourceLine> stack;  // the user's stack when it compiled, outermost first (the function last)
  uint32_t pid = 0;               // the process that compiled (the log line's)
  std::string log;                // the TORCH_TRACE log it was read from
  double start_s = 0;             // when it began, seconds since the Unix epoch (0: unknown)
  double seconds = 0;             // entire_frame_compile_time_s
  std::string fail_type;          // a failed compile's exception, when recorded
  std::string fail_reason;        // its message ("Dynamo recompile limit exceeded ...")
  std::string recompile_reason;   // a recompile's failed guard ("0/0: tensor 'x' size mismatch at index 0. ...")
  std::vector<std::string> restart_reasons;  // graph breaks that restarted the trace
};

// A graph break Dynamo recorded (`dynamo_graph_break_reason`): the user line it broke at.
struct GraphBreak {
  SourceLine at;
  std::string reason;  // Dynamo's text: the reason, its explanation and hints
  std::string compile_id;
  uint32_t pid = 0;  // the process (the log line's)
  std::string log;   // the TORCH_TRACE log it was read from
};

struct CompiledCode {
  std::vector<CompiledModule> modules;
  std::vector<CompileRecord> compiles;
  std::vector<GraphBreak> graph_breaks;
  std::vector<std::string> sources;   // the folders read
  std::vector<std::string> warnings;  // entries that could not be read
  bool empty() const { return modules.empty() && compiles.empty(); }
};

}  // namespace sightline::model
