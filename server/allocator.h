// How the process's allocator serves a profile load. Readers grow vectors of millions of rows;
// with glibc's defaults every block over 32 MiB is a fresh mmap, so each doubling faults in new
// zeroed pages and unmaps the old ones (on our VMs a page fault costs microseconds: a third of
// a large load's time). Large blocks come from the heap instead and freed memory stays there
// for the next growth, on every thread (one arena); after a load the free part is handed back
// (`releaseFreeMemory`).
#pragma once

namespace sightline::server {

// Once, at start-up, before any thread runs (main, and the benchmarks that time loads).
void tuneAllocator();
// Gives the heap's free pages back to the system (after a load and its attribution).
void releaseFreeMemory();

}  // namespace sightline::server
