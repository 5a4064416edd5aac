// Where a command's time goes: named phases, each the wall time since the last mark, printed to
// stderr at the end when SIGHTLINE_PHASES=1 (bench/report_bench.py reads them). Off, a mark
// costs one branch. For benchmarks, not users: the figures are not part of any output.
#pragma once

#include <string>

namespace sightline::server {

// Whether SIGHTLINE_PHASES=1 was set when the process first asked.
bool phasesOn();
// The wall time since the previous mark (or the process's first) is charged to `phase`; the
// same name twice adds up.
void markPhase(const char* phase);
// "phase NAME SECONDS" lines, in first-mark order, then the total; nothing when off.
std::string phaseReport();

}  // namespace sightline::server
