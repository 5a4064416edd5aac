// compareWith's baseline and the regression gate's changes per line.
#include "server/workspace/baseline.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "server/render/job_json.h"
#include "server/workspace/local_files.h"

namespace sightline::server {
namespace {

// A line regressed when its interval's lower end passes 1% of the base step, and 100 µs.
constexpr double kMinRegressionNs = 100'000;
constexpr double kMinRegressionOfStep = 0.01;
constexpr uint64_t kMaxSummaryBytes = 256ull << 20;

}  // namespace

bool isSummaryFile(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (!name.ends_with(".json") || name.ends_with(".trace.json")) return false;
  std::ifstream in(path, std::ios::binary);
  char head[256] = {};
  in.read(head, sizeof head);
  return std::string_view(head, static_cast<size_t>(in.gcount())).find("\"sightline_rank_summary\"") !=
         std::string_view::npos;
}

std::optional<std::vector<join::RankSummary>> readSummaryFile(const std::string& path, std::string& error) {
  auto text = readTextFile(path, kMaxSummaryBytes);
  if (!text) return error = "cannot be read, or is over 256 MiB", std::nullopt;
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return error = "not JSON (cut short?)", std::nullopt;
  return rankSummariesFromJson(doc, error);
}

std::shared_ptr<const Regression> regressionOf(const std::vector<join::RankSummary>& base,
                                               std::vector<join::RankSummary> next,
                                               const attribution::PathMapper& mapper, const std::string& base_name,
                                               std::string& why, const std::vector<features::GateRule>& rules) {
  bool base_text = std::any_of(base.begin(), base.end(), [](const join::RankSummary& s) {
    return std::any_of(s.lines.begin(), s.lines.end(), [](const join::SummaryLine& l) { return !l.text.empty(); });
  });
  // Text on one side only would match nothing: a baseline without text is matched by number.
  if (base_text) addLineTexts(next, mapper);
  auto out = std::make_shared<Regression>();
  out->diff = features::diffRuns(base, next, rules);
  if (!out->diff.incomparable.empty()) {
    why = out->diff.incomparable;
    return nullptr;
  }
  auto basis = std::make_shared<join::RegressionBasis>();
  const auto& step = out->diff.step;
  basis->base_name = base_name;
  basis->step_basis = out->diff.step_basis;
  basis->step_base_ns = step.base_ns, basis->step_new_ns = step.new_ns;
  basis->step_low_ns = step.low_ns, basis->step_high_ns = step.high_ns;
  basis->step_certain = step.certain();
  basis->base_samples = step.base_samples, basis->new_samples = step.new_samples;
  basis->min_regression_ns = std::max(kMinRegressionNs, kMinRegressionOfStep * step.base_ns);
  out->basis = std::move(basis);
  return out;
}

}  // namespace sightline::server
