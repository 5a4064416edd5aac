// A GPU's busy time as merged intervals, and the walk over a step that splits it into busy time
// and idle pieces (internal to analysis/attribution: the steps' figures and the capture-overhead
// replay walk steps the same way).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sightline::attribution {

struct BusyInterval {
  int64_t start = 0, end = 0;
  uint32_t first = 0;  // the activity that opens it
};

// Adds an activity; callers add them in start order.
inline void addBusy(std::vector<BusyInterval>& busy, int64_t start, int64_t end, uint32_t activity) {
  if (!busy.empty() && start <= busy.back().end)
    busy.back().end = std::max(busy.back().end, end);
  else
    busy.push_back({start, end, activity});
}

// Walks [s, e): returns the busy time in it, and calls `on_idle(from, to, before, after)` for each
// idle piece, with the intervals around it (nullptr: none).
template <class OnIdle>
int64_t walkBusy(const std::vector<BusyInterval>& busy, int64_t s, int64_t e, OnIdle&& on_idle) {
  int64_t busy_ns = 0;
  auto it = std::lower_bound(busy.begin(), busy.end(), s, [](const BusyInterval& b, int64_t t) { return b.end <= t; });
  for (int64_t cursor = s; cursor < e;) {
    if (it != busy.end() && it->start <= cursor) {
      busy_ns += std::min(e, it->end) - cursor;
      cursor = it->end;
      ++it;
      continue;
    }
    int64_t next = it != busy.end() ? std::min(e, it->start) : e;
    on_idle(cursor, next, it != busy.begin() ? &*std::prev(it) : nullptr, it != busy.end() ? &*it : nullptr);
    cursor = next;
  }
  return busy_ns;
}

}  // namespace sightline::attribution
