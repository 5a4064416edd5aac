// The step view (analysis/features/step_view.h) as JSON: the result of the `sightline/stepView`
// request and the data of `report --format html` (docs/lsp-extensions.md). One renderer reads
// it in both (editors/vscode/src/stepview); this file makes no text for people.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "analysis/features/step_view.h"

namespace sightline::server {

// What the view says of the profile it shows, beside the figures.
struct StepViewSource {
  std::string file;    // the profile's file name (no folders)
  std::string format;  // "nsys-sqlite", "kineto-json", "memory-snapshot"
  std::vector<std::string> gpus;
};

nlohmann::json stepViewJson(const features::StepView& view, const StepViewSource& source);
// The verdict's step without the profiler (docs/report-json.md `verdict.unprofiled`): {source,
// wall_ns (null without a point), range_ns [lo, hi], bound (null: cannot tell), busy_share, steps,
// ranks, added_ns, added_max_ns, reason, measure}.
nlohmann::json unprofiledStepJson(const features::StepVerdict& v);

// A file whose hot lines the page lists, with its text.
struct ListedFile {
  std::string absolute;  // its path as the view names it
  std::string named;     // as the user named it (may be the same)
  const std::string* text = nullptr;
};
// Each listed file's lines with a cost in the view, with a line of context either side:
// [{"path", "lines": [{"line", "text", "line_index"}]}] (line_index: into the view's lines, or -1).
nlohmann::json annotatedSourcesJson(const features::StepView& view, const std::vector<ListedFile>& files);

// JSON for inside an HTML <script> element: every `<` written as \u003c (only strings hold one),
// so no text of the profile can close the element.
std::string jsonForScript(const nlohmann::json& value);

}  // namespace sightline::server
