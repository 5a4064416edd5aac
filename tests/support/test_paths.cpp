// Test input locations.
#include "tests/support/test_paths.h"

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sightline::testing {

std::string testDataPath(const std::string& relative) { return std::string(SIGHTLINE_TEST_DATA_DIR) + "/" + relative; }
std::string sourcePath(const std::string& relative) { return std::string(SIGHTLINE_SOURCE_DIR) + "/" + relative; }

std::optional<std::string> sharedPath(const std::string& relative) {
  std::filesystem::path p = std::filesystem::path(SIGHTLINE_SOURCE_DIR).parent_path() / "shared" / relative;
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return std::nullopt;
  return p.string();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool runningInCi() {
  const char* ci = std::getenv("CI");
  return ci && *ci && std::string(ci) != "0" && std::string(ci) != "false";
}

std::string binaryPath() {
  // Another build's binary, to see a test fail on the code before a fix.
  const char* other = std::getenv("SIGHTLINE_TEST_BINARY");
  return other && *other ? other : SIGHTLINE_BINARY;
}

CommandOutput runSightline(const std::string& args, const std::string& cwd, int timeout_seconds) {
  std::string limit = timeout_seconds > 0 ? "timeout " + std::to_string(timeout_seconds) + " " : "";
  std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + limit + binaryPath() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  CommandOutput result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) result.out.append(buf, n);
  int status = pclose(p);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

namespace {

// `source` itself, or for "x.sqlite.xz" its decompressed copy in the build tree's cache.
std::string decompressed(const std::string& source, const std::string& cache_name) {
  if (source.size() < 3 || source.compare(source.size() - 3, 3, ".xz") != 0) return source;
  std::filesystem::path cache =
      std::filesystem::path(SIGHTLINE_PROFILE_CACHE) / cache_name.substr(0, cache_name.size() - 3);
  std::error_code ec;
  // Made again when the compressed file is newer (a capture replaced in the repo).
  bool stale = std::filesystem::exists(cache, ec) &&
               std::filesystem::last_write_time(source, ec) > std::filesystem::last_write_time(cache, ec);
  if (!std::filesystem::exists(cache, ec) || stale) {
    std::filesystem::create_directories(cache.parent_path(), ec);
    std::string tmp = cache.string() + ".tmp" + std::to_string(::getpid());
    std::string cmd = "xz -dc '" + source + "' > '" + tmp + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot decompress " + source + " (is xz installed?)");
    std::filesystem::rename(tmp, cache, ec);
  }
  // sightline capture's steps file (NAME.steps.json beside NAME.sqlite.xz) goes beside the copy, as
  // a user has it beside the export: the report reads the measured step from it.
  std::string stem = source.substr(0, source.size() - 3);
  if (auto dot = stem.rfind(".sqlite"); dot != std::string::npos && dot + 7 == stem.size()) {
    std::filesystem::path steps = stem.substr(0, dot) + ".steps.json";
    if (std::filesystem::exists(steps, ec))
      std::filesystem::copy_file(steps, cache.parent_path() / steps.filename(),
                                 std::filesystem::copy_options::update_existing, ec);
  }
  return cache.string();
}

}  // namespace

std::optional<std::string> sharedProfile(const std::string& relative) {
  auto source = sharedPath("profiles/" + relative);
  if (!source) return std::nullopt;
  return decompressed(*source, relative);
}

std::string repoProfile(const std::string& relative) { return decompressed(sourcePath(relative), "repo/" + relative); }

std::string dataProfile(const std::string& relative) {
  return decompressed(testDataPath(relative), "data/" + relative);
}

std::string dataTree(const std::string& relative) {
  std::filesystem::path cache = std::filesystem::path(SIGHTLINE_PROFILE_CACHE) / "trees" / relative;
  std::error_code ec;
  if (!std::filesystem::exists(cache, ec)) {
    std::string tmp = cache.string() + ".tmp" + std::to_string(::getpid());
    std::filesystem::create_directories(tmp, ec);
    std::string cmd = "tar -xJf '" + testDataPath(relative) + "' -C '" + tmp + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cannot unpack " + relative + " (tar, xz)");
    std::filesystem::rename(tmp, cache, ec);
  }
  return cache.string();
}

std::vector<std::string> sharedNsysExports() {
  std::vector<std::string> out;
  auto root = sharedPath("profiles");
  if (!root) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(*root)) {
    std::string p = e.path().string();
    if (p.size() > 10 && p.compare(p.size() - 10, 10, ".sqlite.xz") == 0) out.push_back(p.substr(root->size() + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sharedKinetoTraces() {
  std::vector<std::string> out;
  auto root = sharedPath("profiles");
  if (!root) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(*root)) {
    std::string name = e.path().filename().string();
    if (name == "info.json" || name.find("event_tree") != std::string::npos) continue;
    if (name.ends_with(".json") || name.ends_with(".json.gz"))
      out.push_back(e.path().string().substr(root->size() + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string readMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) throw std::runtime_error("cannot read " + path);
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

}  // namespace sightline::testing
