// Nesting by time on each thread (internal to analysis/attribution), for NVTX ranges and
// Python calls alike: items sorted by thread, then by start.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/model/profile.h"

namespace sightline::attribution {

// Each item's innermost enclosing item on the same thread (one that does not end before it
// ends), or -1. `Item` has pid, tid and end_ns.
template <class Item>
std::vector<int32_t> enclosingOnThread(const std::vector<Item>& items) {
  std::vector<int32_t> parent(items.size(), -1);
  std::vector<int32_t> open;
  uint64_t current = ~0ull;
  for (uint32_t i = 0; i < items.size(); ++i) {
    const Item& item = items[i];
    uint64_t key = model::threadKey(item.pid, item.tid);
    if (key != current) {
      open.clear();
      current = key;
    }
    while (!open.empty() && items[static_cast<size_t>(open.back())].end_ns < item.end_ns) open.pop_back();
    parent[i] = open.empty() ? -1 : open.back();
    open.push_back(static_cast<int32_t>(i));
  }
  return parent;
}

}  // namespace sightline::attribution
