// The source model on any text: parse (chunked, as the server does), index, every rule, then
// one edit the input chooses and the incremental reparse and re-index an editor would do.
// Seeded with real training scripts (scripts/fuzz.sh). Never a crash, whatever the syntax.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/features/diagnostics.h"
#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  // The first four bytes place the edit: where it starts, how much it removes, how much of the
  // input's tail it inserts.
  uint32_t at = data[0] | (uint32_t{data[1]} << 8), remove = data[2], insert = data[3] % 64;
  std::string text(reinterpret_cast<const char*>(data + 4), size - 4);
  sightline::source::SourceFile file(text);
  auto index = sightline::source::buildSourceIndex(file);
  auto findings = sightline::features::computeDiagnostics(file, index, {});
  for (const auto& f : findings)
    if (f.range.begin > f.range.end || f.range.end > text.size()) __builtin_trap();
  uint32_t begin = text.empty() ? 0 : at % static_cast<uint32_t>(text.size() + 1);
  uint32_t end = std::min<uint32_t>(begin + remove, static_cast<uint32_t>(text.size()));
  std::string replacement = text.substr(text.size() - std::min<size_t>(insert, text.size()));
  file.applyEdit(begin, end, replacement);
  auto after = sightline::source::buildSourceIndex(file, std::move(index));
  auto fresh = sightline::source::buildSourceIndex(file);
  // The incremental index finds what a fresh walk finds.
  if (after.calls.size() != fresh.calls.size() || after.functions.size() != fresh.functions.size()) __builtin_trap();
  sightline::features::computeDiagnostics(file, after, {});
  return 0;
}
