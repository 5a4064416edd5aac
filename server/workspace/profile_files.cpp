// `.nsys-rep` reports exported once per report (cached by path, size and modification time).
#include "server/workspace/profile_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "analysis/ingest/model_cache.h"
#include "analysis/ingest/nsys_reader.h"
#include "server/platform/child_process.h"

namespace sightline::server {
namespace fs = std::filesystem;

namespace {

// Why `folder` cannot be this user's private cache, or "" when it can: made now (0700; its
// parents as `mkdir -p` makes them), or found as a real folder (not a link) of this user's that
// others cannot enter and its owner can write. A folder found otherwise is refused and left as it
// is: a link may lead to a shared folder (its mode and setgid bit are not ours to reset), and a
// mode the user chose stays. A cache others can write to could hand us any file as an export.
std::string privateFolderProblem(std::string folder) {
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();  // "x/" would follow a link x
  std::error_code ec;
  if (fs::path parent = fs::path(folder).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
  if (::mkdir(folder.c_str(), 0700) == 0) {
    // Ours: a umask that took the owner's bits away is undone, on the folder itself (O_NOFOLLOW).
    int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      ::fchmod(fd, 0700);
      ::close(fd);
    }
  } else if (errno != EEXIST) {
    return "the cache folder " + folder + " cannot be made (" + std::strerror(errno) + ")";
  }
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0)
    return "the cache folder " + folder + " cannot be read (" + std::strerror(errno) + ")";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (S_ISLNK(st.st_mode)) return "the cache folder " + folder + " is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "the cache folder " + folder + " is not a folder";
  if (st.st_uid != ::geteuid()) return "the cache folder " + folder + " belongs to another user";
  if ((st.st_mode & 077) != 0) return "the cache folder " + folder + " is open to others (mode " + mode + ")";
  if ((st.st_mode & 0700) != 0700)
    return "the cache folder " + folder + " is not writable by its owner (mode " + mode + ")";
  return "";
}

// What a refused cache folder costs, after privateFolderProblem's reason.
constexpr const char* kNotUsed =
    ": not used, and left as it is (make it a folder of your own with mode 0700, or "
    "point XDG_CACHE_HOME elsewhere)";

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool onPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p(path);
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find(':', i);
    if (j == std::string::npos) j = p.size();
    std::error_code ec;
    if (j > i && fs::exists(fs::path(p.substr(i, j - i)) / program, ec)) return true;
    i = j + 1;
  }
  return false;
}

// A file as it is now: its absolute path, size and modification time (what the caches key on).
std::string fileStamp(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  return fs::absolute(path, ec).string() + "|" + std::to_string(size) + "|" + std::to_string(mtime);
}

// The caches' folder: OpenProfileOptions::cache_dir, else the user's.
std::string cacheDirOf(const OpenProfileOptions& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/sightline";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/sightline";
  // No home: a folder of this user's own, never a shared name others could plant files in.
  return (fs::temp_directory_path() / ("sightline-" + std::to_string(::getuid()))).string();
}

}  // namespace

std::string privateCacheFolder(const std::string& name, std::string& error, const OpenProfileOptions& options) {
  std::string cache = cacheDirOf(options);
  for (const std::string& folder : {cache, cache + "/" + name})
    if (std::string problem = privateFolderProblem(folder); !problem.empty()) {
      error = problem;
      return "";
    }
  return cache + "/" + name;
}

namespace {

// One export of a report at a time (a reload while it runs waits for it, then reads its result).
std::shared_ptr<std::mutex> exportLock(const std::string& out) {
  static std::mutex locks_mutex;
  static std::map<std::string, std::weak_ptr<std::mutex>> locks;
  std::lock_guard<std::mutex> lock(locks_mutex);
  auto& slot = locks[out];
  auto held = slot.lock();
  if (!held) slot = held = std::make_shared<std::mutex>();
  return held;
}

// The export, or why not: `nsys export` into a private temporary name, validated as an export
// before it is kept under `out`.
std::string exportReport(const std::string& path, const std::string& out, const OpenProfileOptions& options) {
  static std::atomic<uint64_t> serial{0};
  // Both removed when this returns, and by a signal or exit that comes first (child_process.h).
  TemporaryPath tmp(out + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++));
  TemporaryPath log(tmp.path() + ".log");
  ChildLimits limits;
  limits.timeout_s = options.export_timeout_s;
  limits.cancelled = options.cancelled;
  auto result = runChild(
      {"nsys", "export", "--type", "sqlite", "--include-blobs=true", "--force-overwrite=true", "-o", tmp.path(), path},
      log.path(), limits);
  std::error_code ec;
  std::string why;
  if (!result.error.empty()) {
    why = "`nsys export` failed (" + result.error + ")";
  } else if (!ingest::isNsysExport(tmp.path(), why)) {
    why = "`nsys export` wrote no readable export (" + why + ")";
  } else {
    fs::permissions(tmp.path(), fs::perms::owner_read | fs::perms::owner_write, ec);
    fs::rename(tmp.path(), out, ec);
    if (ec) why = "cannot store the export in " + fs::path(out).parent_path().string() + ": " + ec.message();
  }
  return why;
}

