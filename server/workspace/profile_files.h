// Opening a profile the user points at, with what that takes outside the analysis core: an
// Nsight Systems report (`.nsys-rep`) is exported to SQLite once with `nsys export` (a child
// process) into a cache directory, then read like any export. Everything else goes straight
// to the readers (analysis/ingest/profile_loader.h).
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"

namespace sightline::server {

// The reopen cache's write of a model just read, on a thread of its own beside the caller's
// join (OpenProfileOptions::store_beside): at the first open of a large export it is a tenth of
// the time, and the join (one thread) leaves the second core free. The write reads the loaded
// profile's tables (ingest::ModelCacheImage): wait() before a table changes or goes, which the
// destructor does too, so hold it after the load result.
class ModelStoreBeside {
 public:
  ModelStoreBeside() = default;
  ModelStoreBeside(const ModelStoreBeside&) = delete;
  ModelStoreBeside& operator=(const ModelStoreBeside&) = delete;
  ~ModelStoreBeside() { wait(); }
  // A write that fails (no memory, no room) leaves no entry: the cache only saves time.
  void start(std::function<void()> write) {
    wait();
    thread_ = std::thread([write = std::move(write)] {
      try {
        write();
      } catch (const std::exception&) {
      }
    });
  }
  void wait() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

struct OpenProfileOptions {
  // Where .nsys-rep exports go; "" = $XDG_CACHE_HOME/sightline, ~/.cache/sightline, or without
  // either /tmp/sightline-<uid>. Made 0700 when missing, and used only while it is this user's
  // private folder; one found otherwise (a link, another user's, open to others, read-only) is
  // never changed: the profile is read without it (an export made in a temporary folder, then
  // removed), with a warning that says why.
  std::string cache_dir;
  ingest::LoadProgress progress;  // on the loading thread
  ingest::NamesRead names_read;   // on the loading thread, once per file
  // `nsys export`: stopped after this long, or once `cancelled` says so (a newer load).
  double export_timeout_s = 600;
  std::function<bool()> cancelled;
  // The reopen cache: a profile that took `model_cache_min_s` or longer to read is kept in the
  // same folder as compact binary (analysis/ingest/model_cache.h), keyed by its path, size and
  // mtime and this binary's, and read from there next time; the oldest entries go once they
  // pass `model_cache_limit` bytes.
  bool model_cache = true;
  double model_cache_min_s = 1.0;
  uint64_t model_cache_limit = uint64_t{2} << 30;
  // Where set, a model is stored on that thread rather than before openProfile returns. A job
  // of several reports (openProfiles) is kept as its merged model, when its reports took
  // model_cache_min_s to read one after another; its parts' own entries are read, not written.
  ModelStoreBeside* store_beside = nullptr;
};

ingest::LoadResult openProfile(const std::string& path, const OpenProfileOptions& options = {});
// A folder of the caches' own private folder (made 0700 where missing), for what the server
// writes beside its caches (the MCP server's report pages); "" with `error` set when there is
// no private cache folder to hold it.
std::string privateCacheFolder(const std::string& name, std::string& error, const OpenProfileOptions& options = {});
// The reopen cache's store for the attribution of the profile read from `paths` (the same
// folder and limit; an attribution that took a tenth of `model_cache_min_s` or longer is kept,
// keyed by the profiles' keys and the attribution's inputs: reading it back takes a few
// milliseconds); empty when the cache is off.
join::AttributionStore attributionStore(const std::vector<std::string>& paths, const OpenProfileOptions& options = {});
// Several reports of one run (one per rank) as one profile (model::mergeProfiles), read on as
// many threads at once as there are cores; one path is openProfile. Fails with the first part,
// in the order given, that cannot be read.
ingest::LoadResult openProfiles(const std::vector<std::string>& paths, const OpenProfileOptions& options = {});
// The reports among `candidates` that are other ranks of the same run as `first`: files of its
// folder whose names differ from its name only in their digits (run_0.sqlite, run_1.sqlite),
// in name order, `first` included. With `named_rank`, only when the digits follow "rank"
// (profile_rank0.sqlite): report1 and report2 of a folder are usually two runs, not two ranks.
std::vector<std::string> sameRun(const std::string& first, const std::vector<std::string>& candidates, bool named_rank);

}  // namespace sightline::server
