// StringTable interning and the profile's ordering invariants.
#include "analysis/model/profile.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "analysis/model/sorted_runs.h"

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

const char* captureEventName(CaptureEvent e) {
  switch (e) {
    case CaptureEvent::RuntimeCall:
      return "runtime-calls";
    case CaptureEvent::DriverCall:
      return "driver-calls";
    case CaptureEvent::NativeBacktrace:
      return "native-backtraces";
    case CaptureEvent::PythonBacktrace:
      return "python-backtraces";
    case CaptureEvent::AutogradRange:
      return "autograd-ranges";
    case CaptureEvent::ShapesRange:
      return "autograd-shapes";
    case CaptureEvent::TraceOp:
      return "trace-ops";
    case CaptureEvent::TraceShapes:
      return "trace-shapes";
    case CaptureEvent::TracePython:
      return "trace-python";
    case CaptureEvent::TraceApi:
      return "trace-api-calls";
  }
  return "?";
}

namespace {
int64_t binOf(int64_t t_ns) {
  return t_ns >= 0 ? t_ns / CaptureEvents::kBinNs : -((-t_ns + CaptureEvents::kBinNs - 1) / CaptureEvents::kBinNs);
}
}  // namespace

void CaptureEvents::add(uint32_t pid, int64_t t_ns, CaptureEvent kind, uint32_t count) {
  auto [it, added] = processes_.try_emplace(pid);
  Process& p = it->second;
  int64_t bin = binOf(t_ns);
  if (added) p.first_bin = bin;
  auto& v = p.bins[static_cast<size_t>(kind)];
  if (bin < p.first_bin) {  // rare: an event before the first one seen; shift every kind
    auto shift = static_cast<size_t>(p.first_bin - bin);
    if (shift > (size_t{1} << 26)) return;  // a corrupt time far before the rest: not counted
    for (auto& b : p.bins)
      if (!b.empty()) b.insert(b.begin(), shift, 0);
    p.first_bin = bin;
  }
  auto at = static_cast<uint64_t>(bin - p.first_bin);
  if (at >= (uint64_t{1} << 26)) return;  // over 18 hours after the first event: corrupt
  if (v.size() <= at) v.resize(at + 1, 0);
  v[at] = static_cast<uint16_t>(std::min<uint32_t>(UINT16_MAX, v[at] + count));
}

void CaptureEvents::addProcess(uint32_t pid, const Process& from) {
  for (size_t k = 0; k < kCaptureEventKinds; ++k) {
    const auto& v = from.bins[k];
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] > 0) add(pid, (from.first_bin + static_cast<int64_t>(i)) * kBinNs, static_cast<CaptureEvent>(k), v[i]);
  }
}

double CaptureEvents::count(uint32_t pid, CaptureEvent kind, int64_t a_ns, int64_t b_ns) const {
  auto it = processes_.find(pid);
  if (it == processes_.end() || b_ns <= a_ns) return 0;
  const auto& v = it->second.bins[static_cast<size_t>(kind)];
  double n = 0;
  for (int64_t bin = binOf(a_ns); bin <= binOf(b_ns - 1); ++bin) {
    int64_t at = bin - it->second.first_bin;
    if (at < 0) continue;
    if (static_cast<uint64_t>(at) >= v.size()) break;
    int64_t lo = std::max(a_ns, bin * kBinNs), hi = std::min(b_ns, (bin + 1) * kBinNs);
    n += v[static_cast<size_t>(at)] * static_cast<double>(hi - lo) / kBinNs;
  }
  return n;
}

uint64_t CaptureEvents::total(CaptureEvent kind) const {
  uint64_t n = 0;
  for (const auto& [pid, p] : processes_)
    for (uint16_t c : p.bins[static_cast<size_t>(kind)]) n += c;
  return n;
}