// What makes a cached model valid: the profile file as it is now and the binary that read it
// (a rebuilt or upgraded Sightline may read profiles differently).
std::string modelKey(const std::string& path) {
  std::error_code ec;
  return "sightline " SIGHTLINE_VERSION "|" + fileStamp(path) + "|" + fileStamp(fs::read_symlink("/proc/self/exe", ec));
}

// A reopen cache entry's file: "model-<hash of key>.bin", "attr-...".
std::string entryFile(const std::string& cache, const char* kind, const std::string& key) {
  char name[48];
  std::snprintf(name, sizeof name, "%s-%016zx.bin", kind, std::hash<std::string>{}(key));
  return cache + "/" + name;
}

// The cache's model and attribution files beyond `limit` bytes in all, least recently used
// first, removed.
void pruneModels(const std::string& cache, uint64_t limit) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(cache, ec)) {
    std::string name = entry.path().filename().string();
    bool kept = name.rfind("model-", 0) == 0 || name.rfind("attr-", 0) == 0;
    if (!kept || name.find(".tmp.") != std::string::npos || !entry.is_regular_file(ec)) continue;
    total += entry.file_size(ec);
    files.emplace_back(entry.last_write_time(ec), entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [when, file] : files) {
    if (total <= limit) break;
    uint64_t size = fs::file_size(file, ec);
    if (fs::remove(file, ec)) total -= std::min(total, size);
  }
}

// Writes `bytes` (through `write`) under a private temporary name, then renames it into place.
bool storePrivately(const std::string& file, const std::function<bool(std::FILE*)>& write) {
  TemporaryPath tmp(file + ".tmp." + std::to_string(::getpid()));  // gone if the process is ended first
  std::FILE* out = std::fopen(tmp.path().c_str(), "wb");
  if (!out) return false;
  ::fchmod(::fileno(out), 0600);
  bool written = write(out);
  written = std::fclose(out) == 0 && written;
  std::error_code ec;
  if (written) fs::rename(tmp.path(), file, ec);
  return written && !ec;
}

// Writes the model under a private temporary name, then renames it into place.
void storeModel(const ingest::ModelCacheImage& image, const std::string& file) {
  storePrivately(file, [&](std::FILE* out) {
    return image.write(
        [out](std::string_view bytes) { return std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size(); });
  });
}

// The reopen cache's entry `file` read back, when it holds the model stored under `key`; a
// foreign, stale or damaged entry is removed (made again).
std::optional<ingest::LoadResult> readEntry(const std::string& file, const std::string& key,
                                            const ingest::LoadOptions& load) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::string why;
  if (auto cached = ingest::readModelCache(file, key, why)) {
    fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used: pruned last
    if (load.names_read) load.names_read(cached->strings);
    if (load.progress) load.progress("read from the reopen cache", 60);
    return ingest::LoadResult{std::move(cached), ""};
  }
  fs::remove(file, ec);  // another profile's key, another build's, or damaged: made again
  return std::nullopt;
}

// `profile` stored as the entry `file` under `key`: beside the caller's join where it lends a
// thread (OpenProfileOptions::store_beside), else now.
void keepEntry(const model::Profile& profile, const std::string& key, const std::string& file, const std::string& cache,
               const OpenProfileOptions& options) {
  if (options.store_beside) {
    options.store_beside->start([image = std::make_shared<ingest::ModelCacheImage>(profile, key), file, cache,
                                 limit = options.model_cache_limit] {
      storeModel(*image, file);
      pruneModels(cache, limit);
    });
  } else {
    storeModel(ingest::ModelCacheImage(profile, key), file);
    pruneModels(cache, options.model_cache_limit);
  }
}

