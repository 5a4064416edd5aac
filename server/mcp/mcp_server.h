// The MCP server (`sightline mcp`, docs/agents.md): the Model Context Protocol over the
// workspace as the LSP has it (settings, the profile found or named and its multi-rank loading,
// the reopen cache), for coding agents. One JSON-RPC message per line in, one per line out;
// lifecycle (initialize, ping), tools (mcp_tools.h) and resources. A tool call or resource read that
// arrives while the profile loads waits for the load. Runs on one io_context thread, as the LSP session does.
#pragma once

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <string>

#include "protocol/jsonrpc.h"
#include "server/mcp/mcp_tools.h"
#include "server/workspace/workspace.h"

namespace sightline::server::mcp {

struct McpOptions {
  std::string root;  // the workspace folder (normalized)
  size_t max_message_bytes = 4u << 20;
};

class McpServer final : public WorkspaceClient {
 public:
  // `send` writes one message (a line without its newline).
  using Send = std::function<void(const std::string& line)>;
  // `settings`: the `sightline` settings section (null: defaults).
  McpServer(boost::asio::io_context& io, Send send, McpOptions options, nlohmann::json settings = nullptr);
  ~McpServer() override;
  void start();                   // the root and settings: the profile starts loading
  void onLine(std::string line);  // one message, as read
  void onEnd();                   // the input closed: answer what waits, then stop
  bool idle() const { return waiting_.empty(); }
  const Workspace& workspace() const { return workspace_; }

  // WorkspaceClient
  bool serving() const override { return !stopped_; }
  void profileStatusChanged() override;
  // The compare profile or the settings changed: the report is made again on next use.
  void hintsChanged() override { tools_.loadChanged(); }
  void findingsChanged() override {
    tools_.loadChanged();
    flushSoon();
  }
  void logMessage(int type, const std::string& message) override;
  void showMessage(int type, const std::string& message) override;
  std::string beginProgress(const std::string& title, const std::string& message) override;
  void reportProgress(const std::string&, const std::string&, int) override {}
  void endProgress(const std::string& token, const std::string& message) override;

 private:
  void handle(const protocol::Message& m);
  nlohmann::json answer(const protocol::Message& m);  // a request's result; throws RpcError
  void flush();                                       // answers the tool calls that waited for a load
  void flushSoon();
  bool loading() const;
  void send(const nlohmann::json& message);

  boost::asio::io_context& io_;
  Send send_;
  McpOptions options_;
  nlohmann::json settings_;
  bool initialized_ = false, stopped_ = false, ended_ = false, started_ = false;
  int progress_ = 0;
  bool after_load_ = false;                // a load ended: its scripts are looked for before anything is answered
  std::deque<protocol::Message> waiting_;  // tool calls made while the profile loads
  std::chrono::steady_clock::time_point last_rescan_{};  // the workspace last walked for a newer profile
  Workspace workspace_;
  ToolContext tools_;
};

}  // namespace sightline::server::mcp
