// Model Context Protocol structures Sightline reads or writes (revision 2025-11-25 and the
// three before it), with MCP field names: what a client sends (fromJson) and what the server
// answers (toJson). MCP is JSON-RPC 2.0, one message per line; jsonrpc.h classifies messages.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "protocol/json_in.h"

namespace sightline::protocol::mcp {

using nlohmann::json;

// The revisions the server speaks, newest first: an initialize asking for one of them gets it,
// any other gets the newest.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
std::string negotiateVersion(const std::string& asked);

struct InitializeParams {
  std::string protocolVersion;
  std::string client_name, client_version;  // clientInfo
};
void fromJson(const JsonIn& in, InitializeParams& out);

struct ServerInfo {
  std::string name, version, title;
};
json initializeResult(const std::string& version, const ServerInfo& info, const std::string& instructions);

// A tool as tools/list lists it: its input and output as JSON Schemas.
struct Tool {
  std::string name, title, description;
  json input_schema, output_schema;
  bool read_only = true;
};
json toJson(const Tool& t);

struct CallToolParams {
  std::string name;
  json arguments = json::object();  // an object (absent: empty)
};
void fromJson(const JsonIn& in, CallToolParams& out);

// A tool's answer: text for the model, the same figures as structured content, or an error the
// model reads (isError) rather than a protocol error.
struct CallToolResult {
  std::string text;
  json structured;  // null when none
  bool is_error = false;
};
json toJson(const CallToolResult& r);

struct Resource {
  std::string uri, name, title, description, mime_type;
  int64_t size = -1;  // -1: not said
};
json toJson(const Resource& r);

struct ReadResourceParams {
  std::string uri;
};
void fromJson(const JsonIn& in, ReadResourceParams& out);

}  // namespace sightline::protocol::mcp
