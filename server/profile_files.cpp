// `.nsys-rep` reports exported once per report (cached by path, size and modification time).
#include "server/profile_files.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

namespace sightline::server {
namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
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

std::string defaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/sightline";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/sightline";
  return (fs::temp_directory_path() / "sightline").string();
}

}  // namespace

ingest::LoadResult openProfile(const std::string& path, const OpenProfileOptions& options) {
  ingest::LoadOptions load;
  load.progress = options.progress;
  load.names_read = options.names_read;
  std::error_code ec;
  if (!endsWith(path, ".nsys-rep") || !fs::exists(path, ec)) return ingest::loadProfile(path, load);
  if (!onPath("nsys"))
    return {std::nullopt, path +
                              ": reading .nsys-rep needs `nsys` on PATH; or export it yourself with\n  nsys export "
                              "--type sqlite --include-blobs=true -o run.sqlite " +
                              path};
  std::string cache = options.cache_dir.empty() ? defaultCacheDir() : options.cache_dir;
  fs::create_directories(cache, ec);
  auto size = fs::file_size(path, ec);
  auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  std::string key = std::to_string(std::hash<std::string>{}(fs::absolute(path, ec).string() + "|" +
                                                            std::to_string(size) + "|" + std::to_string(mtime)));
  std::string out = cache + "/" + fs::path(path).stem().string() + "-" + key + ".sqlite";
  if (!fs::exists(out, ec)) {
    if (options.progress) options.progress("exporting with nsys export (once; cached)", 2);
    std::string tmp = out + ".tmp";
    std::string cmd = "nsys export --type sqlite --include-blobs=true --force-overwrite=true -o " + shellQuote(tmp) +
                      " " + shellQuote(path) + " >/dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0 || !fs::exists(tmp, ec))
      return {std::nullopt, path + ": `nsys export` failed (exit " + std::to_string(WEXITSTATUS(rc)) + ")"};
    fs::rename(tmp, out, ec);
    if (ec) return {std::nullopt, path + ": cannot store the export in " + cache + ": " + ec.message()};
  }
  return ingest::loadProfile(out, load);
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
