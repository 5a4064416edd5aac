#include "server/mcp/mcp_schemas.h"

namespace sightline::server::mcp {
namespace {

using nlohmann::json;

json integer(const char* description, int lo, int hi, int fallback) {
  return {{"type", "integer"}, {"minimum", lo}, {"maximum", hi}, {"default", fallback}, {"description", description}};
}
json choice(const char* description, const std::vector<std::string>& values, const char* fallback) {
  return {{"type", "string"}, {"enum", values}, {"default", fallback}, {"description", description}};
}
json input(json properties, const std::vector<std::string>& required = {}) {
  json out = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) out["required"] = required;
  return out;
}
// Outputs: the keys every answer has, typed; the rest as the report's JSON has them
// (docs/report-json.md), which the schema leaves open.
json output(json properties, const std::vector<std::string>& required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}};
}
const json kNumber = {{"type", "number"}};
const json kArray = {{"type", "array"}};
const json kString = {{"type", "string"}};
const json kPlaces = {{"type", "array"},
                      {"items",
                       {{"type", "object"},
                        {"properties", {{"path", kString}, {"line", {{"type", "integer"}}}, {"text", kString}}},
                        {"required", {"path", "line"}}}}};

std::vector<protocol::mcp::Tool> build() {
  std::vector<protocol::mcp::Tool> t;
  t.push_back({"step_verdict", "Why is the step slow",
               "The training step's verdict from the loaded profile: the step measured without the profiler (or as "
               "captured), what bounds it (GPU-bound, launch-bound, input-bound, communication, syncs), each cause "
               "with the lines that cause it, and the changes to try with what each would save. Start here.",
               input({{"lines", integer("lines shown per cause", 1, 50, 3)}}),
               output({{"bound", kString}, {"wall_ns", kNumber}, {"causes", kArray}, {"changes", kArray}},
                      {"bound", "wall_ns", "causes", "changes"})});
  t.push_back({"top_lines", "Costliest lines",
               "The lines of the workspace's scripts with the most GPU time: by their own time (self) or with "
               "everything they call (inclusive), forward, backward or both, each with its share of the step and, "
               "for several ranks, each rank's part and the slowest. Figures are ns over the profile's steady steps "
               "(`steps`); per_step_divisor turns them into per step.",
               input({{"by", choice("the line's own time, or with what it calls", {"self", "inclusive"}, "self")},
                      {"per", choice("per step or over the whole profile", {"step", "total"}, "step")},
                      {"pass", choice("forward, backward or both", {"all", "forward", "backward"}, "all")},
                      {"n", integer("lines shown", 1, 200, 10)},
                      {"path", {{"type", "string"}, {"description", "only this file (relative to the workspace)"}}}}),
               output({{"lines", kPlaces}, {"lines_total", kNumber}, {"lines_more", kNumber}, {"steps", kNumber}},
                      {"lines", "lines_total", "lines_more", "steps"})});
  t.push_back({"line_cost", "One line's cost",
               "One line (`path` and `line`, or `path` as train.py:42): its GPU time forward and backward, kernels by "
               "kind, syncs, memory, the rules that fire on it (confirmed by the profile where it measured them) and "
               "their quick fixes as edits (old_text -> new_text).",
               input({{"path", {{"type", "string"}, {"description", "the file, relative to the workspace"}}},
                      {"line", {{"type", "integer"}, {"minimum", 1}, {"description", "1-based line"}}}},
                     {"path"}),
               output({{"path", kString}, {"line", kNumber}, {"rules", kArray}, {"fixes", kArray}},
                      {"path", "line", "rules", "fixes"})});
  t.push_back({"memory_at_peak", "What holds GPU memory at the peak",
               "The GPU memory peak (allocated and reserved, in which pass) and the lines holding the most memory "
               "at that moment, from a memory snapshot, a trace with profile_memory=True or nsys's memory records.",
               input({{"n", integer("lines shown", 1, 200, 10)}}),
               output({{"top_lines", kPlaces}, {"top_lines_total", kNumber}}, {"top_lines", "top_lines_total"})});
  t.push_back({"oom", "Which line ran out of memory",
               "The out-of-memory error a memory snapshot recorded: the line that asked, how much it asked for and "
               "had free, its call chain, and the lines holding memory then. oom is null when there was none.",
               input({{"n", integer("frames and holders shown", 1, 200, 10)}}),
               output({{"oom", {{"type", {"object", "null"}}}}}, {"oom"})});
  t.push_back({"ranks", "Ranks: who waits for whom",
               "Each rank's step, busy time and exposed communication; the rank the others wait for in collectives "
               "and its line; for a job of several ranks the straggler, each line's spread across ranks and "
               "communication per module (FSDP).",
               input({{"n", integer("ranks and rows shown", 1, 1000, 8)}}),
               output({{"ranks", kArray}, {"ranks_total", kNumber}}, {"ranks", "ranks_total"})});
  t.push_back({"compare", "What changed since a baseline",
               "The step and each line's change against a baseline run (a rank summary CI kept, or a profile of the "
               "earlier run; default: the sightline.compareWith setting), each with its 95% interval, as `sightline "
               "diff` gives it; with fail_on (step:+5%,line:+1ms,memory:+10%) the gate's verdict.",
               input({{"baseline", {{"type", "string"}, {"description", "the baseline file, in the workspace"}}},
                      {"fail_on", {{"type", "string"}, {"description", "gate rules, as diff --fail-on takes them"}}},
                      {"n", integer("lines shown (200: every line)", 1, 200, 10)}}),
               output({{"step", {{"type", "object"}}}, {"lines", kArray}}, {"step", "lines"})});
  t.push_back({"capture_command", "The command that measures this script",
               "The exact `sightline capture` command for the training script: it times steps without the profiler, "
               "then profiles a few in the same run. By default the command the loaded capture ran; `script` and "
               "`nproc` (torchrun) make one. Show it or run it in the workspace.",
               input({{"script", {{"type", "string"}, {"description", "the training script, in the workspace"}}},
                      {"nproc", integer("processes per node (torchrun); 0: as the loaded profile ran", 0, 1024, 0)},
                      {"profiler",
                       {{"type", "string"},
                        {"enum", {"nsys", "torch"}},
                        {"description", "the profiler of the window (default: the loaded capture's)"}}}}),
               output({{"command", kString}, {"argv", kArray}}, {"command", "argv"})});
  return t;
}

}  // namespace

const std::vector<protocol::mcp::Tool>& toolDefinitions() {
  static const std::vector<protocol::mcp::Tool> kTools = build();
  return kTools;
}

}  // namespace sightline::server::mcp