CaptureEvents::Bins CaptureEvents::bins(uint32_t pid, CaptureEvent kind) const {
  auto it = processes_.find(pid);
  if (it == processes_.end() || it->second.bins[static_cast<size_t>(kind)].empty()) return {};
  return {it->second.first_bin * kBinNs, &it->second.bins[static_cast<size_t>(kind)]};
}

int64_t Profile::totalGpuNs() const {
  int64_t total = 0;
  for (const auto& a : activities) total += a.duration();
  return total;
}

void Profile::sortAll() {
  sortRows();
  sortRanges();
}

namespace {

// The orders sortRows() and sortRanges() keep.
bool activityBefore(const GpuActivity& a, const GpuActivity& b) { return a.start_ns < b.start_ns; }
bool apiCallBefore(const ApiCall& a, const ApiCall& b) { return a.start_ns < b.start_ns; }
bool markBefore(const PythonMark& a, const PythonMark& b) {
  return std::tie(a.pid, a.tid, a.time_ns) < std::tie(b.pid, b.tid, b.time_ns);
}
bool rangeBefore(const NvtxRange& a, const NvtxRange& b) {
  // An enclosing range first when two start together.
  return std::tie(a.pid, a.tid, a.start_ns, b.end_ns) < std::tie(b.pid, b.tid, b.start_ns, a.end_ns);
}

template <class T, class Less>
void mergeAt(std::vector<T>& rows, size_t at, Less less) {
  if (at > 0 && at < rows.size())
    std::inplace_merge(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(at), rows.end(), less);
}

// `rows` as runs, one per part, starting at `starts` (ascending, the first 0): each run sorted
// where it is not yet, then neighbours merged in pairs until one is left. The order is one
// stable sort's of the whole, in O(n log runs) rather than O(n log n).
template <class T, class Less>
void mergeRuns(std::vector<T>& rows, const std::vector<size_t>& starts, Less less) {
  using It = typename std::vector<T>::iterator;
  std::vector<It> at;
  for (size_t s : starts) at.push_back(rows.begin() + static_cast<std::ptrdiff_t>(s));
  for (size_t r = 0; r < at.size(); ++r) stableSortRuns(at[r], r + 1 < at.size() ? at[r + 1] : rows.end(), less);
  if (!at.empty()) mergeNeighbourRuns(std::move(at), rows.end(), less);
}

// `get` of each row into `out`, a run of rows with the same value once (rows come in long runs
// of one pid).
template <class Rows, class Get>
void addDistinct(const Rows& rows, Get get, std::vector<uint32_t>& out) {
  uint32_t last = 0;
  bool any = false;
  for (const auto& row : rows) {
    uint32_t v = get(row);
    if (any && v == last) continue;
    out.push_back(last = v);
    any = true;
  }
}

}  // namespace

void Profile::sortRows() {
  stableSortRuns(activities.begin(), activities.end(), activityBefore);
  stableSortRuns(api_calls.begin(), api_calls.end(), apiCallBefore);
  stableSortRuns(marks.begin(), marks.end(), markBefore);
}

void Profile::sortRanges() { stableSortRuns(ranges.begin(), ranges.end(), rangeBefore); }

void Profile::mergeSortedRuns(const RowRuns& at) {
  mergeAt(activities, at.activities, activityBefore);
  mergeAt(api_calls, at.api_calls, apiCallBefore);
  mergeAt(marks, at.marks, markBefore);
}

void Profile::mergeSortedRanges(size_t at) { mergeAt(ranges, at, rangeBefore); }

