// A stable sort that reads the order rows already have. Profiles come nearly sorted: a trace
// writes each thread's events in time order, an export its rows in the order they were
// recorded. So their ascending runs are few, and merging them is cheaper than a full sort.
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace sightline::model {

// Merges the ascending runs that start at `starts` (ascending; the last ends at `last`) in
// pairs of neighbours until one is left. Each merge is stable and takes the left run's rows
// first on ties, so the order is one stable sort's of the whole.
template <class It, class Less>
void mergeNeighbourRuns(std::vector<It> starts, It last, Less less) {
  starts.push_back(last);
  while (starts.size() > 2) {
    std::vector<It> merged{starts[0]};
    for (size_t r = 0; r + 1 < starts.size(); r += 2) {
      if (r + 2 < starts.size()) std::inplace_merge(starts[r], starts[r + 1], starts[r + 2], less);
      merged.push_back(starts[std::min(r + 2, starts.size() - 1)]);
    }
    starts = std::move(merged);
  }
}

// The order std::stable_sort(first, last, less) gives: in one pass when the rows are sorted,
// by merging their ascending runs when there are at most `max_runs`, else by stable_sort.
template <class It, class Less>
void stableSortRuns(It first, It last, Less less, size_t max_runs = 64) {
  std::vector<It> starts{first};
  if (first == last) return;
  for (It prev = first, it = std::next(first); it != last; prev = it, ++it) {
    if (!less(*it, *prev)) continue;
    if (starts.size() == max_runs) return std::stable_sort(first, last, less);
    starts.push_back(it);
  }
  if (starts.size() > 1) mergeNeighbourRuns(std::move(starts), last, less);
}

}  // namespace sightline::model
