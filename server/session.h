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
#include "server/profiles.h"
#include "server/settings.h"
#include "server/transport.h"

namespace sightline::server {

struct SessionOptions {
  std::chrono::milliseconds diagnostics_delay{150};  // debounce after didChange
  std::chrono::milliseconds profile_poll{1000};      // own watcher: how often the profile's mtime is read
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
  // The document's findings, with the loaded profile's evidence and profile-only rules.
  // Cached per document change, profile and settings generation.
  const std::vector<features::Finding>& findingsFor(Document& doc);
  std::vector<features::Finding> computeFindings(Document& doc);

  // Profiles (profiles.h): which to load, loading with progress, status, watching.
  std::vector<std::string> profileCandidates() const;
  void loadProfiles(std::vector<std::string> candidates, const std::string& reason);
  void onProfileLoaded(std::shared_ptr<LoadedProfile> loaded, std::string error, std::vector<std::string> rest,
                       const std::string& token);
  void progress(const std::string& token, const nlohmann::json& value);
  void sendProfileStatus();
  void refreshHints();
  void watchProfile();
  void loadCompare();
  const features::FileCosts* costsFor(Document& doc);
  // Settings' pathMappings (with ${workspaceFolder}) and the workspace root; no candidates.
  attribution::PathMapper workspaceMapper() const;
  nlohmann::json inlayHints(const nlohmann::json& params);
  nlohmann::json hover(const nlohmann::json& params);

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
  bool settings_received_ = false;  // from initializationOptions or the client, not defaults
  std::map<std::string, std::unique_ptr<boost::asio::steady_timer>> publish_timers_;
  std::string root_;  // the first workspace folder (or rootUri), as a path; "" when none
  ProfileLoader loader_;
  std::shared_ptr<const LoadedProfile> profile_;
  // `compareWith`: a second profile whose costs hints and hovers compare against.
  ProfileLoader compare_loader_;
  std::shared_ptr<const LoadedProfile> compare_;
  std::string compare_setting_;  // the compareWith value compare_ (or its load) is for
  std::string profile_error_;
  uint64_t profile_generation_ = 0;          // bumps on every (re)load
  std::vector<std::string> loaded_setting_;  // the `profiles` setting the last load used
  bool reload_profiles_ = false;             // a setting the loads depend on changed
  std::string progress_token_;               // of the running load, "" when none
  int progress_counter_ = 0;
  struct CostsSlot {
    uint64_t profile_generation = 0;
    join::FileJoin joined;          // on the lines the profiles name
    uint64_t line_generation = 0;   // of the document, when `current` was remapped
    features::FileCosts current;    // moved through the document's edits
  };
  std::map<std::string, CostsSlot> costs_;  // uri -> costs
  struct FindingsSlot {
    uint64_t line_generation = 0, profile_generation = 0, settings_generation = 0;
    std::vector<features::Finding> findings;
  };
  std::map<std::string, FindingsSlot> findings_;  // uri -> findingsFor's last result
  boost::asio::steady_timer watch_timer_;
  int64_t watched_mtime_ = 0;  // last seen mtime of the loaded profile's file
  int64_t pending_mtime_ = 0;  // a changed mtime seen once; reloaded when it is seen again (stable)
  int load_retries_ = 0;
  bool stopped_ = false;
  bool shutdown_requested_ = false;
  int exit_code_ = 1;
};

}  // namespace sightline::server
