// Reads what torch.compile left behind, so compiled kernels land on the model's own lines
// (model/compiled_code.h). Two kinds of folder, and any folder holding them (plain generated
// files too, inductor_plain.h):
//   - an Inductor cache (TORCHINDUCTOR_CACHE_DIR, /tmp/torchinductor_<user> by default): each
//     FX graph cache entry (fxgraph/xx/<key>/<entry>, a pickle) holds a generated wrapper's code,
//     its post-grad graph (nodes under `# File: model.py:27 in forward` comments) and, when
//     Inductor keeps it (INDUCTOR_PROVENANCE=1; the ResNet capture of tests/data/compile/resnet
//     has it without), Inductor's line map (whole user stacks);
//   - a TORCH_TRACE folder (dedicated_log_torch_trace_*.log): the same code and graph as
//     artifacts, provenance stack traces, and each compilation's metrics.
// Which user line a launch computes: the line of its main graph node (a Triton kernel's nodes
// from its `Source node to ATen node mapping`, an extern call's op node or its `Source Nodes`
// comment): of a fused kernel, the line most of its reductions or matmuls are on (not its last
// node, Inductor's own rule for its line map: a LayerNorm backward fused with the dropout
// backward after it is the LayerNorm's); the other lines of its nodes are `fused`. Its whole
// stack, best source first: Inductor's line map, provenance stack traces by debug handle (the
// one for that line), a stack of the module for that line or one cut there; else that line
// alone. Opens only the folders named.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/ingest/inductor_plain.h"
#include "analysis/model/compiled_code.h"

namespace sightline::ingest {

// Reads every cache entry and trace log under `folders` (a missing folder is a warning); with
// `wanted` given, only the modules it names (a profile's) are kept.
model::CompiledCode readCompiledCode(const std::vector<std::string>& folders,
                                     const std::vector<std::string>& wanted = {});

// The reading in parts, so that it can start before the modules wanted are known: the files of
// `folders` to read (FX graph cache entries and TORCH_TRACE logs, in listing order); one of
// them read (a trace log whole; an entry's module when `wanted` is empty or names it); or all of
// them, on a few threads, keeping the `wanted` modules.
struct CompiledCodeFiles {
  struct File {
    std::string path;
    bool trace = false;                 // a TORCH_TRACE log, else an FX graph cache entry or:
    PlainCode plain = PlainCode::None;  // plain generated code (inductor_plain.h)
  };
  std::vector<File> files;
  size_t entries = 0;                 // FX graph cache entries among them
  std::vector<std::string> sources;   // the folders listed
  std::vector<std::string> warnings;  // folders missing or cut short
};
// `stop` set (another thread): the listing ends where it is.
CompiledCodeFiles listCompiledCode(const std::vector<std::string>& folders, const std::atomic<bool>* stop = nullptr);
model::CompiledCode readCompiledFile(const CompiledCodeFiles::File& file, const std::set<std::string>& wanted);
model::CompiledCode readCompiledFiles(const CompiledCodeFiles& files, const std::vector<std::string>& wanted);
// Adds `from` to `into` (one module per name: the one with whole stacks, else the one resolving
// more launches), and keeps only the `wanted` modules (all when empty).
void mergeCompiledCode(model::CompiledCode& into, model::CompiledCode from);
void keepModules(model::CompiledCode& code, const std::vector<std::string>& wanted);

// Whether a folder holds generated code to read (an fxgraph/ folder, a TORCH_TRACE log or a
// TORCH_COMPILE_DEBUG folder).
bool holdsCompiledCode(const std::string& folder);

// The pure parts, exposed for tests and fuzzing.
struct FxGraphEntry {
  std::string cache_key;  // the wrapper module's name, "c<hash>"
  std::string source_code;
  std::string post_grad_graph;
  std::vector<std::pair<int32_t, std::string>> linemap;  // wrapper line -> user stack text
};
// The strings of an FX graph cache entry (a pickle), without running it; nullopt when it is not one.
std::optional<FxGraphEntry> parseFxGraphEntry(std::string_view bytes);
// A wrapper module from its code and post-grad graph; `linemap` (Inductor's) and `provenance`
// ("kernel:handle" -> user stack texts) give whole stacks when present.
model::CompiledModule parseWrapper(std::string_view name, std::string_view source, std::string_view post_grad_graph,
                                   const std::vector<std::pair<int32_t, std::string>>& linemap,
                                   const std::vector<std::pair<std::string, std::string>>& provenance = {});
// Python traceback text ("  File \"x.py\", line 3, in f\n    code\n" ...) as frames, outermost first.
std::vector<model::SourceLine> parseStackText(std::string_view text);
// A TORCH_TRACE log's modules and compilations, appended to `out`.
void parseTraceLog(std::string_view text, const std::string& path, model::CompiledCode& out);

}  // namespace sightline::ingest
