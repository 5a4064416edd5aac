// `.nsys-rep` reports exported once per report (cached by path, size and modification time).
#include "server/profile_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "analysis/ingest/model_cache.h"
#include "analysis/ingest/nsys_reader.h"
#include "server/child_process.h"

namespace sightline::server {
namespace fs = std::filesystem;

namespace {

// `folder` made (0700) or found as this user's own and private, not a link: a cache others can
// write to could hand us any file as an export. "" when it is; else why not.
std::string privateFolder(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  ::chmod(folder.c_str(), 0700);  // ours or not, asked; checked below
  struct stat st {};
  if (::lstat(folder.c_str(), &st) != 0) return "cannot make the export cache " + folder;
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return "the export cache " + folder + " is not a private folder of this user (a link, another user's, or open " +
           "to others): not used";
  return "";
}

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
void storeModel(const model::Profile& profile, const std::string& key, const std::string& file) {
  storePrivately(file, [&](std::FILE* out) {
    return ingest::encodeModelCache(profile, key, [out](std::string_view bytes) {
      return std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
    });
  });
}

// `path` read through the reopen cache (OpenProfileOptions::model_cache).
ingest::LoadResult loadCached(const std::string& path, const ingest::LoadOptions& load,
                              const OpenProfileOptions& options) {
  std::string cache = cacheDirOf(options);
  if (!options.model_cache || !privateFolder(cache).empty()) return ingest::loadProfile(path, load);
  std::string key = modelKey(path);
  std::string file = entryFile(cache, "model", key);
  std::error_code ec;
  if (fs::exists(file, ec)) {
    std::string why;
    if (auto cached = ingest::readModelCache(file, key, why)) {
      fs::last_write_time(file, fs::file_time_type::clock::now(), ec);  // recently used: pruned last
      if (load.names_read) load.names_read(cached->strings);
      if (load.progress) load.progress("read from the reopen cache", 60);
      return {std::move(cached), ""};
    }
    fs::remove(file, ec);  // another profile's key, another build's, or damaged: made again
  }
  auto began = std::chrono::steady_clock::now();
  auto loaded = ingest::loadProfile(path, load);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (loaded.profile && seconds >= options.model_cache_min_s && modelKey(path) == key) {
    storeModel(*loaded.profile, key, file);
    pruneModels(cache, options.model_cache_limit);
  }
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
  if (std::string why = privateFolder(cache); !why.empty()) return {std::nullopt, path + ": " + why};
  std::string key = std::to_string(std::hash<std::string>{}(fileStamp(path)));
  std::string out = cache + "/" + fs::path(path).stem().string() + "-" + key + ".sqlite";
  auto lock = exportLock(out);
  std::lock_guard<std::mutex> exporting(*lock);
  // A cached export is read only when it still is one (an earlier one may have been cut or
  // replaced): else it is made again.
  std::string why;
  if (fs::exists(out, ec) && !ingest::isNsysExport(out, why)) fs::remove(out, ec);
  if (!fs::exists(out, ec)) {
    if (options.progress) options.progress("exporting with nsys export (once; cached)", 2);
    if (std::string failed = exportReport(path, out, options); !failed.empty())
      return {std::nullopt, path + ": " + failed};
  }
  return loadCached(out, load, options);
}

ingest::LoadResult openProfiles(const std::vector<std::string>& paths, const OpenProfileOptions& options) {
  if (paths.size() == 1) return openProfile(paths.front(), options);
  std::vector<model::Profile> parts;
  std::vector<std::string> names;
  for (const auto& path : paths) {
    auto result = openProfile(path, options);
    if (!result.profile) return result;
    parts.push_back(std::move(*result.profile));
    names.push_back(std::filesystem::path(path).filename().string());
  }
  ingest::LoadResult merged;
  merged.profile = model::mergeProfiles(std::move(parts), names);
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
    if (!privateFolder(cache).empty() || !fs::is_regular_file(file, ec)) return std::nullopt;
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
  store.store = [fileOf, cache, limit, min_s](const std::string& key, const std::string& bytes, double seconds) {
    if (seconds < min_s / 4 || !privateFolder(cache).empty()) return;
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
