// Named files and the joined profile for the verbs.
#include "server/cli/joined_files.h"

#include <filesystem>

#include "server/platform/phase_clock.h"
#include "server/platform/worker_pool.h"
#include "server/workspace/compiled_code.h"
#include "server/workspace/local_files.h"
#include "server/workspace/profile_files.h"
#include "server/workspace/steps_file.h"

namespace sightline::server::cli {

std::vector<NamedFile> readNamedFiles(const std::vector<std::string>& paths, const std::string& verb, std::ostream& err,
                                      bool& unreadable) {
  std::vector<NamedFile> out;
  for (const auto& path : paths) {
    auto text = readTextFile(path);
    if (!text) {
      err << "sightline " << verb << ": cannot read " << path << "\n";
      unreadable = true;
      continue;
    }
    std::error_code ec;
    auto file = std::make_shared<const source::SourceFile>(std::move(*text), /*chunked=*/true, &WorkerPool::shared());
    auto index = std::make_shared<const source::SourceIndex>(source::buildSourceIndex(*file));
    out.push_back({path, std::filesystem::absolute(path, ec).string(), std::move(file), std::move(index)});
  }
  return out;
}

std::unique_ptr<join::ProfileJoin> loadJoinedProfile(const std::vector<std::string>& profile_paths,
                                                     const attribution::PathMapper& mapper,
                                                     const std::vector<NamedFile>& named, const JoinRequest& request,
                                                     std::string& error) {
  CompiledCodeSearch search;
  search.named = request.compiled_code;
  search.roots = {std::filesystem::current_path().string()};
  search.mapper = &mapper;
  search.may_open = [scope = scopeOf(mapper)](const std::string& folder) { return scope.allows(folder); };
  CompiledCodeReader compiled_reader(std::move(search));  // reads while the profile loads
  OpenProfileOptions open_options;
  open_options.names_read = compiled_reader.namesRead();
  ingest::LoadResult loaded;
  ModelStoreBeside store;  // after `loaded`: it waits before the profile's tables go
  open_options.store_beside = &store;
  loaded = openProfiles(profile_paths, open_options);
  markPhase("open: read and intern, or the model cache");
  const std::string& profile_path = profile_paths.front();
  if (!loaded.profile) {
    error = loaded.error;
    return nullptr;
  }
  // Nothing ran on a GPU: capture advice about Python backtraces would not fit. Say what the
  // file holds instead (an empty or cut trace, a capture without CUDA tracing).
  if (loaded.profile->activities.empty() && loaded.profile->memory.empty()) {
    error = profile_path + ": the profile holds no GPU activity (no kernel, copy or memset)";
    if (!loaded.profile->info.warnings.empty()) error += "; " + loaded.profile->info.warnings.front();
    error +=
        ". Capture the training steps with CUDA tracing on (nsys -t cuda, or the PyTorch profiler with "
        "ProfilerActivity.CUDA)";
    return nullptr;
  }
  join::JoinOptions options;
  options.idle_gap_ns = request.idle_gap_ns;
  options.all_steps = request.all_steps;
  options.runner = &WorkerPool::shared();
  options.measured = request.measured;
  if (!options.measured) {
    std::string why;
    options.measured = findStepsFile(profile_path, why);
    if (!why.empty()) loaded.profile->info.warnings.push_back(why + " (left out)");
  }
  for (const auto& f : named) options.named.push_back({f.absolute, f.file, f.index});
  options.compiled = compiled_reader.finish(*loaded.profile);
  options.attribution_store = attributionStore(profile_paths, open_options);
  options.before_tables_change = [&store] { store.wait(); };
  auto join = std::make_unique<join::ProfileJoin>(std::move(*loaded.profile), localJoinEnvironment(mapper), options);
  markPhase("join: attribution, or its cache");
  store.wait();
  markPhase("open: the model cache written beside the join");
  return join;
}

}  // namespace sightline::server::cli
