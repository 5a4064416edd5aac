// `sightline report --format html`: one self-contained page (the step view's data and the one
// renderer inlined; nothing fetched, a Content-Security-Policy that allows nothing else). The
// renderer is editors/vscode/src/stepview, bundled and embedded at build time.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace sightline::server {

// The bundled renderer ("" when this binary was built without it: editors/vscode's tools were
// missing at build time).
const std::string& stepViewScript();

// The page: `data` is stepViewJson's, with the report's annotated sources; `title` is text.
std::string stepViewHtml(const nlohmann::json& data, const std::string& title);

// Text for HTML element content or a quoted attribute: & < > " ' escaped.
std::string htmlEscape(const std::string& text);

}  // namespace sightline::server
