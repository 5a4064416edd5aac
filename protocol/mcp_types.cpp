#include "protocol/mcp_types.h"

namespace sightline::protocol::mcp {

std::string negotiateVersion(const std::string& asked) {
  for (const char* v : kProtocolVersions)
    if (asked == v) return asked;
  return kProtocolVersions[0];
}

void fromJson(const JsonIn& in, InitializeParams& out) {
  in.requireObject();
  if (auto v = in.optionalField("protocolVersion")) out.protocolVersion = v->asString();
  if (auto info = in.optionalField("clientInfo")) {
    info->requireObject();
    if (auto name = info->optionalField("name")) out.client_name = name->asString();
    if (auto version = info->optionalField("version")) out.client_version = version->asString();
  }
}

json initializeResult(const std::string& version, const ServerInfo& info, const std::string& instructions) {
  json server = {{"name", info.name}, {"version", info.version}};
  if (!info.title.empty()) server["title"] = info.title;
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}}}}},
          {"serverInfo", server},
          {"instructions", instructions}};
}

json toJson(const Tool& t) {
  json out = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
  if (!t.title.empty()) out["title"] = t.title;
  if (!t.output_schema.is_null()) out["outputSchema"] = t.output_schema;
  out["annotations"] = {{"readOnlyHint", t.read_only}, {"openWorldHint", false}};
  if (!t.title.empty()) out["annotations"]["title"] = t.title;
  return out;
}

void fromJson(const JsonIn& in, CallToolParams& out) {
  in.requireObject();
  out.name = in.field("name").asString();
  if (auto args = in.optionalField("arguments")) {
    args->requireObject();
    out.arguments = args->raw();
  }
}

json toJson(const CallToolResult& r) {
  json out = {{"content", json::array({{{"type", "text"}, {"text", r.text}}})}, {"isError", r.is_error}};
  if (!r.structured.is_null()) out["structuredContent"] = r.structured;
  return out;
}

json toJson(const Resource& r) {
  json out = {{"uri", r.uri}, {"name", r.name}};
  if (!r.title.empty()) out["title"] = r.title;
  if (!r.description.empty()) out["description"] = r.description;
  if (!r.mime_type.empty()) out["mimeType"] = r.mime_type;
  if (r.size >= 0) out["size"] = r.size;
  return out;
}

void fromJson(const JsonIn& in, ReadResourceParams& out) {
  in.requireObject();
  out.uri = in.field("uri").asString();
}

}  // namespace sightline::protocol::mcp
