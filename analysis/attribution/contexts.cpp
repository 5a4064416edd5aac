// Interned contexts.
#include "analysis/attribution/contexts.h"

#include <algorithm>

namespace sightline::attribution {

uint32_t ContextTable::intern(std::vector<FrameLine> lines) {
  if (lines.empty()) return 0;
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  auto [it, added] = ids_.emplace(lines, static_cast<uint32_t>(contexts_.size()));
  if (added) contexts_.push_back(std::move(lines));
  return it->second;
}

uint32_t ContextTable::merge(uint32_t a, uint32_t b) {
  if (a == 0 || a == b) return b;
  if (b == 0) return a;
  auto key = std::minmax(a, b);
  if (auto it = merged_.find(key); it != merged_.end()) return it->second;
  std::vector<FrameLine> lines = contexts_[a];
  lines.insert(lines.end(), contexts_[b].begin(), contexts_[b].end());
  uint32_t id = intern(std::move(lines));
  merged_[key] = id;
  return id;
}

}  // namespace sightline::attribution
