// Profiles in the server: finding them in the workspace, loading them off the io thread,
// and describing what is loaded (the sightline/profileStatus notification, the summary).
#pragma once

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "analysis/features/job_view.h"
#include "analysis/features/step_verdict.h"
#include "analysis/features/story.h"
#include "analysis/join/profile_join.h"
#include "protocol/server_messages.h"
#include "server/workspace/compiled_code.h"

namespace sightline::server {

// A profile file read and joined to the workspace's source.
struct LoadedProfile {
  std::string path;                // the first of `parts`
  std::vector<std::string> parts;  // the reports read as this profile (one per rank of a run)
  std::vector<std::string> named;  // open scripts the load named (their NVTX ranges), normalized
  int64_t file_mtime_ns = 0;       // of `path` when it was read
  std::unique_ptr<join::ProfileJoin> join;
  // The step verdict, computed once per load from the join's story: every surface reads it.
  std::optional<features::StepVerdict> verdict;
  // Each rank's summary and, for two ranks or more, the job they make; then the story the
  // report's header tells (features::reportStory): the status, the panel and the summary read
  // them, computed once per load (completeLoad).
  std::vector<join::RankSummary> summaries;
  std::optional<features::JobView> job;
  features::Story story;
  const model::Profile& profile() const { return join->profile(); }
  const attribution::Attribution& attr() const { return join->attribution(); }
};

// Profile files under `root` (depth-limited, hidden and build folders skipped), newest first:
// `*.nsys-rep`, `*.sqlite`, `*.pt.trace.json`, `*.pt.trace.json.gz`, and memory snapshots
// (`*.pickle` named with "snapshot", "memory" or "oom"). Not links, not files
// another user put in a world-writable folder, and nothing when `root` is `/`.
std::vector<std::string> discoverProfiles(const std::string& root);
// Expands one `profiles` entry (a path or a glob with * and ?, relative to `root`) to files,
// newest first.
std::vector<std::string> expandProfileSetting(const std::string& root, const std::string& entry);
int64_t fileMtimeNs(const std::string& path);  // 0 when missing

// The step verdict of a loaded profile: the one place a load computes it (the server's loads,
// `report` and `check`); every surface then renders that value. nullopt without steps.
std::optional<features::StepVerdict> loadVerdict(const join::ProfileJoin* join);
// Fills what a load computes once beside its join: the verdict, the ranks' summaries and job,
// and the story.
void completeLoad(LoadedProfile& loaded);

protocol::ProfileStatusParams profileStatus(const LoadedProfile* loaded, const std::string& error);
std::string profileSummaryMarkdown(const LoadedProfile& loaded);

// Loads on a detached worker thread and posts the result to the io_context; results of a
// load superseded by a newer one (or cancelled) are dropped. Safe to destroy while a load
// runs: the worker then posts nothing.
class ProfileLoader {
 public:
  using Done = std::function<void(std::shared_ptr<LoadedProfile> loaded, std::string error)>;
  using Stage = std::function<void(std::string message, int percent)>;
  explicit ProfileLoader(boost::asio::io_context& io);
  ~ProfileLoader();
  ProfileLoader(const ProfileLoader&) = delete;
  ProfileLoader& operator=(const ProfileLoader&) = delete;

  // `stage` and `done` run on the io thread.
  // `env` maps the profile's script paths onto the workspace and reads the scripts (for call
  // sites of traces that name frames by callee); it is used on the loading thread.
  // GPU idle gaps shorter than `idle_gap_ns` are not counted.
  // Several paths: the reports of one run's ranks, read as one profile.
  void load(const std::vector<std::string>& paths, join::JoinEnvironment env, join::JoinOptions options, Stage stage,
            Done done, CompiledCodeSearch compiled = {});
  void cancel();  // drops the running load's result
  bool busy() const { return running_ > 0; }

 private:
  struct Channel {
    std::mutex mutex;
    boost::asio::io_context* io = nullptr;  // null once the loader is gone
  };
  std::shared_ptr<Channel> channel_;
  // Written on the io thread; the loading thread reads it to stop an `nsys export` a newer load
  // or cancel made pointless.
  std::shared_ptr<std::atomic<uint64_t>> generation_;
  int running_ = 0;
};

}  // namespace sightline::server
