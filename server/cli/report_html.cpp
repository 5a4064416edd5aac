// `report --format html`: the step view's data with the named files' hot lines (their text,
// a line of context around each), in one page (server/render/step_view_html.h).
#include <filesystem>

#include "analysis/features/step_view.h"
#include "analysis/features/story_report.h"
#include "server/cli/report_data.h"
#include "server/render/job_json.h"
#include "server/render/step_view_html.h"
#include "server/render/step_view_json.h"
#include "server/render/story_render.h"

namespace sightline::server::report {

using nlohmann::json;

StepViewSource stepViewSource(const join::ProfileJoin& join, const std::string& path) {
  const auto& info = join.profile().info;
  return {std::filesystem::path(path).filename().string(), info.format, info.gpus};
}

int writeHtmlReport(const ReportData& d, std::ostream& out, std::ostream& err) {
  if (stepViewScript().empty()) {
    err << "sightline report: this sightline was built without the step view renderer (its build found no "
           "editors/vscode/node_modules/.bin/esbuild; run `npm ci` in editors/vscode and build again)\n";
    return 2;
  }
  features::StepViewOptions options;
  for (const auto& f : d.sources) options.listed_paths.push_back(f.absolute);
  options.verdict = d.verdict ? &*d.verdict : nullptr;
  auto view = features::computeStepView(d.main, options);
  std::string first = d.args.profile_paths.empty() ? d.args.profile_path : d.args.profile_paths.front();
  json data = stepViewJson(view, stepViewSource(d.main, first));
  if (d.args.profile_paths.size() > 1) data["profile"]["file"] = d.args.profile_path;
  std::vector<ListedFile> listed;
  for (const auto& f : d.sources) listed.push_back({f.absolute, f.path, &f.file->text()});
  data["sources"] = annotatedSourcesJson(view, listed);
  // The story the report's header tells: the verdict, its warnings and advice, compiling, memory.
  data["story"] = storyRowsJson(headerStory(d));
  if (d.job) data["job"] = jobPageJson(*d.job);
  out << stepViewHtml(data, "Sightline · " + data["profile"]["file"].get<std::string>());
  return 0;
}

int writeJobHtml(const ReportArgs& args, const features::JobView& job, const std::vector<join::RankSummary>& ranks,
                 std::ostream& out, std::ostream& err) {
  if (stepViewScript().empty()) {
    err << "sightline report: this sightline was built without the step view renderer\n";
    return 2;
  }
  std::string name = args.profile_paths.empty() ? std::to_string(ranks.size()) + " rank summaries"
                                                : std::to_string(args.profile_paths.size()) + " reports";
  json data = {
      {"version", 1},
      {"profile", {{"file", name}, {"format", ranks.empty() ? "" : ranks.front().format}, {"gpus", json::array()}}},
      {"hasSteps", false},
      {"stepsSource", ""},
      {"steadySteps", job.steady_steps},
      {"unprofiledWallNs", 0},
      {"captureOverheadNs", 0},
      {"lines", json::array()},
      {"ranks", json::array()},
      {"timelines", json::array()},
      {"topLines", json::array()},
      {"memory", nullptr},
      {"job", jobPageJson(job)}};
  data["story"] = storyRowsJson(features::jobStory(job, ranks));
  out << stepViewHtml(data, "Sightline · " + name);
  return 0;
}

}  // namespace sightline::server::report