namespace {

// The pids of a part, (old, new) by old: renumbered past the largest taken where an earlier part
// has them; `used` gains the new ones.
std::vector<std::pair<uint32_t, uint32_t>> renumberPids(const Profile& p, std::vector<uint32_t>& used) {
  std::vector<uint32_t> mine;
  auto pidOfRow = [](const auto& row) { return row.pid; };
  addDistinct(p.activities, pidOfRow, mine);
  addDistinct(p.api_calls, pidOfRow, mine);
  addDistinct(p.ranges, pidOfRow, mine);
  addDistinct(p.marks, pidOfRow, mine);
  addDistinct(p.calls, pidOfRow, mine);
  addDistinct(p.info.processes, pidOfRow, mine);
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  std::vector<std::pair<uint32_t, uint32_t>> renumbered;
  uint32_t next = used.empty() ? 0 : *std::max_element(used.begin(), used.end());
  for (uint32_t old : mine) {
    bool taken = std::find(used.begin(), used.end(), old) != used.end();
    uint32_t now = taken ? ++next : old;
    next = std::max(next, now);
    renumbered.emplace_back(old, now);
  }
  for (const auto& [old, now] : renumbered) used.push_back(now);
  return renumbered;
}

// What the k-th part's info adds to the merged profile's (its processes apart).
void mergeInfo(ProfileInfo& info, const ProfileInfo& part, size_t k, const std::string& name) {
  if (k == 0)
    info.format = part.format, info.tool_version = part.tool_version, info.schema_version = part.schema_version,
    info.platform = part.platform;
  // Reports of one machine list the same GPUs: each machine's list once.
  if (std::search(info.gpus.begin(), info.gpus.end(), part.gpus.begin(), part.gpus.end()) == info.gpus.end() ||
      part.gpus.empty())
    info.gpus.insert(info.gpus.end(), part.gpus.begin(), part.gpus.end());
  for (const auto& w : part.warnings) info.warnings.push_back(name + ": " + w);
  for (const auto& c : part.capabilities)
    if (std::find(info.capabilities.begin(), info.capabilities.end(), c) == info.capabilities.end())
      info.capabilities.push_back(c);
  info.has_blobs = info.has_blobs && part.has_blobs;
}

// Python calls in (pid, tid, start, longest first) order, parents renumbered to follow.
void sortCallsByThread(std::vector<PythonCall>& calls) {
  std::vector<uint32_t> order(calls.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const auto &a = calls[x], &b = calls[y];
    return std::tie(a.pid, a.tid, a.start_ns, b.end_ns) < std::tie(b.pid, b.tid, b.start_ns, a.end_ns);
  });
  std::vector<int32_t> where(order.size());
  for (uint32_t i = 0; i < order.size(); ++i) where[order[i]] = static_cast<int32_t>(i);
  std::vector<PythonCall> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) {
    PythonCall c = calls[i];
    if (c.parent >= 0) c.parent = where[static_cast<size_t>(c.parent)];
    sorted.push_back(c);
  }
  calls = std::move(sorted);
}

}  // namespace

const ProfilePart* ProfileInfo::partOf(uint32_t pid, uint32_t* own_pid) const {
  for (const auto& part : parts)
    for (const auto& [own, merged] : part.pids)
      if (merged == pid) {
        if (own_pid) *own_pid = own;
        return &part;
      }
  return nullptr;
}

