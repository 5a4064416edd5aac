// A file's line costs from one profile: every profile path that maps onto the file, merged,
// with the totals that shares are taken of. Moved through a document's edits by remapCosts.
// Plain data and pure functions; no formatting (that is the edge's job).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/source/line_tracker.h"

namespace sightline::join {

struct FileCosts {
  std::map<int32_t, attribution::LineCost> lines;  // 1-based line -> cost
  int64_t total_gpu_ns = 0;                        // of the whole profile (shares are of this)
  int steps = 0;                                   // 0: unknown (per-step figures become totals)
  std::vector<attribution::RankInfo> ranks;        // of the whole profile; LineCost::rank_ns indexes it
  std::set<int32_t> stale_lines;                   // 1-based lines edited since they were profiled
  // A second profile on the same lines (`compareWith`): hints and hovers show the change from it.
  std::shared_ptr<const FileCosts> compare;
  std::string compare_name;  // its file name, for the hover
  std::string compare_note;  // how its lines were placed when the script changed in between
};

// Merges the costs of every profile file for which `maps_here(profile path)` is true.
template <class MapsHere>
FileCosts fileCosts(const model::Profile& profile, const attribution::Attribution& attr, MapsHere&& maps_here) {
  FileCosts out;
  out.total_gpu_ns = attr.total_gpu_ns;
  out.steps = attr.steps;
  out.ranks = attr.ranks;
  for (const auto& [file, lines] : attr.files) {
    if (!maps_here(profile.strings[file])) continue;
    for (const auto& [line, cost] : lines) attribution::addCost(out.lines[line], cost);
  }
  return out;
}

// `costs` moved onto the current lines of an edited document (1-based both ways): a line
// inserted above shifts them, a deleted line's cost is dropped, an edited line keeps its cost
// and is listed in stale_lines.
FileCosts remapCosts(const FileCosts& costs, const source::LineTracker& tracker);

}  // namespace sightline::join
