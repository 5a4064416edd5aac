// Findings from the regression gate's changes per line.
#include "analysis/features/regression_findings.h"

#include "analysis/features/units.h"

namespace sightline::features {
namespace {

std::string signedMs(double ns) { return (ns >= 0 ? "+" : "-") + formatMilliseconds(std::abs(ns)) + " ms"; }

std::string percentOf(double delta, double base) {
  if (base <= 0) return "";
  return " (" + std::string(delta >= 0 ? "+" : "-") + formatFixed(std::abs(delta) / base * 100, 1) + "%)";
}

std::string messageOf(const join::LineRegression& r, const join::RegressionBasis& b) {
  std::string step = signedMs(b.step_new_ns - b.step_base_ns) +
                     percentOf(b.step_new_ns - b.step_base_ns, b.step_base_ns) + ", 95% interval " +
                     signedMs(b.step_low_ns) + " .. " + signedMs(b.step_high_ns) + ", " + b.step_basis;
  if (r.sync_added)
    return "Since the baseline (" + b.base_name + ") this line synchronizes " + formatFixed(r.new_syncs, 1) +
           "x a step (was " + formatFixed(r.base_syncs, 1) + "), and the step grew " + step +
           ": the host waits here for the GPU to drain, then the GPU waits for the host's next work. Read the value "
           "later (a step behind), or only every N steps.";
  return "Regressed since the baseline (" + b.base_name + "): GPU time on this line grew " + signedMs(r.delta_ns) +
         " per step" + percentOf(r.delta_ns, r.base_ns) + ", 95% interval " + signedMs(r.low_ns) + " .. " +
         signedMs(r.high_ns) + " (" + formatMilliseconds(r.base_ns) + " -> " + formatMilliseconds(r.new_ns) +
         " ms, medians of " + std::to_string(r.base_samples) + " and " + std::to_string(r.new_samples) +
         " profiled steps)" + (r.added ? "; the baseline had no such line" : "") + ". The step: " + step + ".";
}

}  // namespace

std::vector<Finding> regressionFindings(const source::SourceFile& file, const join::FileCosts& costs,
                                        const RuleConfig& config) {
  std::vector<Finding> out;
  const std::string code = "regressed-since-baseline";
  if (!costs.regression || !config.enabled(code)) return out;
  uint32_t lines = file.lines().lineCount();
  for (const auto& [line, r] : costs.regressions) {
    if (!r.regressed || line < 1 || static_cast<uint32_t>(line) > lines) continue;
    Finding f;
    f.code = code;
    f.severity = config.severityOf(code);
    f.range = file.lines().lineRange(static_cast<uint32_t>(line - 1));
    f.message = messageOf(r, *costs.regression);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace sightline::features
