// Markdown made safe for text that came from a profile: kernel, op, API and GPU names, file
// paths, rank labels, compile reasons, and the messages built from them. Profiles come from
// other people; a name such as "x`![b](https://host/beacon.png)" must show as that text, never
// as an image, a link or HTML in a hover, a hint's tooltip or the summary. Every Markdown string
// the server makes goes through these at the edge.
#pragma once

#include <string>
#include <string_view>

namespace sightline::server::md {

// `text` as one inline code span: fenced by more backticks than it holds, line ends as spaces.
std::string code(std::string_view text);
// The same for a table cell: `|` escaped too, so the row keeps its columns.
std::string cell(std::string_view text);
// Prose: outside code spans every mark that could start a link, an image, an autolink, emphasis,
// a heading, a list or HTML escaped ("model.py:27" stays as it is), the code spans it holds kept
// as code (their content is inert; an unmatched backtick is escaped), line ends as spaces. Also
// safe in a table cell.
std::string text(std::string_view text);
// A link: the label as text, the target a URI made by pathToUri (percent-encoded).
std::string link(std::string_view label, std::string_view uri);

}  // namespace sightline::server::md
