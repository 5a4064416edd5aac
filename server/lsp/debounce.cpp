// Adaptive debounce: the median recent cost, clamped.
#include "server/lsp/debounce.h"

#include <algorithm>

namespace sightline::server {

void Debounce::record(Clock::duration cost) {
  if (fixed_) return;
  costs_.push_back(std::max(cost, Clock::duration::zero()));
  if (costs_.size() > std::max<size_t>(1, policy_.history)) costs_.erase(costs_.begin());
}

std::chrono::milliseconds Debounce::delay() const {
  if (fixed_) return *fixed_;
  if (costs_.empty()) return policy_.floor;
  auto sorted = costs_;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  auto median = std::chrono::duration<double, std::milli>(sorted[sorted.size() / 2]).count() * policy_.ratio;
  auto ms = std::chrono::milliseconds(static_cast<int64_t>(median + 0.5));
  return std::clamp(ms, policy_.floor, std::max(policy_.floor, policy_.cap));
}

}  // namespace sightline::server
