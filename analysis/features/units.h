// One formatter per unit, for every surface: the terminal, Markdown, the diagnostics' messages,
// the status line, and the page and panel (editors/vscode/src/stepview/format.ts follows the
// same rules). tests/data/units.json holds value -> text pairs that the C++ tests and the
// client's test both check, so no surface drifts. Numbers only, no unit words beyond the
// unit's symbol where the function says so.
#pragma once

#include <cstdint>
#include <string>

namespace sightline::features {

// printf's "%.<digits>f", but an exact tie rounds away from zero (49.125 -> "49.13"), as
// JavaScript's toFixed does: the page and the terminal round the same bytes the same way.
std::string formatFixed(double x, int digits);
// "12.4", "0.41", "153": three significant figures (two decimals below 10), no unit.
std::string formatMilliseconds(double ns);
// "24.56 GiB", "812.0 MiB", "4.0 KiB", "12 B": GPU memory as PyTorch's memory tools show it.
std::string formatBytes(int64_t n);
// "81%" from 0.81; one decimal below 9.5% ("0.6%").
std::string formatShare(double share);
// "19.7 µs" below a millisecond, else "3.77 ms": a short duration with its unit (kernels, queues).
std::string formatMicroseconds(double ns);
// "▲ +3.20 ms" / "▼ −1.10 ms": a change of `delta_ns` (already per step when per step).
std::string formatDelta(double delta_ns);
// "+1.0 MiB", "-300.0 MiB", "0 B": a change of GPU memory.
std::string formatSignedBytes(int64_t n);
// "13.9 s": seconds with one decimal and the unit (compile times).
std::string formatSeconds(double seconds);

}  // namespace sightline::features