double secondsSince(std::chrono::steady_clock::time_point began) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
}

// `path` read through the reopen cache (OpenProfileOptions::model_cache).
ingest::LoadResult loadCached(const std::string& path, const ingest::LoadOptions& load,
                              const OpenProfileOptions& options) {
  std::string cache = cacheDirOf(options);
  if (!options.model_cache) return ingest::loadProfile(path, load);
  if (std::string problem = privateFolderProblem(cache); !problem.empty()) {
    auto loaded = ingest::loadProfile(path, load);
    if (loaded.profile) loaded.profile->info.warnings.push_back(problem + kNotUsed + "; read without the reopen cache");
    return loaded;
  }
  std::string key = modelKey(path);
  std::string file = entryFile(cache, "model", key);
  if (auto cached = readEntry(file, key, load)) return std::move(*cached);
  auto began = std::chrono::steady_clock::now();
  auto loaded = ingest::loadProfile(path, load);
  if (loaded.profile && secondsSince(began) >= options.model_cache_min_s && modelKey(path) == key)
    keepEntry(*loaded.profile, key, file, cache, options);
  return loaded;
}

}  // namespace

ingest::LoadResult openProfile(const std::string& path, const OpenProfileOptions& options) {
  ingest::LoadOptions load;
  load.progress = options.progress;
  load.names_read = options.names_read;
  std::error_code ec;
  if (!endsWith(path, ".nsys-rep") || !fs::exists(path, ec)) return loadCached(path, load, options);
  if (!onPath("nsys"))
    return {std::nullopt, path +
                              ": reading .nsys-rep needs `nsys` on PATH; or export it yourself with\n  nsys export "
                              "--type sqlite --include-blobs=true -o run.sqlite " +
                              path};
  std::string cache = cacheDirOf(options);
  std::string problem = privateFolderProblem(cache);
  // Without the cache, the export goes to a private temporary folder, removed after the read.
  std::optional<TemporaryPath> scratch;
  if (!problem.empty()) {
    std::string folder = (fs::temp_directory_path(ec) / "sightline-export-XXXXXX").string();
    if (ec || !::mkdtemp(folder.data()))
      return {std::nullopt,
              path + ": " + problem + kNotUsed + "; and no temporary folder could be made for the export"};
    scratch.emplace(folder);
  }
  std::string key = std::to_string(std::hash<std::string>{}(fileStamp(path)));
  std::string out = (scratch ? scratch->path() : cache) + "/" + fs::path(path).stem().string() + "-" + key + ".sqlite";
  auto lock = exportLock(out);
  std::lock_guard<std::mutex> exporting(*lock);
  // A cached export is read only when it still is one (an earlier one may have been cut or
  // replaced): else it is made again.
  std::string why;
  if (fs::exists(out, ec) && !ingest::isNsysExport(out, why)) fs::remove(out, ec);
  if (!fs::exists(out, ec)) {
    if (options.progress)
      options.progress(scratch ? "exporting with nsys export" : "exporting with nsys export (once; cached)", 2);
    if (std::string failed = exportReport(path, out, options); !failed.empty())
      return {std::nullopt, path + ": " + failed};
  }
  if (!scratch) return loadCached(out, load, options);
  auto loaded = ingest::loadProfile(out, load);
  if (loaded.profile)
    loaded.profile->info.warnings.push_back(problem + kNotUsed +
                                            "; the export was made in a temporary folder and removed after reading");
  return loaded;
}

