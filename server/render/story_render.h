// The story's rows (analysis/features/story.h) rendered per form: terminal columns (`report`'s
// header, `--merge`), Markdown (the summary, hovers), and JSON rows for the HTML page and the
// editor's panel. Every figure is formatted by analysis/features/units.h; nothing here computes
// one, and nothing reads rendered text back.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "analysis/features/story.h"

namespace sightline::server {

// The rows as the terminal shows them: a label in a column of ten ("Step      "), rows that
// continue the one above indented as far, tables in padded columns.
std::string terminalText(const features::Story& story);
// One line as Markdown: text escaped, code as code spans, places linked where local.
std::string storyMarkdown(const features::StoryLine& line);
// The rows as Markdown: labels in bold, causes as a list, changes numbered, tables as tables.
std::string storyMarkdown(const features::Story& story);
// The rows for the page and the panel (docs/lsp-extensions.md, `story`): one object per row,
// {"label", "role", "qualifier"?, "lines": [text], "parts": [[{"kind", "text", "path"?, "line"?}]],
// "table"?: {"columns": [{"name", "left"}], "rows": [[text]], "note"}}.
nlohmann::json storyRowsJson(const features::Story& story);

}  // namespace sightline::server
