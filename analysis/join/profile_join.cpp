// The profile joined to the source: attribution with the user's files, per-file queries, and
// the compare profile placed on the same lines.
#include "analysis/join/profile_join.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "analysis/attribution/attribution_cache.h"
#include "analysis/attribution/nvtx_sites.h"
#include "analysis/join/call_site_tables.h"
#include "analysis/join/compare_alignment.h"
#include "analysis/join/source_alignment.h"

namespace sightline::join {

ProfileJoin::ProfileJoin(model::Profile profile, JoinEnvironment env, const JoinOptions& options)
    : profile_(std::move(profile)), env_(std::move(env)) {
  if (!env_.normalize) env_.normalize = [](const std::string& p) { return p; };
  compiled_code_ = options.compiled;
  if (options.compiled && options.before_tables_change) options.before_tables_change();
  compiled_ = attribution::mapCompiledFrames(profile_, options.compiled.get());
  attribution::Options attribution_options;
  attribution_options.fused_lines = &compiled_.fused;
  attribution_options.compiled = &compiled_;
  attribution_options.idle_gap_ns = options.idle_gap_ns;
  attribution_options.all_steps = options.all_steps;
  attribution_options.runner = options.runner;
  attribution_options.logged_step_ns =
      options.measured && options.measured->median_ns > 0 ? options.measured->median_ns : options.logged_step_ns;
  if (options.compiled) {
    // Only the profiled run's logs: a warm-up run's beside it compiled other times.
    model::CompiledCode records = profiledRunsCompiles(*options.compiled, profile_, compile_logs_);
    compiles_ = summarizeCompiles(records);
    attribution_options.compile_windows = compileWindows(records, profile_);
  }
  addProfileGraphBreaks(profile_, compiles_);
  measured_ = options.measured;
  if (options.measured) rankProcessesAsMeasured(*options.measured);
  CallSiteTables call_sites(env_.mapper, env_.normalize, env_.read_source);
  for (const auto& input : options.named) {
    auto sites = attribution::findNvtxSites(*input.file, *input.index, profile_.strings.intern(input.path));
    attribution_options.nvtx_sites.insert(attribution_options.nvtx_sites.end(), sites.begin(), sites.end());
    call_sites.add(input.path, *input.file, *input.index);
  }
  // The scripts the profile ran that map onto local files, named or not: their NVTX ranges too,
  // so steps found by a range are the same whether the user named the script (`report FILE`),
  // opened it in the editor or neither.
  for (auto& site : mappedNvtxSites(options.named)) attribution_options.nvtx_sites.push_back(std::move(site));
  // Traces of Python calls name frames by callee: call sites come from the mapped files.
  attribution_options.call_sites = std::ref(call_sites);
  attr_ = attributeOnce(options.attribution_store, attribution_options);
  memory_ = joinMemory(profile_, attr_, [this](model::StringId file) { return placeOf(file); });
  anchors_ = collectFunctionAnchors(profile_);
  story_ = stepStory(attr_, [this](model::StringId file) { return placeOf(file); });
  // What torch.compile left behind, added to the story once.
  bool generated = compiled_.generated_marks > 0 || compiled_.generated_calls > 0;
  if (story_ && (generated || !compiles_.empty() || !compile_logs_.set_aside.empty())) {
    auto story = std::make_shared<StepStory>(*story_);
    story->compiles = compiles_;
    story->compile_logs = compile_logs_;
    if (generated) {
      story->generated.stacks = compiled_.generated_marks;
      story->generated.mapped = compiled_.mapped_marks;
      story->generated.traced_calls = compiled_.generated_calls;
      story->generated.mapped_calls = compiled_.mapped_calls;
      story->generated.missing_modules = compiled_.missing_modules.size();
      story->generated.substituted_modules = compiled_.substituted.size();
      story->generated.lineless_modules = compiled_.lineless_modules.size();
      story->generated.provenance = compiled_.provenance;
      if (compiled_code_) story->generated.read_from = compiled_code_->sources;
      story->generated.run_from = compiled_.generated_dirs;
    }
    story_ = std::move(story);
  }
  if (story_ && (options.measured || !profile_.memory_uses.empty())) {
    auto story = std::make_shared<StepStory>(*story_);
    story->measured = options.measured;
    if (options.measured && options.measured->input_line > 0 && !options.measured->input_path.empty()) {
      auto local = env_.mapper.map(options.measured->input_path);
      story->input_site = PlacedLine{local.value_or(options.measured->input_path), options.measured->input_line, 0, 0};
    }
    story->memory_tracking = !profile_.memory_uses.empty();
    story_ = std::move(story);
  }
  int32_t world_size = 0;
  for (const auto& proc : profile_.info.processes) world_size = std::max(world_size, proc.world_size);
  if (story_ && world_size > 0) {
    auto story = std::make_shared<StepStory>(*story_);
    story->world_size = world_size;
    story_ = std::move(story);
  }
  if (story_ && !story_->script.empty()) {
    auto story = std::make_shared<StepStory>(*story_);
    story->loaders = scriptLoadersOf(story->script, options.named);
    story_ = std::move(story);
  }
}

void ProfileJoin::rankProcessesAsMeasured(const model::StepMeasurement& measured) {
  for (const auto& m : measured.processes) {
    if (m.rank < 0 || m.pid == 0) continue;
    auto it = std::find_if(profile_.info.processes.begin(), profile_.info.processes.end(),
                           [&](const model::ProcessInfo& p) { return p.pid == m.pid; });
    if (it == profile_.info.processes.end()) {
      profile_.info.processes.push_back({});
      it = std::prev(profile_.info.processes.end());
      it->pid = m.pid;
    }
    if (it->rank >= 0) continue;  // the profile's own record stands
    it->rank = m.rank;
    it->rank_source = "steps file";
    if (it->host.empty()) it->host = m.host;
  }
}

std::vector<attribution::NvtxSite> ProfileJoin::mappedNvtxSites(const std::vector<SourceInput>& named) const {
  std::vector<attribution::NvtxSite> out;
  if (!env_.read_source) return out;
  std::set<std::string> seen;
  for (const auto& input : named) seen.insert(env_.normalize(input.path));
  std::set<model::StringId> files;
  for (const auto& f : profile_.frames) files.insert(f.file);
  size_t read = 0;
  for (model::StringId file : files) {
    if (file == 0 || read == kMaxMappedScripts) break;
    auto local = localPathOf(file);
    if (!local || !seen.insert(env_.normalize(*local)).second) continue;
    auto text = env_.read_source(*local);
    ++read;
    // Only a file that opens ranges is parsed (findNvtxSites's calls all name one of these).
    if (!text || (text->find("nvtx") == std::string::npos && text->find("record_function") == std::string::npos))
      continue;
    source::SourceFile parsed(std::move(*text), false);
    auto index = source::buildSourceIndex(parsed);
    auto sites = attribution::findNvtxSites(parsed, index, file);
    out.insert(out.end(), sites.begin(), sites.end());
  }
  return out;
}

ScriptLoaders ProfileJoin::scriptLoadersOf(const std::string& script, const std::vector<SourceInput>& named) const {
  // A file the user named is taken as parsed; else the profile path it was placed from, read
  // through the environment (only a mapped local file: never a path the profile names alone).
  std::string key = env_.normalize(script);
  for (const auto& input : named)
    if (input.file && input.index && env_.normalize(input.path) == key)
      return scriptLoaders(input.file->text(), *input.index);
  if (!env_.read_source) return {};
  for (const auto& [file, lines] : attr_.files) {
    auto local = localPathOf(file);
    if (!local || env_.normalize(*local) != key) continue;
    auto text = env_.read_source(*local);
    if (!text) return {};
    source::SourceFile parsed(std::move(*text), false);
    auto index = source::buildSourceIndex(parsed);
    return scriptLoaders(parsed.text(), index);
  }
  return {};
}

attribution::Attribution ProfileJoin::attributeOnce(const AttributionStore& store, attribution::Options& options) {
  auto inputs = store.load ? attribution::attributionInputs(profile_, options) : std::nullopt;
  if (!inputs) return attribution::attribute(profile_, options);
  std::string key = store.profile_key + '\n' + *inputs;
  if (auto bytes = store.load(key)) {
    std::string why;
    if (auto kept = attribution::decodeAttribution(*bytes, key, profile_, options.call_sites, why)) {
      attribution_reused_ = true;
      return std::move(*kept);
    }
  }
  // The call-site tables it asks for, recorded so that a reuse can ask again.
  std::map<std::string, uint64_t, std::less<>> answers;
  auto call_sites = options.call_sites;
  options.call_sites = [&](std::string_view path) -> const attribution::CallSiteTable* {
    const attribution::CallSiteTable* table = call_sites ? call_sites(path) : nullptr;
    if (answers.find(path) == answers.end()) answers.emplace(std::string(path), attribution::callSitesDigest(table));
    return table;
  };
  auto began = std::chrono::steady_clock::now();
  auto out = attribution::attribute(profile_, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  options.call_sites = call_sites;
  if (store.store && seconds >= store.keep_from_s)
    store.store(key, attribution::encodeAttribution(out, key, {answers.begin(), answers.end()}), seconds);
  return out;
}

std::function<bool(const std::string&)> ProfileJoin::mapsOnto(const std::string& local_path) const {
  attribution::PathMapper mapper = env_.mapper;
  if (std::find(mapper.candidates.begin(), mapper.candidates.end(), local_path) == mapper.candidates.end())
    mapper.candidates.push_back(local_path);
  return [mapper = std::move(mapper), here = env_.normalize(local_path),
          normalize = env_.normalize](const std::string& profile_path) {
    auto mapped = mapper.map(profile_path);
    return mapped && normalize(*mapped) == here;
  };
}

void ProfileJoin::setTiming(const ProfileJoin& timing, const std::string& name) {
  if (story_ && timing.story()) story_ = timedStory(*story_, *timing.story(), name);
}

std::optional<std::string> ProfileJoin::localPathOf(model::StringId profile_file) const {
  return env_.mapper.map(profile_.strings[profile_file]);
}

FileCosts ProfileJoin::measuredCosts(const std::string& local_path) const {
  auto place = [this](model::StringId file) { return placeOf(file); };
  auto mapsHere = mapsOnto(local_path);
  FileCosts out = fileCosts(profile_, attr_, mapsHere, place);
  out.story = story_;
  out.memory = memory_.story;
  if (memory_.oom_line > 0 && mapsHere(profile_.strings[memory_.oom_file])) out.oom_line = memory_.oom_line;
  for (const auto& f : compiles_)
    if (mapsHere(f.function.file)) out.compiled_functions.push_back(f);
  return out;
}

std::string ProfileJoin::placeOf(model::StringId file) const {
  auto local = localPathOf(file);
  return local ? *local : profile_.strings[file];
}

std::vector<FunctionAnchor> ProfileJoin::anchors(const std::string& local_path) const {
  auto mapsHere = mapsOnto(local_path);
  std::vector<FunctionAnchor> out;
  for (const auto& [file, list] : anchors_)
    if (mapsHere(profile_.strings[file])) out.insert(out.end(), list.begin(), list.end());
  return out;
}

FileJoin joinFile(const ProfileJoin& main, const ProfileJoin* compare, const std::string& local_path,
                  const source::SourceFile& file, const source::SourceIndex& index,
                  const source::LineTracker* tracker) {
  FileJoin out;
  out.measured = main.measuredCosts(local_path);
  out.anchors = main.anchors(local_path);
  // The file as loaded (not yet edited in the editor): where its lines moved as a block since it
  // was profiled, the profile's lines follow them; no cost stays on a line without code.
  if (!tracker || tracker->unchanged()) {
    auto shift = findSourceShift(file, index, out.anchors, main.profile(), out.measured.lines);
    if (shift.found()) {
      int32_t last = 0;
      for (const auto& [line, cost] : out.measured.lines) last = std::max(last, line);
      for (const auto& a : out.anchors) last = std::max(last, a.line);
      source::LineTracker moved(static_cast<uint32_t>(last) + 1);
      moved.shift(shift.delta);
      out.measured = remapCosts(out.measured, moved);
      out.measured.stale_lines.clear();
      out.measured.realigned_by = shift.delta;
      for (auto& a : out.anchors) a.line += shift.delta;
    }
    for (auto it = out.measured.lines.begin(); it != out.measured.lines.end();) {
      if (!isCodeLine(file, it->first) && file.lines().lineCount() > 0) {
        ++out.measured.off_code_lines;
        it = out.measured.lines.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!compare) return out;
  out.has_compare = true;
  out.compare = compare->measuredCosts(local_path);
  if (out.compare.lines.empty()) return out;
  auto before = compare->anchors(local_path);
  // Measured on another version of the script: its lines are matched by the work they ran.
  if (matchSource(file, index, before, compare->profile(), tracker).differs()) {
    auto alignment = alignProfiledLines(out.compare.lines, compare->profile(), before, out.measured.lines,
                                        main.profile(), out.anchors);
    out.compare = moveLines(out.compare, alignment);
    out.compare_alignment = describe(alignment);
  }
  return out;
}

FileCosts currentCosts(const FileJoin& joined, const source::LineTracker& tracker, const std::string& compare_name,
                       const std::string& compare_note) {
  FileCosts out = remapCosts(joined.measured, tracker);
  if (joined.has_compare) {
    out.compare = std::make_shared<const FileCosts>(remapCosts(joined.compare, tracker));
    out.compare_name = compare_name;
    out.compare_note = compare_note;
  }
  return out;
}

}  // namespace sightline::join