ingest::LoadResult openProfiles(const std::vector<std::string>& paths, const OpenProfileOptions& options) {
  if (paths.size() == 1) return openProfile(paths.front(), options);
  // One report named twice would be two ranks paired with themselves (one stat per path: a job
  // may name a thousand reports).
  std::map<std::pair<dev_t, ino_t>, size_t> seen;
  for (size_t j = 0; j < paths.size(); ++j) {
    struct stat st {};
    if (::stat(paths[j].c_str(), &st) != 0) continue;  // its open says why
    auto [it, added] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), j);
    if (!added)
      return {std::nullopt, paths[j] + ": the same report as " + paths[it->second] + " (name each rank's report once)"};
  }
  // The job's merged model is the reopen cache's entry, not its parts: stored beside the join
  // like one report's, and read back without a merge.
  std::string cache = cacheDirOf(options);
  bool cached = options.model_cache && privateFolderProblem(cache).empty();
  auto jobKey = [&] {
    std::string key = "job\n";
    for (const auto& path : paths) key += modelKey(path) + "\n";
    return key;
  };
  std::string key = cached ? jobKey() : "";
  std::string file = cached ? entryFile(cache, "model", key) : "";
  ingest::LoadOptions load;
  load.progress = options.progress;
  load.names_read = options.names_read;
  if (cached)
    if (auto hit = readEntry(file, key, load)) return std::move(*hit);
  OpenProfileOptions each = options;
  each.store_beside = nullptr;
  each.model_cache_min_s = std::numeric_limits<double>::infinity();  // a part's own entry is read, never written
  // The parts at once, one per core: a reader fills both cores only while SQLite reads, and one
  // read from the reopen cache, or a trace's serial end, leaves the other core free.
  std::vector<ingest::LoadResult> results(paths.size());
  std::vector<double> seconds(paths.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      auto began = std::chrono::steady_clock::now();
      results[i] = openProfile(paths[i], each);
      seconds[i] = secondsSince(began);
    }
  };
  size_t workers = std::min<size_t>(paths.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::jthread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  std::vector<model::Profile> parts;
  std::vector<std::string> names;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!results[i].profile) return std::move(results[i]);
    parts.push_back(std::move(*results[i].profile));
    names.push_back(std::filesystem::path(paths[i]).filename().string());
  }
  ingest::LoadResult merged;
  merged.profile = model::mergeProfiles(std::move(parts), names);
  // Kept when the reports took `model_cache_min_s` to read, one after another: a job of two
  // reports of 0.6 s each, read at once, is reopened from the cache.
  double read_s = std::accumulate(seconds.begin(), seconds.end(), 0.0);
  if (cached && read_s >= options.model_cache_min_s && jobKey() == key)
    keepEntry(*merged.profile, key, file, cache, options);
  return merged;
}

join::AttributionStore attributionStore(const std::vector<std::string>& paths, const OpenProfileOptions& options) {
  join::AttributionStore store;
  if (!options.model_cache || paths.empty()) return store;
  for (const auto& path : paths) store.profile_key += modelKey(path) + "\n";
  std::string cache = cacheDirOf(options);
  auto fileOf = [cache](const std::string& key) { return entryFile(cache, "attr", key); };
  uint64_t limit = options.model_cache_limit;
  store.load = [fileOf, cache, limit](const std::string& key) -> std::optional<std::string> {
    std::error_code ec;
    std::string file = fileOf(key);
    if (!privateFolderProblem(cache).empty() || !fs::is_regular_file(file, ec)) return std::nullopt;
    uint64_t size = fs::file_size(file, ec);
    std::FILE* in = ec || size > limit ? nullptr : std::fopen(file.c_str(), "rb");
    if (!in) return std::nullopt;
    std::string bytes(size, '\0');
    bool read = std::fread(bytes.data(), 1, bytes.size(), in) == bytes.size();
    std::fclose(in);
    if (!read) return std::nullopt;
    fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used: pruned last
    return bytes;
  };
  double min_s = options.model_cache_min_s;
  store.keep_from_s = min_s / 10;
  store.store = [fileOf, cache, limit](const std::string& key, const std::string& bytes, double) {
    if (!privateFolderProblem(cache).empty()) return;
    storePrivately(fileOf(key),
                   [&](std::FILE* out) { return std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size(); });
    pruneModels(cache, limit);
  };
  return store;
}

namespace {
std::string digitsMasked(const std::string& name) {
  std::string out;
  for (char c : name) {
    bool digit = c >= '0' && c <= '9';
    if (!digit || out.empty() || out.back() != '#') out += digit ? '#' : c;
  }
  return out;
}
}  // namespace

std::vector<std::string> sameRun(const std::string& first, const std::vector<std::string>& candidates,
                                 bool named_rank) {
  namespace fs = std::filesystem;
  fs::path p(first);
  std::string name = p.filename().string();
  std::string mask = digitsMasked(name);
  if (mask == name) return {first};
  if (named_rank) {
    std::string lower;
    for (char c : mask) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("rank#") == std::string::npos && lower.find("rank_#") == std::string::npos) return {first};
  }
  std::vector<std::string> out;
  for (const auto& c : candidates) {
    fs::path q(c);
    if (q.parent_path() == p.parent_path() && digitsMasked(q.filename().string()) == mask) out.push_back(c);
  }
  if (std::find(out.begin(), out.end(), first) == out.end()) out.push_back(first);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sightline::server
