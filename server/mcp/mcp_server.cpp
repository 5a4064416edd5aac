#include "server/mcp/mcp_server.h"

#include <boost/asio/post.hpp>

#include "protocol/json_in.h"
#include "protocol/mcp_types.h"
#include "server/platform/log.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace sightline::server::mcp {
namespace {

using nlohmann::json;
using protocol::ErrorCode;

struct RpcError {
  ErrorCode code;
  std::string message;
};

template <class T>
T parsed(const json& params) {
  auto p = protocol::parse<T>(params.is_null() ? json::object() : params, "params");
  if (!p) throw RpcError{ErrorCode::InvalidParams, p.error().describe()};
  return std::move(p.value());
}

constexpr const char* kInstructions =
    "Sightline puts a GPU profile of a PyTorch training run on the lines of its scripts. Ask step_verdict first "
    "(why the step is slow, with the lines that cause it and what to change), then line_cost on a line before "
    "editing it (its rules and quick fixes as edits), top_lines for where GPU time goes, memory_at_peak and oom "
    "for memory, ranks for many GPUs, compare against a baseline after a change, and capture_command for the "
    "command that measures the script. Paths are relative to the workspace.";

}  // namespace

McpServer::McpServer(boost::asio::io_context& io, Send send, McpOptions options, nlohmann::json settings)
    : io_(io),
      send_(std::move(send)),
      options_(std::move(options)),
      settings_(std::move(settings)),
      workspace_(io, *this, std::chrono::milliseconds(1000)),
      tools_(workspace_) {}

McpServer::~McpServer() { workspace_.stop(); }

void McpServer::start() {
  if (!options_.root.empty()) workspace_.setRoot(options_.root);
  workspace_.applySettings(settings_);
  // applySettings posts the load; this runs after it, once the loader has started or found none.
  boost::asio::post(io_, [this] {
    started_ = true;
    flush();
  });
}

bool McpServer::loading() const { return !started_ || after_load_ || workspace_.loading() || progress_ > 0; }

void McpServer::send(const json& message) { send_(protocol::dumpJson(message)); }

void McpServer::onLine(std::string line) {
  if (stopped_) return;
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.find_first_not_of(" \t") == std::string::npos) return;
  if (line.size() > options_.max_message_bytes) {
    send(protocol::makeErrorResponse(
        std::nullopt, {ErrorCode::InvalidRequest, "message of " + std::to_string(line.size()) + " bytes: over the " +
                                                      std::to_string(options_.max_message_bytes) + "-byte limit"}));
    return;
  }
  if (protocol::jsonNestingDepth(line) > protocol::kMaxJsonDepth) {
    send(protocol::makeErrorResponse(std::nullopt, {ErrorCode::ParseError, "JSON nested too deeply"}));
    return;
  }
  json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    send(protocol::makeErrorResponse(std::nullopt, {ErrorCode::ParseError, "not JSON"}));
    return;
  }
  if (value.is_array()) {
    send(protocol::makeErrorResponse(std::nullopt, {ErrorCode::InvalidRequest, "batches are not part of MCP"}));
    return;
  }
  auto classified = protocol::classifyMessage(value);
  if (auto* invalid = std::get_if<protocol::InvalidMessage>(&classified)) {
    send(protocol::makeErrorResponse(invalid->id, {ErrorCode::InvalidRequest, invalid->reason}));
    return;
  }
  handle(std::get<protocol::Message>(classified));
}

void McpServer::handle(const protocol::Message& m) {
  if (m.kind == protocol::Message::Kind::Response) return;  // the server asks nothing
  if (m.kind == protocol::Message::Kind::Notification) {
    if (m.method == "notifications/initialized") SL_LOG(Debug) << "mcp: client initialized";
    return;  // cancelled, roots changed, progress: nothing to do
  }
  bool needs_load = m.method == "tools/call" || m.method == "resources/list" || m.method == "resources/read";
  if (needs_load && initialized_) {
    // A capture made since the load (the agent ran capture_command) is loaded before the answer;
    // the workspace is walked at most once every two seconds.
    auto now = std::chrono::steady_clock::now();
    if (!loading() && now - last_rescan_ >= std::chrono::seconds(2)) {
      last_rescan_ = now;
      workspace_.reloadIfNewer();
    }
    if (loading()) {
      waiting_.push_back(m);
      return;
    }
  }
  try {
    send(protocol::makeResponse(*m.id, answer(m)));
  } catch (const RpcError& e) {
    send(protocol::makeErrorResponse(m.id, {e.code, e.message}));
  } catch (const std::exception& e) {
    SL_LOG(Error) << "mcp: " << m.method << ": " << e.what();
    send(protocol::makeErrorResponse(m.id, {ErrorCode::InternalError, std::string("internal error: ") + e.what()}));
  }
}

