// What the MCP server's tools answer from (mcp_tools.h): the workspace, the report of its load,
// and the agent's work since it (the scripts it edited, the scripts a profile names elsewhere).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/cli/report_data.h"
#include "server/workspace/workspace.h"

namespace sightline::server::mcp {

// What a tool answers from: the workspace (settings, the loaded profile and compareWith) and
// the report of its load, made on first use and kept until the next load.
class ToolContext {
 public:
  explicit ToolContext(Workspace& workspace) : workspace_(workspace) {}
  Workspace& workspace() { return workspace_; }
  // The loaded profile's report, with the workspace's files it maps onto as its named files;
  // null when no profile is loaded.
  report::LoadedReport* report();
  void loadChanged() { report_.reset(); }
  // Opens (in the workspace) the scripts the loaded profile names that its paths do not reach,
  // where the workspace holds one file of that name; true when it opened any (load again).
  bool openScriptsOfProfile();
  // The document of `absolute` in the workspace as it is on disk (opened, or opened again when
  // the file changed), for the editor's findings and fixes; a ToolError when it cannot be read.
  Document& document(const std::string& absolute);
  // `path` (relative to the workspace root, or absolute) as a file inside the workspace, or a
  // ToolError: nothing outside the root (after symlinks) is read.
  std::string workspaceFile(const std::string& path) const;
  // `absolute` as the agent should name it: relative to the root when under it.
  std::string shown(const std::string& absolute) const;
  // A path a profile or a summary recorded, as the agent should name it: the workspace's file it
  // maps onto (as the load maps them: the settings' mappings, the open scripts, the root), shown;
  // else as recorded.
  std::string localShown(const std::string& recorded);

  // The scripts as they are on disk now, against the text the report was joined to: an agent
  // edits them between calls. `refresh` reads them again (each call does); a line of the report
  // is then where it is now (currentLine; 0 where the edit changed it) and back (profiledLine).
  void refresh();
  int64_t currentLine(const std::string& absolute, int64_t profiled) const;
  int64_t profiledLine(const std::string& absolute, int64_t current) const;
  // The source text of a line as the file is now ("" when out of range); nullopt when the file is
  // as the report read it.
  std::optional<std::string> currentText(const std::string& absolute, int64_t current) const;
  // The files that changed since the report read them.
  std::vector<std::string> changedFiles() const;

 private:
  Workspace& workspace_;
  std::unique_ptr<report::LoadedReport> report_;
  const LoadedProfile* report_loaded_ = nullptr;  // what report_ was made of
  const LoadedProfile* report_compare_ = nullptr;
  std::set<std::string> looked_for_;  // script names openScriptsOfProfile looked for
  struct Edited {
    std::vector<std::string> lines;   // the file's lines now
    std::vector<int64_t> old_to_new;  // by line the report read (1-based; [0] unused): where it is now, 0 changed
    std::vector<int64_t> new_to_old;  // by line now: the line the report read, 0 a changed one
  };
  std::map<std::string, Edited> edited_;  // absolute path -> how it changed
};

// A tool's input that cannot be used, or a question the load cannot answer: told to the model
// as a tool error (isError), never as a protocol error.
struct ToolError {
  std::string message;
};

}  // namespace sightline::server::mcp
