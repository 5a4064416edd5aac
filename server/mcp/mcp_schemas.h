// The MCP tools' definitions: names, descriptions and the JSON Schemas of their inputs and
// outputs (what tools/list answers, and what mcp_tools.cpp checks arguments against).
#pragma once

#include <vector>

#include "protocol/mcp_types.h"

namespace sightline::server::mcp {

const std::vector<protocol::mcp::Tool>& toolDefinitions();

}  // namespace sightline::server::mcp