json McpServer::answer(const protocol::Message& m) {
  if (m.method == "ping") return json::object();
  if (m.method == "initialize") {
    auto p = parsed<protocol::mcp::InitializeParams>(m.params);
    initialized_ = true;
    SL_LOG(Info) << "mcp: client " << p.client_name << " " << p.client_version << " asks for protocol "
                 << p.protocolVersion;
    return protocol::mcp::initializeResult(protocol::mcp::negotiateVersion(p.protocolVersion),
                                           {"sightline", SIGHTLINE_VERSION, "Sightline"}, kInstructions);
  }
  if (!initialized_) throw RpcError{ErrorCode::InvalidRequest, "initialize first"};
  if (m.method == "tools/list") {
    json list = json::array();
    for (const auto& t : tools()) list.push_back(protocol::mcp::toJson(t));
    return {{"tools", list}};
  }
  if (m.method == "tools/call") {
    auto p = parsed<protocol::mcp::CallToolParams>(m.params);
    return protocol::mcp::toJson(callTool(tools_, p.name, p.arguments));
  }
  if (m.method == "resources/list") {
    json list = json::array();
    for (const auto& r : resources(tools_)) list.push_back(protocol::mcp::toJson(r));
    return {{"resources", list}};
  }
  if (m.method == "resources/templates/list") return {{"resourceTemplates", json::array()}};
  if (m.method == "resources/read") {
    auto p = parsed<protocol::mcp::ReadResourceParams>(m.params);
    std::string error;
    auto text = readResource(tools_, p.uri, error);
    // -32002: the revision's code for a resource that is not found.
    if (!text) throw RpcError{static_cast<ErrorCode>(-32002), error};
    return {{"contents", json::array({{{"uri", p.uri}, {"mimeType", text->mime_type}, {"text", text->text}}})}};
  }
  throw RpcError{ErrorCode::MethodNotFound, "no method " + m.method};
}

void McpServer::flush() {
  if (loading()) return;
  while (!waiting_.empty() && !loading()) {
    protocol::Message m = std::move(waiting_.front());
    waiting_.pop_front();
    handle(m);
  }
  if (ended_ && waiting_.empty()) stopped_ = true, io_.stop();
}

void McpServer::onEnd() {
  ended_ = true;
  flush();
}

// The loader counts itself busy until the handler that tells of its end returns: what waits is
// answered after it.
void McpServer::flushSoon() {
  boost::asio::post(io_, [this] { flush(); });
}

void McpServer::profileStatusChanged() {
  tools_.loadChanged();
  after_load_ = true;  // what waits is answered after this
  boost::asio::post(io_, [this] {
    after_load_ = false;
    // The scripts the profile names but the workspace holds elsewhere (`train/train.py` for a
    // profile's `/scratch/u/train.py`): opened, as an editor would, and the profile loaded
    // again onto them.
    if (!stopped_ && !workspace_.loading() && tools_.openScriptsOfProfile())
      workspace_.reloadProfiles("its scripts, found in the workspace");
    flush();
  });
}

void McpServer::logMessage(int type, const std::string& message) {
  if (type <= 2) SL_LOG(Warn) << message;
}

void McpServer::showMessage(int type, const std::string& message) { logMessage(type, message); }

std::string McpServer::beginProgress(const std::string& title, const std::string& message) {
  ++progress_;
  SL_LOG(Info) << title << ": " << message;
  return "mcp-load";
}

void McpServer::endProgress(const std::string&, const std::string& message) {
  if (progress_ > 0) --progress_;
  SL_LOG(Info) << "load: " << message;
  flushSoon();
}

}  // namespace sightline::server::mcp
