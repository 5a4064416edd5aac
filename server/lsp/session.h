// The LSP layer: one client's session. Lifecycle, the method table over the workspace
// (workspace.h), diagnostics publishing (debounced), and what the workspace tells the client
// (WorkspaceClient). Handlers take typed params (protocol/) and answer with protocol types.
// Runs on one io_context thread; the transport feeds it bytes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "protocol/lsp_types.h"
#include "protocol/server_messages.h"
#include "server/lsp/debounce.h"
#include "server/lsp/dispatcher.h"
#include "server/lsp/framing.h"
#include "server/lsp/transport.h"
#include "server/workspace/workspace.h"

namespace sightline::server {

struct SessionOptions {
  // The delay after didChange before diagnostics are recomputed: fixed when set, else following
  // what the document's last computations cost (debounce.h).
  std::optional<std::chrono::milliseconds> diagnostics_delay;
  std::chrono::milliseconds profile_poll{1000};  // own watcher: how often the profile's mtime is read
  size_t max_message_bytes = MessageFramer::kDefaultMaxMessageBytes;
};

class Session final : public WorkspaceClient {
 public:
  Session(boost::asio::io_context& io, Transport& transport, SessionOptions options);
  void start();
  // Exit code per the LSP spec: 0 after shutdown + exit, 1 when exit (or EOF) came without shutdown.
  int exitCode() const { return exit_code_; }

  // WorkspaceClient
  bool serving() const override;
  void profileStatusChanged() override;
  void hintsChanged() override;
  void findingsChanged() override;
  void logMessage(int type, const std::string& message) override;
  void showMessage(int type, const std::string& message) override;
  std::string beginProgress(const std::string& title, const std::string& message) override;
  void reportProgress(const std::string& token, const std::string& message, int percent) override;
  void endProgress(const std::string& token, const std::string& message) override;

 private:
  void onBytes(std::string bytes, const Transport::InputHold& hold);
  void onClosed();
  void send(const nlohmann::json& message);
  void registerHandlers();
  void stop(int exit_code);
  void sendProgress(const protocol::ProgressParams& params);
  void registerCapability(const std::string& id, const std::string& method, nlohmann::json options);

  nlohmann::json initialize(const nlohmann::json& params);
  void initialized();
  void requestConfiguration();
  void didOpen(const nlohmann::json& params);
  void didChange(const nlohmann::json& params);
  void didClose(const nlohmann::json& params);

  void publishNow(Document& doc);
  void schedulePublish(const std::string& uri);
  Debounce& debounceOf(const std::string& uri);

  Document& documentFor(const std::string& uri);
  nlohmann::json codeActions(const nlohmann::json& params);
  nlohmann::json executeCommand(const nlohmann::json& params);
  nlohmann::json inlayHints(const nlohmann::json& params);
  nlohmann::json hover(const nlohmann::json& params);
  nlohmann::json stepView(const nlohmann::json& params);
  nlohmann::json codeLenses(const nlohmann::json& params);
  void applyEditOnClient(const std::string& label, const protocol::WorkspaceEdit& edit);

  boost::asio::io_context& io_;
  Transport& transport_;
  SessionOptions options_;
  MessageFramer framer_;
  Dispatcher dispatcher_;
  protocol::ClientCapabilities client_;
  PositionEncoding encoding_ = PositionEncoding::Utf16;
  std::map<std::string, std::unique_ptr<boost::asio::steady_timer>> publish_timers_;
  std::map<std::string, Debounce> debounce_;  // per document
  int progress_counter_ = 0;
  bool stopped_ = false;
  bool shutdown_requested_ = false;
  int exit_code_ = 1;
  Workspace workspace_;  // last: destroyed first, while the session it tells is still whole
};

}  // namespace sightline::server
