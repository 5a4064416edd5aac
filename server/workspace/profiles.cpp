// Profile discovery, background loading and status.
#include "server/workspace/profiles.h"
#include "server/platform/allocator.h"

#include "server/render/profile_text.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "analysis/features/job_view.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/story_report.h"
#include "analysis/features/units.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/rank_summary.h"
#include "server/render/markdown.h"
#include "server/render/story_render.h"
#include "server/workspace/profile_files.h"
#include "server/workspace/steps_file.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isProfileName(const std::string& name) {
  // Memory snapshots by the names people give them (any `.pickle` could be data of another kind:
  // those load when named in the `profiles` setting).
  bool snapshot = ingest::isMemorySnapshotName(name) &&
                  (name.find("snapshot") != std::string::npos || name.find("memory") != std::string::npos ||
                   name.find("oom") != std::string::npos);
  return snapshot || endsWith(name, ".nsys-rep") || endsWith(name, ".sqlite") || endsWith(name, ".pt.trace.json") ||
         endsWith(name, ".pt.trace.json.gz");
}

// A file someone else put in a folder anyone may write to (/tmp and the like): never loaded on
// its own.
bool plantedByOthers(const fs::path& file) {
  struct stat st {
  }, dir{};
  if (::lstat(file.c_str(), &st) != 0 || st.st_uid == ::geteuid()) return false;
  return ::stat(file.parent_path().c_str(), &dir) != 0 || (dir.st_mode & S_IWOTH) != 0;
}

// Regular files under root, depth <= 4, skipping hidden folders, node_modules and build*,
// links (they may lead anywhere) and files others planted in world-writable folders.
template <class Visit>
void walk(const std::string& root, Visit&& visit) {
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const auto& entry = *it;
    std::string name = entry.path().filename().string();
    if (entry.is_directory(ec)) {
      if (it.depth() >= 3 || name.starts_with(".") || name == "node_modules" || name.starts_with("build"))
        it.disable_recursion_pending();
      continue;
    }
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec)) continue;
    if (!plantedByOthers(entry.path())) visit(entry.path());
  }
}

std::vector<std::string> newestFirst(std::vector<std::string> files) {
  std::vector<std::pair<int64_t, std::string>> dated;
  for (auto& f : files) dated.emplace_back(fileMtimeNs(f), std::move(f));
  std::sort(dated.begin(), dated.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<std::string> out;
  for (auto& [t, f] : dated) out.push_back(std::move(f));
  return out;
}

std::string ms(int64_t ns) { return features::formatMilliseconds(static_cast<double>(ns)); }

protocol::ProfileStatusParams::Memory memoryStatus(const join::MemoryStory& m) {
  protocol::ProfileStatusParams::Memory out;
  out.peakAllocatedBytes = m.peak_allocated_bytes;
  out.peakReservedBytes = m.peak_reserved_bytes;
  out.peakWhen = features::memoryPeakWhen(m);
  out.summary = m.allocated_known ? "peak " + features::formatBytes(m.peak_allocated_bytes)
                                  : "reserved " + features::formatBytes(m.peak_reserved_bytes);
  if (m.oom && !m.oom->where.path.empty()) {
    out.oomPath = m.oom->where.path;
    out.oomLine = m.oom->where.line;
    out.oomRequestedBytes = m.oom->requested_bytes;
    out.oomFreeBytes = m.oom->free_bytes;
    out.summary += " · out of memory at " + fs::path(m.oom->where.path).filename().string() + ":" +
                   std::to_string(m.oom->where.line);
  } else if (m.oom) {
    out.summary += " · out of memory";
  }
  return out;
}

}  // namespace

