// glibc malloc tuning for loads of millions of rows (allocator.h).
#include "server/allocator.h"

#include <malloc.h>

namespace sightline::server {

void tuneAllocator() {
  // Blocks up to 1 GiB from the heap; a heap that shrinks only when asked (releaseFreeMemory).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void releaseFreeMemory() { malloc_trim(0); }

}  // namespace sightline::server
