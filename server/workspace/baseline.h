// `compareWith` as the regression gate sees it (features/regression.h): a baseline run (the
// compare profile's rank summaries, or a summary file CI kept) against the loaded profile,
// each line's change with its 95% interval, computed once per pair of loads and put on the
// lines of each file (join::FileCosts::regressions) for hints, hovers and diagnostics.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/regression.h"
#include "analysis/join/file_costs.h"
#include "analysis/join/rank_summary.h"

namespace sightline::server {

// A rank-summary file (`sightline report --format summary`): whether `path` names one, by its
// name (*.json, not a trace) and its first bytes.
bool isSummaryFile(const std::string& path);
// Its summaries (none, for a document of none); nullopt with `error` set when it cannot be read
// (or is over 256 MiB) or is not one. `report --merge` and `diff` read summaries through it too.
std::optional<std::vector<join::RankSummary>> readSummaryFile(const std::string& path, std::string& error);

struct Regression {
  features::RunDiff diff;
  std::shared_ptr<const join::RegressionBasis> basis;
};

// The loaded profile's change from the baseline. `next` is the loaded profile's summaries,
// their lines' text read through `mapper` where the baseline's have text (so lines an edit
// moved keep their match); null with `why` set when the runs cannot be compared.
std::shared_ptr<const Regression> regressionOf(const std::vector<join::RankSummary>& base,
                                               std::vector<join::RankSummary> next,
                                               const attribution::PathMapper& mapper, const std::string& base_name,
                                               std::string& why, const std::vector<features::GateRule>& rules = {});

// The changes of the lines whose profile path `maps_to(path)` is true, on `costs` (moved by
// `costs.realigned_by`, as the join moved the profile's lines).
template <class MapsHere>
void attachRegressions(const Regression& r, MapsHere&& maps_here, join::FileCosts& costs) {
  costs.regression = r.basis;
  for (const auto& l : r.diff.lines) {
    if (l.new_line <= 0 || !maps_here(l.path)) continue;
    join::LineRegression out;
    out.base_ns = l.change.base_ns, out.new_ns = l.change.new_ns, out.delta_ns = l.change.delta_ns;
    out.low_ns = l.change.low_ns, out.high_ns = l.change.high_ns;
    out.sampled = l.change.sampled, out.certain = l.change.certain();
    out.added = l.kind == features::LineChange::Kind::New;
    out.sync_added = l.sync_added, out.base_syncs = l.base_syncs, out.new_syncs = l.new_syncs;
    out.base_samples = l.change.base_samples, out.new_samples = l.change.new_samples;
    out.regressed = l.sync_added || (out.certain && l.change.low_ns >= r.basis->min_regression_ns);
    costs.regressions[l.new_line + costs.realigned_by] = out;
  }
}

}  // namespace sightline::server
