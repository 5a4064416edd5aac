// A line's figures as every surface shows them: its own GPU time and share, its inclusive time
// (and whether it is told beside the line's own), a def or loop header's roll-up, the one-off
// time beneath it (and whether it is marked), and with several ranks the slowest rank. One rule
// each, here: the inlay hints, the hover, `report`'s margin and JSON, and the page read these
// values and never derive them again.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "analysis/features/line_breakdown.h"

namespace sightline::features {

// Inclusive time is told beside the line's own where the work beneath adds at least 5 µs (per
// step where the figures are per step) and a twentieth of it. Scaled figures.
bool showsInclusive(double self_ns, double inclusive_ns);
// One-off time beneath a line (an evaluation, a checkpoint, building the model) is marked where it
// is 1 ms or more and a twentieth of all the one-off GPU time (totals).
bool marksOneoff(int64_t oneoff_ns, int64_t oneoff_total_ns);

// Several ranks: the line's time on each, per step of that rank where the figures are per step.
// The slowest is by its own work (a rank waiting in a collective for another is not slow); min,
// median and max are of the times listed. Told ("shown") where the slowest does a tenth more than
// the ranks' median.
struct SlowestRank {
  bool ranked = false;  // the line has a figure on every rank
  size_t rank = 0;      // index into FileCosts::ranks
  double ratio = 0;     // its own work over the median rank's
  bool shown = false;
  bool is_max = true;  // it has the largest listed figure too
  double min_ns = 0, median_ns = 0, max_ns = 0;
};
SlowestRank slowestRank(const attribution::LineCost& c, const std::vector<attribution::RankInfo>& ranks,
                        const Scale& s);

struct LineFigures {
  int32_t line = 0;  // 1-based
  Scale scale;
  double self_ns = 0, forward_ns = 0, backward_ns = 0;  // scaled: launched from the line itself
  double inclusive_ns = 0;                              // scaled: itself and everything beneath it
  bool show_inclusive = false;                          // showsInclusive
  double share = 0, inclusive_share = 0;                // of all GPU time in the steady steps
  // A def or loop header: the work beneath its body's lines (scaled; 0 elsewhere) and its share.
  double rollup_ns = 0, rollup_share = 0;
  std::string rollup_scope;  // "function" or "loop"
  int64_t oneoff_ns = 0;     // one-off GPU time beneath it (a total, never per step)
  bool oneoff_marked = false;
  bool oneoff_beneath = false;  // most of it ran beneath the line, not on it
  SlowestRank ranks;
};

// The figures of every line of a file with a cost, work beneath it, a roll-up or one-off time.
std::map<int32_t, LineFigures> fileLineFigures(const FileCosts& costs, const source::SourceFile& file,
                                               const source::SourceIndex& index, const Scale& s);

}  // namespace sightline::features
