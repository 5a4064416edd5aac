// torch.compile's generated code over any bytes: the first byte picks the reader (an FX graph
// cache entry, a wrapper module with a post-grad graph after a NUL byte, a TORCH_TRACE log, a
// TORCH_LOGS=output_code log with its modules named by their code's hash).
// Seeded with the real cache and traces of tests/data/compile cut short (scripts/fuzz.sh); a
// trace log's compilations are also summarized (join/compile_summary.h).
// Modules with unresolved launches or nothing at all, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/ingest/inductor_plain.h"
#include "analysis/ingest/inductor_reader.h"
#include "analysis/join/compile_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      if (auto entry = sightline::ingest::parseFxGraphEntry(rest))
        (void)sightline::ingest::parseWrapper(entry->cache_key, entry->source_code, entry->post_grad_graph,
                                              entry->linemap);
      break;
    case 1: {
      size_t nul = rest.find('\0');
      std::string_view source = rest.substr(0, nul);
      std::string_view graph = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
      (void)sightline::ingest::parseWrapper("cfuzz", source, graph, {{1, std::string(graph.substr(0, 200))}});
      break;
    }
    case 3: {
      sightline::model::CompiledCode code;
      sightline::ingest::parseOutputCodeLog(rest, "output_code.log", code);
      (void)sightline::ingest::inductorModuleName(rest);
      break;
    }
    default: {
      sightline::model::CompiledCode code;
      sightline::ingest::parseTraceLog(rest, "fuzz.log", code);
      (void)sightline::join::summarizeCompiles(code);
      break;
    }
  }
  return 0;
}
