// Reads a PyTorch profiler trace (Kineto Chrome-trace JSON, `.json` or `.json.gz`, PyTorch
// 1.8 .. 2.11 layouts) into the format-neutral profile model, streaming: the file is
// decompressed and parsed in blocks, one event at a time, and no DOM of it is ever built.
// See shared/reference/kineto-trace.md for the format. What it fills:
//   kernels, gpu_memcpy, gpu_memset      -> activities (joined to their launch by `correlation`)
//   cuda_runtime, cuda_driver            -> api_calls
//   cpu_op                               -> ranges with `op` set (autograd ops, seq = `Sequence number`)
//   user_annotation (ProfilerStep#N ...) -> ranges (text only)
//   python_function                      -> calls (parents from `Python parent id`)
//   `Call stack` args (1.8-1.10)         -> marks at the op's start (call-site lines)
// `gpu_user_annotation` spans are never added to GPU time. A truncated file loads what is
// complete and says so in ProfileInfo::warnings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "analysis/ingest/load_result.h"

namespace sightline::ingest {

struct KinetoReadStats {
  uint64_t json_bytes = 0;   // uncompressed bytes parsed
  uint64_t events = 0;       // trace events seen
  uint64_t block_bytes = 0;  // the reader's block at the end (it grows only for one unit larger than it)
};

struct KinetoReadOptions {
  // Plain (not gzip) files at least this large are parsed in two halves on two threads.
  uint64_t parallel_from_bytes = uint64_t{64} << 20;
  LoadProgress progress;  // after the JSON is read
};

LoadResult loadKinetoTrace(const std::string& path, KinetoReadStats* stats = nullptr,
                           const KinetoReadOptions& options = {});

// Whether the file starts like a Chrome trace (a gzip stream, or a JSON object). Cheap.
bool looksLikeKinetoTrace(const std::string& path);

// Exposed for tests.
// A `python_function` name: "train.py(32): forward", "nn.Module: Conv2d_0",
// "<built-in method item of Tensor object at 0x7f..>", "<built-in function len>".
struct PythonName {
  model::CallKind kind = model::CallKind::Builtin;
  std::string_view file;      // Function only
  int32_t line = 0;           // Function only
  std::string_view function;  // function, module class, or builtin name ("" when unknown)
};
PythonName parsePythonName(std::string_view name);
// A JSON number of microseconds ("12", "4411123883816.4", "1.5e3") as integer nanoseconds,
// exactly for up to 3 decimals (rounded beyond); nullopt when it is not a number.
std::optional<int64_t> microsToNs(std::string_view text);

}  // namespace sightline::ingest
