// `sightline mcp`: the MCP server for coding agents over stdio (server/mcp/mcp_server.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sightline::server {

// Runs until its input ends; 0 then, 2 for a usage error.
int runMcpCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The `sightline` section of a VS Code settings file's text (JSON with comments): its
// `sightline.x` keys as {"x": ...}; null when the text holds none or is not JSON.
nlohmann::json sightlineSettingsOf(const std::string& text);

}  // namespace sightline::server
