// The MCP server's resources: each script's annotated text, and the report's page.
#include <filesystem>
#include <sstream>

#include "server/lsp/uri.h"
#include "server/mcp/mcp_tools.h"
#include "server/platform/output_file.h"
#include "server/platform/terminal_text.h"
#include "server/render/diff_render.h"
#include "server/workspace/profile_files.h"

namespace sightline::server::mcp {

namespace fs = std::filesystem;

std::vector<protocol::mcp::Resource> resources(ToolContext& context) {
  std::vector<protocol::mcp::Resource> out;
  auto* r = context.report();
  if (!r) return out;
  for (const auto& src : r->sources()) {
    std::string shown = context.shown(src.absolute);
    out.push_back({"sightline://annotated/" + percentEncoded(shown), shown + " (annotated)",
                   "GPU time on the lines of " + shown,
                   "The text report of one file: each line's GPU time per step, forward and backward, as `sightline "
                   "report` prints it",
                   "text/plain", -1});
  }
  out.push_back(
      {"sightline://page", "report.html", "The report's page",
       "Where the report's self-contained HTML page is written (in the cache): its path, to open in a browser",
       "text/plain", -1});
  return out;
}

std::optional<ResourceText> readResource(ToolContext& context, const std::string& uri, std::string& error) {
  auto* r = context.report();
  if (!r) {
    error = "no profile is loaded";
    return std::nullopt;
  }
  const std::string prefix = "sightline://annotated/";
  if (uri.rfind(prefix, 0) == 0) {
    for (const auto& src : r->sources()) {
      if (prefix + percentEncoded(context.shown(src.absolute)) != uri) continue;
      std::ostringstream text;
      report::writeAnnotatedFile(r->data(), src, text);
      return ResourceText{terminalSafe(text.str()), "text/plain"};
    }
    error = "no such annotated file: " + diff::inert(uri);
    return std::nullopt;
  }
  if (uri == "sightline://page") {
    std::string folder = privateCacheFolder("pages", error);
    if (folder.empty()) return std::nullopt;
    std::ostringstream page, problems;
    if (report::writeHtmlReport(r->data(), page, problems) != 0) {
      error = problems.str();
      return std::nullopt;
    }
    std::string name = fs::path(context.workspace().profile()->path).filename().string() + ".html";
    std::string path = folder + "/" + name;
    if (!writeOutputFile(path, page.str(), context.workspace().profile()->parts, error)) return std::nullopt;
    return ResourceText{path, "text/plain"};
  }
  error = "no such resource: " + diff::inert(uri);
  return std::nullopt;
}

}  // namespace sightline::server::mcp
