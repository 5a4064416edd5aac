// Where torch.compile's generated code for a loaded profile is found (the server's and the
// verbs' one way; the reading itself is ingest/inductor_reader.h). Folders are tried in order:
// the ones the user named (`--compiled-code`, the `compiledCode` setting), the Inductor cache
// the profile's own stacks ran from when it exists here (same machine) or maps onto a local
// folder (path mapping, as for scripts), caches and TORCH_TRACE folders inside the workspace
// roots, and the default cache of this machine's user (/tmp/torchinductor_<user>).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "analysis/attribution/path_mapping.h"
#include "analysis/ingest/inductor_reader.h"
#include "analysis/ingest/load_result.h"
#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"

namespace sightline::server {

struct CompiledCodeSearch {
  std::vector<std::string> named;  // folders the user named
  std::vector<std::string> roots;  // workspace roots, searched a few levels down
  const attribution::PathMapper* mapper = nullptr;
  bool default_cache = true;  // also /tmp/torchinductor_<user>
  // The folders a profile names (its own cache) are read only where this allows them, or when
  // they are this user's default cache; null allows any.
  std::function<bool(const std::string&)> may_open;
};

// Reads the generated code while the profile loads. Constructed before the load, it finds the
// folders that do not depend on the profile (the named ones, those in the workspace), lists
// them and reads them on a thread of its own: every TORCH_TRACE log, and
// the cache entries of the modules the profile runs once `expect` names them (the nsys reader's
// names, early in the load: `namesRead`), else, while they are unknown, up to
// kSpeculativeEntries entries in listing order. `finish` (after the load) stops that thread,
// reads the wanted entries it did not reach on all cores, then the folders that depend on the
// profile (its own cache folder, the default one), and keeps the modules the profile ran.
class CompiledCodeReader {
 public:
  static constexpr size_t kSpeculativeEntries = 64;

  explicit CompiledCodeReader(CompiledCodeSearch search);
  ~CompiledCodeReader();
  CompiledCodeReader(const CompiledCodeReader&) = delete;
  CompiledCodeReader& operator=(const CompiledCodeReader&) = delete;

  // The generated modules the profile runs (a superset will do), from any thread.
  void expect(std::vector<std::string> modules);
  // For the loader (OpenProfileOptions::names_read): `expect` with the module files it names.
  ingest::NamesRead namesRead();

  // The generated code of the modules `profile` ran, or null when it ran none (not compiled) or
  // none of it was found; `searched` lists the folders looked at. Once only.
  std::shared_ptr<const model::CompiledCode> finish(const model::Profile& profile,
                                                    std::vector<std::string>* searched = nullptr);
  // Cache entries the early thread read whole, not knowing the modules yet (after finish).
  size_t guessedEntries() const { return guessed_; }

 private:
  void readEarly();
  // Stops the early thread after the file it reads (abandon: also in the middle of finding and
  // listing the folders) and joins it.
  void stopEarly(bool abandon);

  CompiledCodeSearch search_;
  // Written by the early thread before it ends; read by finish once it has joined it.
  std::vector<std::string> early_;  // named and workspace folders
  ingest::CompiledCodeFiles files_;
  std::vector<std::optional<model::CompiledCode>> parts_;  // per file of files_, once read
  // Per file: the modules it was read for (null: read whole).
  std::vector<std::shared_ptr<const std::set<std::string>>> part_wanted_;
  size_t guessed_ = 0;
  bool early_read_ = false;  // readEarly ran (on its thread, or in finish)
  // Shared with the early thread.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<const std::set<std::string>> expected_;  // null: not known yet
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // abandoned: finding and listing the folders stop too
  std::thread thread_;
};

// The same without overlap: finds and reads after the load.
std::shared_ptr<const model::CompiledCode> findCompiledCode(const model::Profile& profile,
                                                            const CompiledCodeSearch& search,
                                                            std::vector<std::string>* searched = nullptr);

}  // namespace sightline::server