Profile mergeProfiles(std::vector<Profile> parts, const std::vector<std::string>& names) {
  if (parts.size() == 1) return std::move(parts.front());
  Profile out;
  size_t activities = 0, api_calls = 0, ranges = 0, frames_in_all = 0, marks = 0, calls_in_all = 0, uses = 0;
  for (const auto& p : parts) {
    activities += p.activities.size(), api_calls += p.api_calls.size(), ranges += p.ranges.size();
    frames_in_all += p.frames.size(), marks += p.marks.size(), calls_in_all += p.calls.size();
    uses += p.memory_uses.size();
  }
  // Grown once: a doubling takes fresh pages for the whole table again.
  out.activities.reserve(activities), out.api_calls.reserve(api_calls), out.ranges.reserve(ranges);
  out.frames.reserve(frames_in_all), out.marks.reserve(marks), out.calls.reserve(calls_in_all);
  out.memory_uses.reserve(uses);
  std::vector<size_t> activity_runs, call_runs, range_runs, mark_runs;  // where each part's rows start
  std::vector<uint32_t> used;                                           // pids taken so far
  for (size_t k = 0; k < parts.size(); ++k) {
    Profile& p = parts[k];
    std::string name = k < names.size() ? names[k] : "part " + std::to_string(k + 1);
    std::vector<StringId> id(p.strings.size());
    for (StringId i = 0; i < p.strings.size(); ++i) id[i] = out.strings.intern(p.strings[i]);
    // Pids of this part, renumbered where an earlier part has them.
    std::vector<std::pair<uint32_t, uint32_t>> renumbered = renumberPids(p, used);
    // A pid no row of the part names (a capture's or memory use's alone) reads as 0.
    uint32_t last_old = UINT32_MAX, last_new = 0;
    auto pid = [&](uint32_t old) {
      if (old == last_old) return last_new;
      auto it = std::lower_bound(renumbered.begin(), renumbered.end(), std::make_pair(old, 0u));
      last_old = old;
      last_new = it != renumbered.end() && it->first == old ? it->second : 0;
      return last_new;
    };
    activity_runs.push_back(out.activities.size()), call_runs.push_back(out.api_calls.size());
    range_runs.push_back(out.ranges.size()), mark_runs.push_back(out.marks.size());
    auto configs = static_cast<uint32_t>(out.launch_configs.size());
    for (size_t i = 1; i < p.launch_configs.size(); ++i) out.launch_configs.push_back(p.launch_configs[i]);
    for (auto a : p.activities) {
      a.pid = pid(a.pid), a.name = id[a.name];
      if (a.launch_config != 0) a.launch_config += configs - 1;
      out.activities.push_back(a);
    }
    for (auto c : p.api_calls) c.pid = pid(c.pid), c.name = id[c.name], out.api_calls.push_back(c);
    for (auto r : p.ranges) {
      r.pid = pid(r.pid), r.text = id[r.text], r.domain = id[r.domain], r.op = id[r.op];
      out.ranges.push_back(r);
    }
    auto frames = static_cast<uint32_t>(out.frames.size());
    for (auto f : p.frames) f.function = id[f.function], f.file = id[f.file], out.frames.push_back(f);
    for (auto m : p.marks) m.pid = pid(m.pid), m.first_frame += frames, out.marks.push_back(m);
    out.capture.addAll(p.capture, [&](uint32_t old) { return pid(old); });
    auto calls = static_cast<int32_t>(out.calls.size());
    for (auto c : p.calls) {
      c.pid = pid(c.pid), c.file = id[c.file], c.function = id[c.function];
      if (c.parent >= 0) c.parent += calls;
      out.calls.push_back(c);
    }
    mergeInfo(out.info, p.info, k, name);
    out.info.parts.push_back(
        {name, p.info.format, p.info.tool_version, p.info.gpus, p.info.warnings, p.info.capabilities, renumbered});
    for (auto pr : p.info.processes) pr.pid = pid(pr.pid), out.info.processes.push_back(pr);
    for (auto u : p.memory_uses) u.pid = pid(u.pid), out.memory_uses.push_back(u);
    std::vector<GpuActivity>().swap(p.activities);  // the part's rows are in `out`: their memory goes back now
    std::vector<ApiCall>().swap(p.api_calls);
    std::vector<NvtxRange>().swap(p.ranges);
    std::vector<PythonMark>().swap(p.marks);
    if (p.memory.empty()) continue;
    if (out.memory.empty())
      out.memory = std::move(p.memory);
    else
      out.info.warnings.push_back(name +
                                  ": a second memory snapshot in one profile: only the first one's memory is "
                                  "shown");
  }
  // As sortAll() would order them: each part's rows are (mostly) in that order already.
  mergeRuns(out.activities, activity_runs, activityBefore);
  mergeRuns(out.api_calls, call_runs, apiCallBefore);
  mergeRuns(out.marks, mark_runs, markBefore);
  mergeRuns(out.ranges, range_runs, rangeBefore);
  sortCallsByThread(out.calls);
  return out;
}

}  // namespace sightline::model
