// Line costs moved through a document's edits.
#include "analysis/join/file_costs.h"

namespace sightline::join {

FileCosts remapCosts(const FileCosts& costs, const source::LineTracker& tracker) {
  if (tracker.unchanged()) return costs;
  FileCosts out;
  out.total_gpu_ns = costs.total_gpu_ns;
  out.steps = costs.steps;
  out.ranks = costs.ranks;
  for (const auto& [line, cost] : costs.lines) {
    if (line < 1) continue;
    int32_t now = tracker.currentLine(static_cast<uint32_t>(line - 1));
    if (now < 0) continue;
    attribution::addCost(out.lines[now + 1], cost);
    if (tracker.stale(static_cast<uint32_t>(now))) out.stale_lines.insert(now + 1);
  }
  return out;
}

}  // namespace sightline::join
