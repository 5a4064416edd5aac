// Reopening a profile through the reopen cache (server/profile_files.h): the first open reads
// the profile and stores its model; the second reads the model back. Prints both, the cache
// file's size, and attribution after each (what still runs before hints show). Asserts nothing.
//   reopen_bench PROFILE
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/attribution/attribution.h"
#include "server/allocator.h"
#include "server/profile_files.h"

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator();  // as the sightline binary does
  if (argc != 2) {
    std::fprintf(stderr, "usage: reopen_bench PROFILE\n");
    return 2;
  }
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / ("sightline-reopen-bench-" + std::to_string(::getpid()));
  sightline::server::OpenProfileOptions options;
  options.cache_dir = cache.string();
  options.model_cache_min_s = 0;
  double open_s[2] = {}, attr_s[2] = {};
  for (int pass = 0; pass < 2; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    auto loaded = sightline::server::openProfile(argv[1], options);
    open_s[pass] = since(t0);
    if (!loaded.profile) {
      std::fprintf(stderr, "%s\n", loaded.error.c_str());
      return 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    auto attr = sightline::attribution::attribute(*loaded.profile);
    attr_s[pass] = since(t1);
    if (attr.total_gpu_ns == 42) std::puts("");
  }
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec))
    if (e.path().filename().string().rfind("model-", 0) == 0) bytes += e.file_size(ec);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("profile        %s\n", argv[1]);
  std::printf("first open     %.3f s read + store, attribution %.3f s\n", open_s[0], attr_s[0]);
  std::printf("reopen         %.3f s from the cache (%.1f MB), attribution %.3f s: %.3f s in all\n", open_s[1],
              static_cast<double>(bytes) / 1e6, attr_s[1], open_s[1] + attr_s[1]);
  std::printf("peak RSS       %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  fs::remove_all(cache, ec);
  return 0;
}
