// The workspace: what the server knows and keeps, apart from the protocol. Open documents,
// settings, the loaded profile (and the compare profile), their background loads, reloads when
// the file changes on disk, and the caches of each document's joined costs and findings, each
// keyed by generations so that a change anywhere invalidates only what depends on it. It tells
// the editor what changed through WorkspaceClient, which the LSP layer (session.h) implements;
// it never builds a protocol message. Runs on the io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_view.h"
#include "server/workspace/baseline.h"
#include "server/workspace/document_store.h"
#include "server/workspace/profiles.h"
#include "server/workspace/settings.h"

namespace sightline::server {

// What the workspace tells the editor.
class WorkspaceClient {
 public:
  virtual ~WorkspaceClient() = default;
  virtual bool serving() const = 0;         // initialized and not shut down
  virtual void profileStatusChanged() = 0;  // the loaded profile, its error or the compare profile
  virtual void hintsChanged() = 0;          // inlay hints should be asked for again
  virtual void findingsChanged() = 0;       // every open document's diagnostics
  virtual void logMessage(int type, const std::string& message) = 0;   // 1 error ... 4 log
  virtual void showMessage(int type, const std::string& message) = 0;  // shown to the user
  // Progress of a profile load: begin returns a token ("" when the client shows none).
  virtual std::string beginProgress(const std::string& title, const std::string& message) = 0;
  virtual void reportProgress(const std::string& token, const std::string& message, int percent) = 0;
  virtual void endProgress(const std::string& token, const std::string& message) = 0;
};

class Workspace {
 public:
  Workspace(boost::asio::io_context& io, WorkspaceClient& client, std::chrono::milliseconds profile_poll);
  void stop();  // cancels loads and timers; nothing is told to the client after it

  // --- the workspace folder and settings ---
  void setRoot(const std::string& path);  // normalized
  const std::string& root() const { return root_; }
  // Applies the `sightline` settings section (null: defaults), telling the client what changed,
  // and (re)loads profiles once the client is served.
  join::JoinOptions joinOptions() const;
  // Where to look for torch.compile's generated code (the compiledCode setting, the workspace).
  CompiledCodeSearch compiledCodeSearch() const;
  void applySettings(const nlohmann::json& section);
  const Settings& settings() const { return settings_; }
  bool settingsReceived() const { return settings_received_; }
  bool toggleHints();  // returns whether hints are now on

  // --- documents ---
  Document& open(const std::string& uri, int64_t version, std::string text);
  Document* find(const std::string& uri) { return documents_.find(uri); }
  std::vector<Document*> documents() { return documents_.all(); }
  bool close(const std::string& uri);  // false when it was not open

  // --- profiles ---
  // Loads `path` (sightline.loadProfile); reloads the current profile or the settings' ones.
  void loadProfile(const std::string& path, const std::string& reason);
  void reloadProfiles(const std::string& reason);
  // Loads the profiles again when they are no longer those loaded: a newer capture in the
  // workspace (or none loaded and one there now), or the loaded file changed. False when
  // nothing changed or a load runs. (The MCP server asks before it answers; the LSP is told by
  // its client's file events.)
  bool reloadIfNewer();
  void cancelLoad(const std::string& progress_token);  // a client's cancel of that load
  void profileFileChanged(const std::string& path);    // the client saw a file change on disk
  const LoadedProfile* profile() const { return profile_.get(); }
  const LoadedProfile* compareProfile() const { return compare_.get(); }
  // compareWith's file while one is loaded (a profile or a rank-summary file), else "".
  std::string comparePath() const { return compare_ ? compare_->path : compare_summary_path_; }
  const std::string& profileError() const { return profile_error_; }
  // Whether a load of the profile runs now.
  bool loading() const { return loader_.busy(); }
  // The profile's change from compareWith's run (baseline.h); null without one.
  const Regression* regression() const { return regression_.get(); }
  // How the profile's paths map onto the workspace (the settings' mappings, then the root).
  attribution::PathMapper mapper() const { return workspaceMapper(); }

  // --- per-document results, cached ---
  // The document's costs from the profile (with the compare profile's), moved through its edits;
  // null when no profile is loaded or the document is not a file.
  const features::FileCosts* costsFor(Document& doc);
  // Its findings, with the profile's evidence and the profile-only rules when one is loaded.
  const std::vector<features::Finding>& findingsFor(Document& doc);

 private:
  std::vector<std::string> profileCandidates() const;
  void loadProfiles(std::vector<std::string> candidates, const std::string& reason);
  void onProfileLoaded(std::shared_ptr<LoadedProfile> loaded, std::string error, std::vector<std::string> rest,
                       const std::string& token);
  void loadCompare();
  void watchProfile();
  attribution::PathMapper workspaceMapper() const;
  // The open scripts that open NVTX ranges (`report FILE` names its script; the editor names
  // these), parsed afresh for the loading thread.
  std::vector<join::SourceInput> namedDocuments();
  // A script opened after the load that opens ranges the profile recorded: load again with it
  // named, so steps and lines by range are the report's.
  void reloadForRanges(Document& doc);
  // Whether `doc` opens ranges `loaded` recorded and its load did not name it.
  bool namesRanges(const LoadedProfile& loaded, Document& doc);
  std::vector<features::Finding> computeFindings(Document& doc);

  boost::asio::io_context& io_;
  WorkspaceClient& client_;
  std::chrono::milliseconds profile_poll_;  // how often the profile's mtime is read
  DocumentStore documents_;
  Settings settings_;
  uint64_t settings_generation_ = 1;
  bool settings_received_ = false;  // from initializationOptions or the client, not defaults
  std::string root_;                // the first workspace folder (or rootUri), as a path; "" when none
  ProfileLoader loader_;
  std::shared_ptr<const LoadedProfile> profile_;
  // `compareWith`: a second profile whose costs hints and hovers compare against.
  ProfileLoader compare_loader_;
  std::shared_ptr<const LoadedProfile> compare_;
  std::string compare_setting_;  // the compareWith value compare_ (or its load) is for
  // compareWith naming a rank-summary file (a baseline CI kept) instead of a profile.
  std::vector<join::RankSummary> compare_summaries_;
  std::string compare_summary_path_;
  // The profile's change from compareWith's run, with intervals (baseline.h); null without one.
  std::shared_ptr<const Regression> regression_;
  void computeRegression();
  std::string profile_error_;
  uint64_t profile_generation_ = 0;          // bumps on every (re)load, and when compareWith's run changes
  bool loads_started_ = false;               // a load of the profiles has been asked for (loadProfiles)
  std::string last_load_key_;                // the newest candidate the last load began with: path, mtime
  std::vector<std::string> loaded_setting_;  // the `profiles` setting the last load used
  bool reload_profiles_ = false;             // a setting the loads depend on changed
  std::string progress_token_;               // of the running load, "" when none
  struct CostsSlot {
    uint64_t profile_generation = 0;
    join::FileJoin joined;         // on the lines the profiles name
    uint64_t line_generation = 0;  // of the document, when `current` was remapped
    features::FileCosts current;   // moved through the document's edits
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
};

}  // namespace sightline::server
