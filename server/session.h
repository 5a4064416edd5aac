// The LSP session: lifecycle, documents, settings, diagnostics publishing (debounced), code
// actions and commands. Runs on one io_context thread; the transport feeds it bytes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "protocol/lsp_types.h"
#include "server/dispatcher.h"
#include "server/document_store.h"
#include "server/framing.h"
#include "server/settings.h"
#include "server/transport.h"

namespace sightline::server {

struct SessionOptions {
  std::chrono::milliseconds diagnostics_delay{150};  // debounce after didChange
  size_t max_message_bytes = MessageFramer::kDefaultMaxMessageBytes;
};

class Session {
 public:
  Session(boost::asio::io_context& io, Transport& transport, SessionOptions options);
  void start();
  // Exit code per the LSP spec: 0 after shutdown + exit, 1 when exit (or EOF) came without shutdown.
  int exitCode() const { return exit_code_; }

 private:
  void onBytes(std::string bytes);
  void onClosed();
  void send(const nlohmann::json& message);
  void registerHandlers();
  void stop(int exit_code);

  nlohmann::json initialize(const nlohmann::json& params);
  void initialized();
  void applySettings(const nlohmann::json& section);
  void requestConfiguration();

  void publishNow(Document& doc);
  void schedulePublish(const std::string& uri);
  void republishAll();

  nlohmann::json codeActions(const nlohmann::json& params);
  nlohmann::json executeCommand(const nlohmann::json& params);
  void applyEditOnClient(const std::string& label, const protocol::WorkspaceEdit& edit);

  Document& documentFor(const std::string& uri);

  boost::asio::io_context& io_;
  Transport& transport_;
  SessionOptions options_;
  MessageFramer framer_;
  Dispatcher dispatcher_;
  DocumentStore documents_;
  protocol::ClientCapabilities client_;
  PositionEncoding encoding_ = PositionEncoding::Utf16;
  Settings settings_;
  uint64_t settings_generation_ = 1;
  std::map<std::string, std::unique_ptr<boost::asio::steady_timer>> publish_timers_;
  bool stopped_ = false;
  bool shutdown_requested_ = false;
  int exit_code_ = 1;
};

}  // namespace sightline::server
