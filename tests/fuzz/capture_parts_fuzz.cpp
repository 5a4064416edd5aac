// Capture's per-rank parts (server/capture/capture_steps.h) on any bytes, as anything running
// under `sightline capture` could write them: the first three bytes set the window (W, K, M of 1
// to 8; the third's high bit: no profiler), the rest is cut at 0xff bytes into part files, each
// named by its first byte (even: rank.N.json, odd: status.N.json). Read under small limits, the
// parts must hold to them (at most K timed and M profiled steps a rank, every value in range,
// at most kMaxPartWarnings warnings; a timed step's wait for data at most its host time), no
// median is negative, the summary lines say no negative figure, and the steps document reads
// back as it was written.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "server/capture/capture_steps.h"

namespace {

using namespace sightline::server::capture;  // NOLINT(google-build-using-namespace)

bool inRange(const StepTime& s) {
  return s.gpu_ns >= 0 && s.gpu_ns <= kMaxPartStepNs && s.host_ns >= 0 && s.host_ns <= kMaxPartStepNs;
}

void check(const CaptureWindow& window, const PartLimits& limits, const CaptureParts& parts) {
  if (parts.warnings.size() > kMaxPartWarnings) __builtin_trap();
  if (parts.ranks.size() + parts.statuses.size() > limits.parts) __builtin_trap();
  std::set<int64_t> seen;
  for (const auto& r : parts.ranks) {
    if (!seen.insert(r.rank).second || r.rank < 0 || r.rank >= kMaxRanks || r.world_size < 1 ||
        r.world_size > kMaxRanks || r.device < -1 || r.device > kMaxDevice || r.hook_ns < 0 ||
        r.hook_ns > kMaxPartStepNs)
      __builtin_trap();
    if (r.timed.size() > static_cast<size_t>(window.timed) || r.profiled.size() > static_cast<size_t>(window.profiled))
      __builtin_trap();
    for (const auto* steps : {&r.timed, &r.profiled}) {
      for (const auto& s : *steps)
        if (!inRange(s) || s.step <= window.warmup || s.step > window.stepsNeeded()) __builtin_trap();
      if (medianStepNs(*steps) < 0) __builtin_trap();
    }
    // The loop's facts: a wait of a timed step at most its host time (profiled steps carry none),
    // a known way of telling steps, a line with a path of at most kMaxPartText bytes.
    for (const auto& s : r.timed)
      if (s.input_ns < -1 || s.input_ns > s.host_ns) __builtin_trap();
    for (const auto& s : r.profiled)
      if (s.input_ns != -1) __builtin_trap();
    if (medianInputNs(r.timed) < -1) __builtin_trap();
    if (r.step_by != "optimizer" && r.step_by != "backward") __builtin_trap();
    if (r.input_line < 0 || r.input_line > kMaxSourceLine || r.input_path.size() > kMaxPartText ||
        (r.input_line > 0) == r.input_path.empty())
      __builtin_trap();
  }
  std::ostringstream summary;
  writeRanksSummary(window, parts.ranks, summary);
  std::string text = summary.str();
  if (text.find("median -") != std::string::npos || text.find("(-") != std::string::npos) __builtin_trap();
  auto doc = stepsDocument(window, {"python", "train.py"}, {}, parts.ranks);
  auto back = nlohmann::ordered_json::parse(formatStepsDocument(doc), nullptr, false);
  if (back.is_discarded() || back != doc) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  CaptureWindow window;
  window.warmup = 1 + data[0] % 8;
  window.timed = 1 + data[1] % 8;
  window.profiled = data[2] & 0x80 ? 0 : 1 + data[2] % 8;
  window.profiler = data[2] & 0x80 ? "none" : "torch";
  PartLimits limits;
  limits.base_bytes = 2048;
  limits.bytes_per_step = 64;
  limits.parts = 24;
  limits.total_bytes = 16384;
  std::vector<PartFile> files;
  std::string piece;
  auto flush = [&] {
    if (piece.empty()) return;
    bool rank = (static_cast<unsigned char>(piece[0]) & 1) == 0;
    files.push_back({(rank ? "rank." : "status.") + std::to_string(files.size()) + ".json", piece.substr(1)});
    piece.clear();
  };
  for (size_t i = 3; i < size; ++i) {
    if (data[i] == 0xff) {
      flush();
      continue;
    }
    piece += static_cast<char>(data[i]);
  }
  flush();
  check(window, limits, parseCaptureParts(files, window, limits));
  return 0;
}
