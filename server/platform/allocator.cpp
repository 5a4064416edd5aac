// glibc malloc tuning for loads of millions of rows (allocator.h).
#include "server/platform/allocator.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sightline::server {

namespace {

constexpr const char* kMarker = "SIGHTLINE_GLIBC_TUNABLES";  // set across the restart only
constexpr std::string_view kHugePages = "glibc.malloc.hugetlb=1";

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SIGHTLINE_SANITIZER_MALLOC 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(SIGHTLINE_SANITIZER_MALLOC)
constexpr bool kGlibcMalloc = false;  // the sanitizer's allocator serves malloc
#else
constexpr bool kGlibcMalloc = true;
#endif

std::string readSysFile(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

HugePagePlan planHugePages(std::string_view thp_mode, std::string_view defrag_mode, const char* tunables,
                           const char* marker, const char* choice_env) {
  HugePagePlan plan;
  if (marker) {  // restarted: the caller's environment back
    std::string_view was = marker;
    plan.action = HugePagePlan::Action::Restore;
    if (!was.empty() && was.front() == '=') plan.tunables = std::string(was.substr(1));
    return plan;
  }
  std::string_view choice = choice_env ? choice_env : "";
  if (choice == "0") return plan;
  // `always` needs no request, `never` ignores it. Where a fault in an asked-for region compacts
  // memory on the spot (defrag `always`, `madvise`, `defer+madvise`: Debian's default), a load
  // after large files filled the page cache stalls there: measured on our VMs, 5.0-5.3 s with
  // huge pages against 4.5-4.9 s without for a 1.7 GB export. Only `defer` and `never` ask
  // nothing of the faulting thread.
  bool no_stall =
      defrag_mode.find("[defer]") != std::string_view::npos || defrag_mode.find("[never]") != std::string_view::npos;
  if (choice != "1" && (thp_mode.find("[madvise]") == std::string_view::npos || !no_stall)) return plan;
  std::string_view current = tunables ? tunables : "";
  if (current.find("glibc.malloc.hugetlb") != std::string_view::npos) return plan;  // the caller chose
  plan.action = HugePagePlan::Action::Restart;
  plan.tunables = current.empty() ? std::string(kHugePages) : std::string(current) + ":" + std::string(kHugePages);
  plan.marker = tunables ? "=" + std::string(current) : "-";
  return plan;
}

void tuneAllocator(char** argv) {
  if (kGlibcMalloc) {
    auto plan = planHugePages(readSysFile("/sys/kernel/mm/transparent_hugepage/enabled"),
                              readSysFile("/sys/kernel/mm/transparent_hugepage/defrag"), std::getenv("GLIBC_TUNABLES"),
                              std::getenv(kMarker), std::getenv("SIGHTLINE_HUGE_PAGES"));
    if (plan.action == HugePagePlan::Action::Restart && argv && argv[0]) {
      ::setenv(kMarker, plan.marker.c_str(), 1);
      ::setenv("GLIBC_TUNABLES", plan.tunables->c_str(), 1);
      ::execv("/proc/self/exe", argv);
      // No restart (no /proc): go on as started, with the caller's environment.
      plan = planHugePages("", "", nullptr, std::getenv(kMarker), nullptr);
    }
    if (plan.action == HugePagePlan::Action::Restore) {
      if (plan.tunables)
        ::setenv("GLIBC_TUNABLES", plan.tunables->c_str(), 1);
      else
        ::unsetenv("GLIBC_TUNABLES");
      ::unsetenv(kMarker);
    }
  }
  // Blocks up to 1 GiB from the heap; a heap that shrinks only when asked (releaseFreeMemory).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // One arena for every thread: a thread's own arena grows in 64 MiB heaps, and anything larger
  // (a profile's tables, grown on the loading thread) went back to mmap. Small blocks stay
  // lock-free in each thread's cache. The server's x300 load: 10.2-14.2 s -> 8.0-8.2 s.
  mallopt(M_ARENA_MAX, 1);
}

void releaseFreeMemory() { malloc_trim(0); }

}  // namespace sightline::server