int64_t fileMtimeNs(const std::string& path) {
  std::error_code ec;
  auto t = fs::last_write_time(path, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::vector<std::string> discoverProfiles(const std::string& root) {
  std::vector<std::string> found;
  // A workspace of `/` is no workspace: its walk would reach every user's /tmp.
  if (root.empty() || fs::path(root).lexically_normal() == fs::path(root).root_path()) return found;
  walk(root, [&](const fs::path& p) {
    if (isProfileName(p.filename().string())) found.push_back(p.string());
  });
  return newestFirst(std::move(found));
}

std::vector<std::string> expandProfileSetting(const std::string& root, const std::string& entry) {
  fs::path pattern(entry);
  if (pattern.is_relative() && !root.empty()) pattern = fs::path(root) / pattern;
  std::string p = pattern.lexically_normal().string();
  if (p.find_first_of("*?[") == std::string::npos) return {p};
  // What a glob matches beside the profiles is left alone: sightline capture's steps file (read
  // with its profile), logs and scripts ("runs/*" once loaded run.steps.json as a trace).
  auto loadable = [](const std::string& name) {
    if (isProfileName(name)) return true;
    if (endsWith(name, ".steps.json")) return false;
    return endsWith(name, ".json") || endsWith(name, ".json.gz") || ingest::isMemorySnapshotName(name);
  };
  std::vector<std::string> found;
  walk(root.empty() ? "." : root, [&](const fs::path& file) {
    if (fnmatch(p.c_str(), file.lexically_normal().string().c_str(), 0) == 0 && loadable(file.filename().string()))
      found.push_back(file.string());
  });
  return newestFirst(std::move(found));
}

std::string jobStatus(const features::JobView& job) {
  std::string out = std::to_string(job.ranks.size()) + " ranks";
  if (job.hosts.size() > 1) out += " on " + std::to_string(job.hosts.size()) + " hosts";
  if (job.straggler >= 0) out += " · straggler " + job.ranks[static_cast<size_t>(job.straggler)].label;
  return out;
}

namespace {

// The status line and its tooltip from the status's own figures, each formatted once here.
void statusLine(protocol::ProfileStatusParams& s) {
  bool per_step = s.steps > 0;
  std::string time = features::formatMilliseconds(static_cast<double>(per_step ? s.gpuNsPerStep : s.totalGpuNs)) +
                     (per_step ? " ms/step" : " ms");
  std::string attributed = features::formatShare(s.attributedShare);
  // A memory snapshot has no time: its memory summary stands in the time's place.
  bool memory_only = s.format == "memory-snapshot" && s.memory;
  s.text = fs::path(s.file).filename().string() + " · " + (memory_only ? s.memory->summary : time + " · " + attributed);
  if (s.memory && !memory_only) s.text += " · " + s.memory->summary;
  if (s.verdict) s.text += " · " + *s.verdict;
  if (s.job) s.text += " · " + *s.job;
  s.details.clear();
  if (!memory_only)
    s.details.push_back(
        (per_step ? std::to_string(s.steps) + " steps, " + time + " of GPU time" : time + " of GPU time") + ", " +
        attributed + " attributed to source lines");
  if (s.verdict)
    s.details.push_back("Step " + features::formatMilliseconds(static_cast<double>(s.stepWallNs)) +
                        " ms as captured; " + *s.verdict);
}

}  // namespace

std::optional<features::StepVerdict> loadVerdict(const join::ProfileJoin* join) {
  return join ? features::stepVerdict(join->story().get()) : std::nullopt;
}

void completeLoad(LoadedProfile& loaded) {
  loaded.verdict = loadVerdict(loaded.join.get());
  const auto& info = loaded.profile().info;
  // Every load's: the job view reads them (two ranks or more), compareWith's regression gate too.
  loaded.summaries = join::summarizeRanks(*loaded.join, fs::path(loaded.path).filename().string());
  if (loaded.summaries.size() > 1) loaded.job = features::buildJob(loaded.summaries);
  features::ReportFacts facts;
  facts.profile_path = fs::path(loaded.path).filename().string();
  facts.profile = &loaded.profile();
  facts.attr = &loaded.attr();
  facts.verdict = loaded.verdict ? &*loaded.verdict : nullptr;
  facts.job = loaded.job ? &*loaded.job : nullptr;
  facts.summaries = &loaded.summaries;
  facts.memory = loaded.join->memory().story.get();
  facts.warnings = profileWarnings(loaded.attr(), info);
  facts.no_memory_lines_advice = ingest::captureAdvice(info);
  loaded.story = features::reportStory(facts);
}

protocol::ProfileStatusParams profileStatus(const LoadedProfile* loaded, const std::string& error) {
  protocol::ProfileStatusParams status;
  status.error = error;
  if (!loaded) return status;
  const auto& a = loaded->attr();
  const auto& info = loaded->profile().info;
  status.loaded = true;
  status.file = loaded->path;
  status.format = info.format;
  status.toolVersion = info.tool_version;
  status.gpus = info.gpus;
  status.steps = a.steps;
  status.stepsSource = a.steps_source;
  status.totalGpuNs = a.total_gpu_ns;
  status.gpuNsPerStep = a.steps > 0 ? a.steady_gpu_ns / a.steps : a.steady_gpu_ns;
  status.attributedShare =
      a.steady_gpu_ns > 0 ? static_cast<double>(a.attributed_gpu_ns) / static_cast<double>(a.steady_gpu_ns) : 0;
  if (const auto& v = loaded->verdict) {
    status.verdict = verdictSummary(*v);
    status.stepWallNs = static_cast<int64_t>(v->wall_ns);
    status.gpuBusyShare = v->busy_share;
  }
  if (const auto& m = loaded->join->memory().story) status.memory = memoryStatus(*m);
  status.warnings = profileWarnings(a, info);
  if (loaded->job) status.job = jobStatus(*loaded->job);
  statusLine(status);
  if (a.ranks.size() > 1)
    status.warnings.insert(status.warnings.begin(), std::to_string(a.ranks.size()) + " ranks (" +
                                                        std::to_string(loaded->parts.size()) +
                                                        (loaded->parts.size() == 1 ? " report" : " reports") +
                                                        "): times per step are per GPU, the mean over the ranks");
  return status;
}

std::string profileSummaryMarkdown(const LoadedProfile& loaded) {
  const auto& a = loaded.attr();
  const auto& p = loaded.profile();
  double total = static_cast<double>(std::max<int64_t>(1, a.steady_gpu_ns));
  auto share = [&](int64_t ns) { return features::formatShare(static_cast<double>(ns) / total); };
  // Every string of the profile through md:: (server/render/markdown.h): the summary opens as Markdown.
  std::string md = "# Profile " + md::text(fs::path(loaded.path).filename().string()) + "\n\n";
  for (const auto& part : loaded.parts.empty() ? std::vector<std::string>{loaded.path} : loaded.parts)
    md += "- file: " + md::code(part) + "\n";
  md += "- format: " + md::text(p.info.format + " " + p.info.tool_version) + "\n";
  md += "- on source lines: " + share(a.attributed_gpu_ns) + ", unattributed " + share(a.unattributed_gpu_ns) + "\n";
  // The report's header, in the same rows: the machine, the job, the steps, the verdict, memory, warnings.
  if (const auto& v = loaded.verdict) md += "\n## Step verdict: " + md::text(verdictSummary(*v)) + "\n";
  md += "\n" + storyMarkdown(loaded.story);
  md += "\n## Hottest lines\n\n| file | line | ms | share |\n|---|---:|---:|---:|\n";
  std::vector<std::tuple<int64_t, model::StringId, int32_t>> hot;
  for (const auto& [file, lines] : a.files)
    for (const auto& [line, c] : lines)
      if (c.gpu_ns > 0) hot.emplace_back(c.gpu_ns, file, line);
  std::sort(hot.rbegin(), hot.rend());
  for (size_t i = 0; i < hot.size() && i < 10; ++i) {
    auto [ns, file, line] = hot[i];
    md += "| " + md::text(fs::path(p.strings[file]).filename().string()) + " | " + std::to_string(line) + " | " +
          ms(a.steps > 0 ? ns / a.steps : ns) + " | " + share(ns) + " |\n";
  }
  return md;
}

ProfileLoader::ProfileLoader(boost::asio::io_context& io)
    : channel_(std::make_shared<Channel>()), generation_(std::make_shared<std::atomic<uint64_t>>(0)) {
  channel_->io = &io;
}

ProfileLoader::~ProfileLoader() {
  std::lock_guard<std::mutex> lock(channel_->mutex);
  channel_->io = nullptr;
}

void ProfileLoader::cancel() { ++*generation_; }

void ProfileLoader::load(const std::vector<std::string>& paths, join::JoinEnvironment env, join::JoinOptions options,
                         Stage stage, Done done, CompiledCodeSearch compiled) {
  std::string path = paths.front();
  uint64_t mine = ++*generation_;
  ++running_;
  auto channel = channel_;
  auto generation = generation_;
  auto post = [channel](auto fn) {
    std::lock_guard<std::mutex> lock(channel->mutex);
    if (channel->io) boost::asio::post(*channel->io, std::move(fn));
  };
  std::thread([=, this, env = std::move(env)]() mutable {
    auto loaded = std::make_shared<LoadedProfile>();
    loaded->path = path;
    loaded->parts = paths;
    loaded->file_mtime_ns = fileMtimeNs(path);
    OpenProfileOptions open_options;
    open_options.cancelled = [generation, mine] { return generation->load() != mine; };
    open_options.progress = [&](const std::string& message, int percent) {
      post([=] {
        if (*generation == mine) stage(message, percent);
      });
    };
    compiled.mapper = &env.mapper;
    CompiledCodeReader compiled_code(std::move(compiled));  // reads while the profile loads
    open_options.names_read = compiled_code.namesRead();
    ingest::LoadResult result;
    ModelStoreBeside store;  // after `result`: it waits before the profile's tables go
    open_options.store_beside = &store;
    result = openProfiles(paths, open_options);
    std::string error;
    if (result.profile) {
      std::string rows =
          "attributing " + std::to_string(result.profile->activities.size()) + " GPU activities to source lines";
      post([=] {
        if (*generation == mine) stage(rows, 70);
      });
      // The step without the profiler, where sightline capture measured it beside the profile.
      if (!options.measured) {
        std::string why;
        options.measured = findStepsFile(path, why);
        if (!why.empty()) result.profile->info.warnings.push_back(why + " (left out)");
      }
      options.compiled = compiled_code.finish(*result.profile);
      options.attribution_store = attributionStore(paths, open_options);
      options.before_tables_change = [&store] { store.wait(); };
      for (const auto& input : options.named) loaded->named.push_back(input.path);
      loaded->join = std::make_unique<join::ProfileJoin>(std::move(*result.profile), std::move(env), options);
      store.wait();  // the cache holds the model before anyone is told it loaded
      completeLoad(*loaded);
      releaseFreeMemory();  // what the readers and attribution grew and freed (allocator.h)
    } else {
      error = result.error;
      loaded.reset();
    }
    post([=, this] {
      --running_;
      if (*generation == mine) done(loaded, error);
    });
  }).detach();
}

}  // namespace sightline::server
