// The one owner of "a profile joined to the user's source": built once per load from the
// profile a reader returned and the user's files, it runs attribution (with the NVTX range
// sites and call-site tables of those files), keeps what the profile names of each file's
// functions, and answers per-file costs. The server, `report` and `check` all go through it.
// Pure: every file it reads comes through JoinEnvironment's callbacks, so it does no IO.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/compiled_frames.h"
#include "analysis/attribution/path_mapping.h"
#include "analysis/join/file_costs.h"
#include "analysis/join/function_anchors.h"
#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"
#include "analysis/model/step_measurement.h"
#include "analysis/source/line_tracker.h"
#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::join {

// A local file the caller has parsed already (a file named on the command line): its NVTX
// range sites feed attribution, and its call-site table is built from this parse.
struct SourceInput {
  std::string path;  // absolute; NVTX sites are charged to this path (interned into the profile)
  std::shared_ptr<const source::SourceFile> file;
  std::shared_ptr<const source::SourceIndex> index;
};

// What the join asks of the outside world.
struct JoinEnvironment {
  // Profile paths -> local files (rules, candidates, root; existence through its callback).
  attribution::PathMapper mapper;
  // A local path's identity (absolute, normalized): two paths of one file give one key.
  std::function<std::string(const std::string& local_path)> normalize;
  // A mapped local file's text, for call-site tables of traces; nullopt when unreadable.
  std::function<std::optional<std::string>(const std::string& local_path)> read_source;
};

// Where attributions are kept between loads (the server's reopen cache): `load` gives the
// bytes stored under a key (nullopt: none), `store` keeps them, told how long attribution
// took. Keys begin with `profile_key`, the identity of the profile as read (its file, the
// tool that read it). Empty functions: attribute every time.
struct AttributionStore {
  std::string profile_key;
  std::function<std::optional<std::string>(const std::string& key)> load;
  std::function<void(const std::string& key, const std::string& bytes, double seconds)> store;
  // An attribution that took less is neither encoded nor stored (attributing again is as quick).
  double keep_from_s = 0;
};

struct JoinOptions {
  std::vector<SourceInput> named;  // files the user named; may be empty
  int64_t idle_gap_ns = 1'000'000;
  bool all_steps = false;  // every step counts (no warm-up or outlier steps left out)
  // The median step of the same script run without a profiler, from its own log (0: none):
  // the capture's cost is scaled to it (attribution::Options::logged_step_ns).
  int64_t logged_step_ns = 0;
  // That step as measured (sightline capture's steps file, or the log as read): the story's
  // headline (StepStory::measured). Its median is the step the capture's cost is scaled to.
  std::optional<model::StepMeasurement> measured;
  // What torch.compile generated for the run (ingest/inductor_reader.h): kernels launched from
  // its wrappers go to the model lines they compute. Null: they stay on the compiled function.
  std::shared_ptr<const model::CompiledCode> compiled;
  AttributionStore attribution_store;
  // Called before the join changes a table of the profile (mapping compiled frames rewrites
  // marks and adds frames); its info and names may change at any time. The server's reopen
  // cache write, still reading the tables beside the join, is waited for here.
  std::function<void()> before_tables_change;
  // Threads the caller lends to the attribution (attribution::Options::runner); null: none.
  source::TaskRunner* runner = nullptr;
};

class ProfileJoin {
 public:
  ProfileJoin(model::Profile profile, JoinEnvironment env, const JoinOptions& options);
  ProfileJoin(const ProfileJoin&) = delete;
  ProfileJoin& operator=(const ProfileJoin&) = delete;

  const model::Profile& profile() const { return profile_; }
  const attribution::Attribution& attribution() const { return attr_; }
  // How the profile's stacks through torch.compile's generated code were mapped (or why not).
  const attribution::CompiledMapping& compiled() const { return compiled_; }
  // The generated code that was read (null: none).
  const std::shared_ptr<const model::CompiledCode>& compiledCode() const { return compiled_code_; }
  // torch.compile's compilations by compiled function (empty without TORCH_TRACE records).
  const std::vector<CompiledFunctionSummary>& compiles() const { return compiles_; }
  const CompileLogs& compileLogs() const { return compile_logs_; }

