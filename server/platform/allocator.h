// How the process's allocator serves a profile load. Readers grow vectors of millions of rows;
// with glibc's defaults every block over 32 MiB is a fresh mmap, so each doubling faults in new
// zeroed pages and unmaps the old ones (on our VMs a page fault costs microseconds: a third of
// a large load's time). Large blocks come from the heap instead and freed memory stays there
// for the next growth, on every thread (one arena); after a load the free part is handed back
// (`releaseFreeMemory`). Where the kernel gives transparent huge pages on request (`madvise`)
// without making the faulting thread compact memory for them (defrag `defer` or `never`), the
// heap asks for them: glibc does so only when told at start-up
// (GLIBC_TUNABLES=glibc.malloc.hugetlb=1), so the binary restarts itself once with it set, and
// puts the caller's environment back before anything else runs (children see the caller's).
// Debian's default defrag (`madvise`) compacts on the spot: no restart there unless asked.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sightline::server {

// Once, at start-up, before any thread runs (main, and the benchmarks that time loads): may
// replace the process with itself (execv of /proc/self/exe with `argv`) and not return.
// SIGHTLINE_HUGE_PAGES=0 turns the restart off; =1 restarts whatever the kernel's mode.
void tuneAllocator(char** argv);
// Gives the heap's free pages back to the system (after a load and its attribution).
void releaseFreeMemory();

// What start-up does about huge pages (pure; tuneAllocator acts on it).
struct HugePagePlan {
  enum class Action { Nothing, Restart, Restore } action = Action::Nothing;
  // Restart: GLIBC_TUNABLES for the new image, and the marker that carries the caller's value.
  // Restore: the caller's GLIBC_TUNABLES (nullopt: it was unset).
  std::optional<std::string> tunables;
  std::string marker;
};
// `thp_mode`, `defrag_mode`: /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise]
// never") and .../defrag ("always defer defer+madvise [madvise] never"); `tunables`, `marker`,
// `choice`: GLIBC_TUNABLES, the restart's marker, SIGHTLINE_HUGE_PAGES (null: unset).
HugePagePlan planHugePages(std::string_view thp_mode, std::string_view defrag_mode, const char* tunables,
                           const char* marker, const char* choice);

}  // namespace sightline::server
