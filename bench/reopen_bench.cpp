// Reopening a profile through the reopen cache (server/workspace/profile_files.h): the first open reads
// the profile and stores its model, and the join (join/profile_join.h) stores its attribution;
// the reopen reads both back in a fresh process (as a restarted server or a second `report`
// meets it: a warm process reuses the heap the first open faulted in, and reads faster).
// Prints both opens and joins (after the join, hints can show), the cache files' sizes, and
// whether the reopen's attribution was reused. Asserts nothing.
//   reopen_bench PROFILE
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "analysis/join/profile_join.h"
#include "server/platform/allocator.h"
#include "server/workspace/profile_files.h"

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Timing {
  double open_s = 0, attr_s = 0;
  long peak_kib = 0;
  int reused = 0;
};

// One open (through the cache in `cache_dir`) and its attribution; nullopt with a message.
bool openAndAttribute(const char* profile, const std::string& cache_dir, Timing& out) {
  sightline::server::OpenProfileOptions options;
  options.cache_dir = cache_dir;
  options.model_cache_min_s = 0;
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = sightline::server::openProfile(profile, options);
  out.open_s = since(t0);
  if (!loaded.profile) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return false;
  }
  auto t1 = std::chrono::steady_clock::now();
  sightline::join::JoinOptions join_options;
  join_options.attribution_store = sightline::server::attributionStore({profile}, options);
  sightline::join::ProfileJoin join(std::move(*loaded.profile), {}, join_options);
  out.attr_s = since(t1);
  out.reused = join.attributionReused() ? 1 : 0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  out.peak_kib = usage.ru_maxrss;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator(argv);                 // as the sightline binary does
  if (argc == 4 && std::string(argv[1]) == "--reopen") {  // the fresh process
    Timing t;
    if (!openAndAttribute(argv[3], argv[2], t)) return 1;
    std::printf("%.6f %.6f %ld %d\n", t.open_s, t.attr_s, t.peak_kib, t.reused);
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: reopen_bench PROFILE\n");
    return 2;
  }
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / ("sightline-reopen-bench-" + std::to_string(::getpid()));
  Timing first, again;
  if (!openAndAttribute(argv[1], cache.string(), first)) return 1;
  // A reopen comes later (a restart, the next `report`): the first process's memory handed
  // back and the cache files written out, not still being written while they are read.
  sightline::server::releaseFreeMemory();
  ::sync();
  std::error_code ec;
  std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec || (std::string(argv[1]) + self).find('\'') != std::string::npos) {
    std::fprintf(stderr, "reopen_bench: cannot name this program (or a path has a quote in it)\n");
    return 2;
  }
  std::string command = "'" + self + "' --reopen '" + cache.string() + "' '" + argv[1] + "'";
  FILE* child = ::popen(command.c_str(), "r");
  if (!child ||
      std::fscanf(child, "%lf %lf %ld %d", &again.open_s, &again.attr_s, &again.peak_kib, &again.reused) != 4) {
    std::fprintf(stderr, "reopen_bench: the reopening process failed\n");
    return 1;
  }
  ::pclose(child);
  uint64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(cache, ec)) bytes += e.file_size(ec);
  std::printf("profile        %s\n", argv[1]);
  std::printf("first open     %.3f s read + store, join %.3f s (peak RSS %.1f MiB)\n", first.open_s, first.attr_s,
              static_cast<double>(first.peak_kib) / 1024.0);
  std::printf(
      "reopen         %.3f s from the cache (%.1f MB in all), join %.3f s (attribution %s): %.3f s to hints "
      "(fresh process, peak RSS %.1f MiB)\n",
      again.open_s, static_cast<double>(bytes) / 1e6, again.attr_s, again.reused ? "reused" : "run again",
      again.open_s + again.attr_s, static_cast<double>(again.peak_kib) / 1024.0);
  fs::remove_all(cache, ec);
  return 0;
}