  // The local file a profile path maps onto (as the mapper gives it), or nullopt.
  std::optional<std::string> localPathOf(model::StringId profile_file) const;
  // The costs of every profile path that maps onto `local_path`, merged.
  FileCosts measuredCosts(const std::string& local_path) const;
  // A profile path for display: the local file it maps onto, else itself.
  std::string placeOf(model::StringId profile_file) const;
  // GPU memory (a memory snapshot's replay; its story null when the profile has none).
  const JoinedMemory& memory() const { return memory_; }
  // The steady steps' story (null when no steps are known).
  const std::shared_ptr<const StepStory>& story() const { return story_; }
  // The step as measured without the profiler (JoinOptions::measured), when one was given.
  const std::optional<model::StepMeasurement>& measured() const { return measured_; }
  // Tells the step story with `timing`'s figures (a light capture of the same script, joined
  // on its own), this profile's lines (timedStory). Call before sharing the join.
  void setTiming(const ProfileJoin& timing, const std::string& name);
  // Whether the attribution came from the store (AttributionStore) rather than being run.
  bool attributionReused() const { return attribution_reused_; }
  // The (function, line) pairs the profile names in the files that map onto `local_path`.
  std::vector<FunctionAnchor> anchors(const std::string& local_path) const;

 private:
  // Whether a profile path maps onto `local_path`, with that file as one more mapping
  // candidate (so a file opened after the load maps too). Built once per query: the mapper is
  // copied and `local_path` normalized once, not per profile path.
  std::function<bool(const std::string& profile_path)> mapsOnto(const std::string& local_path) const;

  // Attribution through `store`: the stored one when its inputs and call-site tables are
  // those of now, else attribution run (and stored).
  attribution::Attribution attributeOnce(const AttributionStore& store, attribution::Options& options);
  // What the training script `script` (a placed path) asks of its DataLoaders: the verdict's
  // input, read once per load.
  // sightline capture's steps file names each process's rank (pid, rank, host) where the profile
  // records none: an nsys report of a torchrun job knows its processes by GPU alone.
  void rankProcessesAsMeasured(const model::StepMeasurement& measured);
  // The NVTX ranges of the local files the profile's frames map onto, other than `named` (read
  // through the environment; at most kMaxMappedScripts files).
  std::vector<attribution::NvtxSite> mappedNvtxSites(const std::vector<SourceInput>& named) const;
  static constexpr size_t kMaxMappedScripts = 64;
  ScriptLoaders scriptLoadersOf(const std::string& script, const std::vector<SourceInput>& named) const;

  model::Profile profile_;
  JoinEnvironment env_;
  bool attribution_reused_ = false;
  std::shared_ptr<const model::CompiledCode> compiled_code_;
  attribution::CompiledMapping compiled_;
  std::vector<CompiledFunctionSummary> compiles_;
  CompileLogs compile_logs_;  // the TORCH_TRACE logs read, and those of other runs set aside
  attribution::Attribution attr_;
  std::map<model::StringId, std::vector<FunctionAnchor>> anchors_;  // profile path -> anchors
  std::optional<model::StepMeasurement> measured_;
  std::shared_ptr<const StepStory> story_;
  JoinedMemory memory_;
};

// One local file seen through a profile, and through a second (compare) profile when given.
struct FileJoin {
  FileCosts measured;                   // on the lines the profile names
  std::vector<FunctionAnchor> anchors;  // of the profile paths that map here
  bool has_compare = false;
  FileCosts compare;  // the compare profile's costs, placed on the same lines as `measured`
  // How the compare profile's lines were placed when it measured another version of the
  // script ("10 of 11 profiled lines matched by the work they ran"); "" when they agree.
  std::string compare_alignment;
};

// Joins `local_path` (its current text: `file`, `index`; lines moved since the profile loaded:
// `tracker`, or null) with `main` and, when given, `compare`.
FileJoin joinFile(const ProfileJoin& main, const ProfileJoin* compare, const std::string& local_path,
                  const source::SourceFile& file, const source::SourceIndex& index,
                  const source::LineTracker* tracker = nullptr);

// The joined costs on the document's current lines (moved through `tracker`), with the compare
// profile's attached as `compare` (named `compare_name`; `compare_note` says how its lines were
// placed, when they had to be).
FileCosts currentCosts(const FileJoin& joined, const source::LineTracker& tracker, const std::string& compare_name,
                       const std::string& compare_note);

}  // namespace sightline::join
