// Implausible times left out, counted.
#include "analysis/ingest/plausible_times.h"

#include <algorithm>
#include <cstddef>
#include <string>

namespace sightline::ingest {
namespace {

// Within a day of `center`, without overflow whatever the integers.
bool nearCapture(int64_t t, int64_t center) {
  int64_t d = 0;
  return !__builtin_sub_overflow(t, center, &d) && d >= -kMaxCaptureSpanNs && d <= kMaxCaptureSpanNs;
}

bool plausibleSpan(int64_t start, int64_t end, int64_t longest, int64_t center) {
  int64_t d = 0;
  if (end < start || __builtin_sub_overflow(end, start, &d) || d > longest) return false;
  return nearCapture(start, center) && nearCapture(end, center);
}

template <class T, class Keep>
size_t dropUnless(std::vector<T>& items, Keep keep) {
  size_t before = items.size();
  items.erase(std::remove_if(items.begin(), items.end(), [&](const T& x) { return !keep(x); }), items.end());
  return before - items.size();
}

// The middle of the capture: the median start of its GPU work (the vectors are sorted by start),
// else of its API calls, ranges or marks.
int64_t captureCenter(const model::Profile& p) {
  if (!p.activities.empty()) return p.activities[p.activities.size() / 2].start_ns;
  if (!p.api_calls.empty()) return p.api_calls[p.api_calls.size() / 2].start_ns;
  if (!p.ranges.empty()) {
    std::vector<int64_t> starts;
    starts.reserve(p.ranges.size());
    for (const auto& r : p.ranges) starts.push_back(r.start_ns);
    std::nth_element(starts.begin(), starts.begin() + static_cast<std::ptrdiff_t>(starts.size() / 2), starts.end());
    return starts[starts.size() / 2];
  }
  if (!p.marks.empty()) return p.marks[p.marks.size() / 2].time_ns;
  return 0;
}

std::string counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

size_t dropImplausibleTimes(model::Profile& profile) {
  int64_t center = captureCenter(profile);
  size_t activities = dropUnless(profile.activities, [&](const model::GpuActivity& a) {
    return plausibleSpan(a.start_ns, a.end_ns, kMaxGpuActivityNs, center);
  });
  size_t calls = dropUnless(profile.api_calls, [&](const model::ApiCall& c) {
    return plausibleSpan(c.start_ns, c.end_ns, kMaxCaptureSpanNs, center);
  });
  size_t ranges = dropUnless(profile.ranges, [&](const model::NvtxRange& r) {
    return plausibleSpan(r.start_ns, r.end_ns, kMaxCaptureSpanNs, center);
  });
  size_t marks = dropUnless(profile.marks, [&](const model::PythonMark& m) { return nearCapture(m.time_ns, center); });
  size_t total = activities + calls + ranges + marks;
  if (total == 0) return 0;
  std::string what;
  auto add = [&](size_t n, const char* one, const char* many) {
    if (n == 0) return;
    what += (what.empty() ? "" : ", ") + counted(n, one, many);
  };
  add(activities, "GPU activity", "GPU activities");
  add(calls, "CUDA API call", "CUDA API calls");
  add(ranges, "range", "ranges");
  add(marks, "backtrace", "backtraces");
  profile.info.warnings.push_back(what +
                                  " with implausible times (ending before they start, longer than an hour of GPU work "
                                  "or a day, or a day away from the rest of the capture) were left out");
  return total;
}

}  // namespace sightline::ingest
