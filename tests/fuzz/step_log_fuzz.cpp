// The step-log reader (analysis/ingest/step_log.h) on any bytes: the first byte picks how the
// rest is cut into pieces, and the pieces must read as the whole does (the encoding decided on
// the first four bytes however they are cut, lines and characters across pieces). Never a
// negative count, time or weight, never a line standing for more than kMaxStepsPerLine steps.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/ingest/step_log.h"

namespace {

using sightline::ingest::StepLog;

bool same(const StepLog& a, const StepLog& b) {
  return a.kind == b.kind && a.format == b.format && a.encoding == b.encoding && a.steps_ns == b.steps_ns &&
         a.weights == b.weights && a.median_ns == b.median_ns && a.min_ns == b.min_ns && a.max_ns == b.max_ns &&
         a.lines == b.lines && a.steps == b.steps && a.warmup_lines == b.warmup_lines && a.set_aside == b.set_aside &&
         a.first_line == b.first_line;
}

bool sane(const StepLog& s) {
  if (s.median_ns < 0 || s.min_ns < 0 || s.max_ns < s.min_ns || s.lines < 0 || s.steps < 0 || s.set_aside < 0 ||
      s.warmup_lines < 0 || s.steps_ns.size() != s.weights.size())
    return false;
  for (int64_t ns : s.steps_ns)
    if (ns <= 0) return false;
  for (int64_t w : s.weights)
    if (w <= 0 || w > sightline::ingest::kMaxStepsPerLine) return false;
  return s.median_ns == 0 || (s.median_ns >= s.min_ns && s.median_ns <= s.max_ns);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint32_t seed = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  StepLog whole = sightline::ingest::parseStepLog(text);
  if (!sane(whole)) __builtin_trap();
  // Pieces of 1 to 16 bytes, their sizes from a small generator seeded by the first byte.
  sightline::ingest::StepLogReader reader;
  for (size_t at = 0; at < text.size();) {
    seed = seed * 1103515245u + 12345u;
    size_t piece = 1 + (seed >> 16) % 16;
    reader.feed(text.substr(at, piece));
    at += piece;
  }
  if (!same(whole, reader.finish())) __builtin_trap();
  return 0;
}
