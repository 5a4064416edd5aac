// StringTable interning and the profile's ordering invariants.
#include "analysis/model/profile.h"

#include <algorithm>
#include <tuple>

namespace sightline::model {

StringId StringTable::intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<StringId>(values_.size());
  values_.emplace_back(s);
  ids_.emplace(std::string_view(values_.back()), id);
  return id;
}

void StringTable::reindex() {
  ids_.clear();
  for (size_t i = 0; i < values_.size(); ++i) ids_.emplace(std::string_view(values_[i]), static_cast<StringId>(i));
}

int64_t Profile::totalGpuNs() const {
  int64_t total = 0;
  for (const auto& a : activities) total += a.duration();
  return total;
}

void Profile::sortAll() {
  std::stable_sort(activities.begin(), activities.end(),
                   [](const GpuActivity& a, const GpuActivity& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(api_calls.begin(), api_calls.end(),
                   [](const ApiCall& a, const ApiCall& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(ranges.begin(), ranges.end(), [](const NvtxRange& a, const NvtxRange& b) {
    // An enclosing range first when two start together.
    return std::tie(a.pid, a.tid, a.start_ns, b.end_ns) < std::tie(b.pid, b.tid, b.start_ns, a.end_ns);
  });
  std::stable_sort(marks.begin(), marks.end(), [](const PythonMark& a, const PythonMark& b) {
    return std::tie(a.pid, a.tid, a.time_ns) < std::tie(b.pid, b.tid, b.time_ns);
  });
}

}  // namespace sightline::model
