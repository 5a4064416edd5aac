// Contexts (internal to analysis/attribution): the sets of user lines a launch ran beneath,
// interned so that millions of activities share a few thousand of them (attribution.h).
#pragma once

#include <map>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

class ContextTable {
 public:
  ContextTable() : contexts_(1) {}
  // The id of these lines (any order, repeats allowed); 0 for none.
  uint32_t intern(std::vector<FrameLine> lines);
  // The union of two contexts.
  uint32_t merge(uint32_t a, uint32_t b);
  // The context of one line.
  uint32_t single(model::StringId file, int32_t line) { return file == 0 ? 0 : intern({{file, line}}); }
  const std::vector<FrameLine>& lines(uint32_t id) const { return contexts_[id]; }
  std::vector<std::vector<FrameLine>> release() { return std::move(contexts_); }

 private:
  std::vector<std::vector<FrameLine>> contexts_;
  std::map<std::vector<FrameLine>, uint32_t> ids_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> merged_;
};

}  // namespace sightline::attribution
