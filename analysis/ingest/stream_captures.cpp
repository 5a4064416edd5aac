// Stream-capture spans of each process (stream_captures.h).
#include "analysis/ingest/stream_captures.h"

#include <algorithm>
#include <string_view>

namespace sightline::ingest {

StreamCaptures::StreamCaptures(const std::vector<model::ApiCall>& calls, const model::StringTable& strings) {
  std::unordered_map<uint32_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> marks;  // pid -> begins, ends
  for (const auto& c : calls) {
    std::string_view name = strings[c.name];
    if (name.starts_with("cudaStreamBeginCapture")) marks[c.pid].first.push_back(c.start_ns);
    if (name.starts_with("cudaStreamEndCapture")) marks[c.pid].second.push_back(c.end_ns);
  }
  for (auto& [pid, m] : marks) {
    auto& [begins, ends] = m;
    std::sort(begins.begin(), begins.end());
    std::sort(ends.begin(), ends.end());
    auto& spans = spans_[pid];
    for (int64_t b : begins) {
      auto e = std::lower_bound(ends.begin(), ends.end(), b);
      if (e != ends.end()) spans.emplace_back(b, *e);
    }
  }
}

bool StreamCaptures::inside(const model::ApiCall& c) const {
  auto it = spans_.find(c.pid);
  if (it == spans_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const auto& s) { return c.start_ns >= s.first && c.start_ns <= s.second; });
}

}  // namespace sightline::ingest
