// The MCP server's tools (docs/agents.md): the joined profile as the LSP has it, told to a coding
// agent. Each answer is a slice of what the other surfaces render from the same load: the report's
// JSON (report::LoadedReport, the figures `report --format json` gives, field for field), the
// story's text, the findings and fixes of the editor, and `diff`'s comparison. Sized for a context
// window: the top N by default, the total and "N more" said.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "protocol/mcp_types.h"
#include "server/mcp/tool_context.h"

namespace sightline::server::mcp {

const std::vector<protocol::mcp::Tool>& tools();
// Runs tool `name` with `arguments` (an object); unknown tools and bad arguments are tool errors.
protocol::mcp::CallToolResult callTool(ToolContext& context, const std::string& name, const nlohmann::json& arguments);

// The resources: each file the profile puts cost on (its annotated text, as `report` prints it)
// and the report's page (written once per load into the cache, its path given).
std::vector<protocol::mcp::Resource> resources(ToolContext& context);
// Nullopt when `uri` names no resource; the text and its MIME type otherwise.
struct ResourceText {
  std::string text, mime_type;
};
std::optional<ResourceText> readResource(ToolContext& context, const std::string& uri, std::string& error);

}  // namespace sightline::server::mcp
