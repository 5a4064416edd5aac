// The trace builder.
#include "analysis/ingest/kineto_builder.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <thread>
#include <tuple>

#include "analysis/ingest/cuda_api.h"
#include "analysis/ingest/kineto_reader.h"
#include "analysis/model/sorted_runs.h"

namespace sightline::ingest::kineto {

using model::ActivityKind;
using model::CopyKind;
using model::MemoryKind;

Builder::Builder(model::Profile& p) : p_(p) {
  memset_name_ = p_.strings.intern("[memset]");
  for (auto k : {CopyKind::Unknown, CopyKind::HostToDevice, CopyKind::DeviceToHost, CopyKind::DeviceToDevice,
                 CopyKind::HostToHost, CopyKind::PeerToPeer})
    copy_names_[static_cast<size_t>(k)] = p_.strings.intern(copyName(k));
}

void Builder::add(const RawEvent& e) {
  if (e.ph == 'i' && e.has_ts && e.name == "[memory]") {
    // GPU memory only (Device Type 1: CUDA); host allocations are not the question here.
    // Sizes no GPU could hold are a broken (or hostile) trace's: skipped, so no sum overflows.
    constexpr int64_t kMax = int64_t{1} << 44;
    bool plausible = e.mem_bytes >= -kMax && e.mem_bytes <= kMax && e.total_allocated >= -1 && e.total_reserved >= -1 &&
                     e.total_allocated <= kMax && e.total_reserved <= kMax && e.addr >= 0;
    if (e.device_type == 1 && e.device_id >= 0 && e.device_id < 1024 && plausible)
      p_.memory_uses.push_back({e.ts, static_cast<uint32_t>(e.pid), static_cast<uint32_t>(e.tid),
                                static_cast<int32_t>(e.device_id), static_cast<uint64_t>(e.addr), e.mem_bytes,
                                e.total_allocated, e.total_reserved});
    return;
  }
  if (e.ph != 'X' || !e.has_ts) return;
  Category cat = categoryOf(e.cat);
  if (cat == Category::Other) return;
  int64_t start = e.ts, end = e.ts + std::max<int64_t>(0, e.dur);
  auto pid = static_cast<uint32_t>(e.pid), tid = static_cast<uint32_t>(e.tid);
  switch (cat) {
    case Category::Kernel:
    case Category::Memcpy:
    case Category::Memset: {
      model::GpuActivity a;
      a.start_ns = start;
      // As recorded: a negative or overflowing duration is dropped and counted later
      // (plausible_times.h), not read as zero-length work.
      if (e.dur < 0 || __builtin_add_overflow(e.ts, e.dur, &a.end_ns)) a.end_ns = INT64_MIN;
      a.correlation = e.correlation > 0 ? e.correlation : -1;
      a.device = static_cast<uint32_t>(e.device >= 0 ? e.device : e.pid);
      a.stream = static_cast<uint32_t>(e.stream >= 0 ? e.stream : e.tid);
      a.bytes = static_cast<uint64_t>(std::max<int64_t>(0, e.bytes));
      if (cat == Category::Kernel) {
        a.kind = ActivityKind::Kernel;
        a.name = p_.strings.intern(e.name);
        a.launch_config = launchConfig(e.grid, e.block);
      } else if (cat == Category::Memcpy) {
        a.kind = ActivityKind::Memcpy;
        describeCopy(e.name, a);
        a.name = copy_names_[static_cast<size_t>(a.copy)];
      } else {
        a.kind = ActivityKind::Memset;
        a.name = memset_name_;
      }
      p_.activities.push_back(a);
      return;
    }
    case Category::Runtime: {
      model::ApiCall c;
      c.start_ns = start;
      c.end_ns = end;
      c.correlation = e.correlation > 0 ? e.correlation : -1;
      c.pid = pid;
      c.tid = tid;
      std::string_view name = stripVersion(e.name);
      c.name = p_.strings.intern(name);
      c.sync = syncKindOf(name);
      c.launches = launchesWork(name);
      p_.api_calls.push_back(c);
      p_.capture.add(pid, start, model::CaptureEvent::TraceApi);
      return;
    }
    case Category::Op:
    case Category::Annotation: {
      model::NvtxRange r;
      r.start_ns = start;
      r.end_ns = end;
      r.pid = pid;
      r.tid = tid;
      r.text = p_.strings.intern(e.name);
      if (cat == Category::Op) {
        p_.capture.add(pid, start, model::CaptureEvent::TraceOp);
        if (e.shapes) p_.capture.add(pid, start, model::CaptureEvent::TraceShapes);
        r.op = r.text;
        r.seq = e.seq >= 0 && e.seq <= INT32_MAX ? static_cast<int32_t>(e.seq) : -1;
        if (!e.call_stack.empty()) addCallStack(e.call_stack, start, pid, tid);
      }
      p_.ranges.push_back(r);
      return;
    }
    case Category::Python: {
      PendingCall pc;
      auto& call = pc.call;
      call.start_ns = start;
      call.end_ns = end;
      call.pid = pid;
      call.tid = tid;
      describePython(e.name, call);
      p_.capture.add(pid, start, model::CaptureEvent::TracePython);
      pc.id = e.python_id;
      pc.parent_id = e.python_parent;
      pending_.push_back(pc);
      return;
    }
    case Category::Other:
      return;
  }
}

// Sorts, links Python parents, gives GPU activities the pid of their launch.
namespace {

bool pendingBefore(const PendingCall& a, const PendingCall& b) {
  return std::tie(a.call.pid, a.call.tid, a.call.start_ns, b.call.end_ns) <
         std::tie(b.call.pid, b.call.tid, b.call.start_ns, a.call.end_ns);
}

bool memoryUseBefore(const model::MemoryUse& a, const model::MemoryUse& b) { return a.time_ns < b.time_ns; }

template <class T, class Less>
void mergeAt(std::vector<T>& rows, size_t at, Less less) {
  if (at > 0 && at < rows.size())
    std::inplace_merge(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(at), rows.end(), less);
}

// Each Python id's first call (the lowest index of the calls that carry it). Kineto numbers
// them from 0: a table indexed by id then, else (a crafted trace's ids) a sorted list searched.
class FirstCallOfId {
 public:
  explicit FirstCallOfId(const std::vector<PendingCall>& calls) {
    int64_t max_id = -1;
    size_t with_id = 0;
    for (const auto& pc : calls)
      if (pc.id >= 0) max_id = std::max(max_id, pc.id), ++with_id;
    if (max_id >= 0 && static_cast<uint64_t>(max_id) < 4 * uint64_t{with_id} + 1024) {
      dense_.assign(static_cast<size_t>(max_id) + 1, -1);
      for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i].id < 0) continue;
        int32_t& first = dense_[static_cast<size_t>(calls[i].id)];
        if (first < 0)
          first = static_cast<int32_t>(i);
        else
          ++shared_;
      }
      return;
    }
    sparse_.reserve(with_id);
    for (size_t i = 0; i < calls.size(); ++i)
      if (calls[i].id >= 0) sparse_.emplace_back(calls[i].id, static_cast<int32_t>(i));
    std::sort(sparse_.begin(), sparse_.end());
    for (size_t i = 1; i < sparse_.size(); ++i) shared_ += sparse_[i].first == sparse_[i - 1].first ? 1 : 0;
  }
  // The first call with `id`; -1 for none.
  int32_t find(int64_t id) const {
    if (id < 0) return -1;
    if (!dense_.empty()) return static_cast<uint64_t>(id) < dense_.size() ? dense_[static_cast<size_t>(id)] : -1;
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(id, INT32_MIN));
    return it != sparse_.end() && it->first == id ? it->second : -1;
  }
  // Calls whose id an earlier call has.
  size_t shared() const { return shared_; }

 private:
  std::vector<int32_t> dense_;
  std::vector<std::pair<int64_t, int32_t>> sparse_;
  size_t shared_ = 0;
};

}  // namespace

void Builder::presort() {
  std::jthread ranges_sorter([this] { p_.sortRanges(); });
  model::stableSortRuns(p_.memory_uses.begin(), p_.memory_uses.end(), memoryUseBefore);
  model::stableSortRuns(pending_.begin(), pending_.end(), pendingBefore);
  p_.sortRows();
  ranges_sorter.join();
  presorted_ = true;
}

void Builder::finish() {
  // The ranges (ops and annotations, the largest table) sort, or merge, on a second core meanwhile.
  std::jthread ranges_sorter([this] {
    if (runs_)
      p_.mergeSortedRanges(runs_->ranges);
    else
      p_.sortRanges();
  });
  if (runs_) {
    mergeAt(p_.memory_uses, runs_->memory_uses, memoryUseBefore);
    mergeAt(pending_, runs_->pending, pendingBefore);
  } else {
    model::stableSortRuns(p_.memory_uses.begin(), p_.memory_uses.end(), memoryUseBefore);
    model::stableSortRuns(pending_.begin(), pending_.end(), pendingBefore);
  }
  FirstCallOfId first_of_id(pending_);
  p_.calls.reserve(pending_.size());
  // A parent starts before its child (or with it, and ends no sooner): a link that does not is
  // dropped, so chains of parents always end (a crafted trace can point an event at itself, or
  // events at each other). Ids shared by several events link to the first of them.
  auto before = [&](int32_t a, int32_t b) {
    const auto &x = pending_[static_cast<size_t>(a)].call, &y = pending_[static_cast<size_t>(b)].call;
    return std::tuple(x.start_ns, -x.end_ns, a) < std::tuple(y.start_ns, -y.end_ns, b);
  };
  size_t dropped = 0, shared = first_of_id.shared();
  p_.calls.reserve(p_.calls.size() + pending_.size());
  for (size_t i = 0; i < pending_.size(); ++i) {
    auto& pc = pending_[i];
    if (int32_t parent = first_of_id.find(pc.parent_id); parent >= 0) {
      if (before(parent, static_cast<int32_t>(i)))
        pc.call.parent = parent;
      else
        ++dropped;
    }
    p_.calls.push_back(pc.call);
  }
  if (dropped > 0)
    p_.info.warnings.push_back(std::to_string(dropped) +
                               " Python calls name a parent that does not enclose them (a cycle, or the call "
                               "itself): those links were ignored");
  if (shared > 0)
    p_.info.warnings.push_back(std::to_string(shared) +
                               " Python calls share another call's id: their children "
                               "were linked to the first of them");
  pending_.clear();
  pending_.shrink_to_fit();

  // GPU rows carry the device as their pid; the model joins them to launches by the launching
  // process. Correlation ids are unique within a trace.
  std::vector<std::pair<int64_t, uint32_t>> pid_by_corr;
  pid_by_corr.reserve(p_.api_calls.size());
  std::unordered_map<uint32_t, size_t> calls_per_pid;
  for (const auto& c : p_.api_calls) {
    if (c.correlation > 0) pid_by_corr.emplace_back(c.correlation, c.pid);
    ++calls_per_pid[c.pid];
  }
  std::sort(pid_by_corr.begin(), pid_by_corr.end());
  uint32_t main_pid = 0;
  size_t most = 0;
  for (const auto& [pid, n] : calls_per_pid)
    if (n > most) main_pid = pid, most = n;
  for (auto& a : p_.activities) {
    a.pid = main_pid;
    if (a.correlation <= 0) continue;
    auto it = std::lower_bound(pid_by_corr.begin(), pid_by_corr.end(), std::make_pair(a.correlation, 0u));
    if (it != pid_by_corr.end() && it->first == a.correlation) a.pid = it->second;
  }
  if (runs_)
    p_.mergeSortedRuns(runs_->rows);
  else
    p_.sortRows();
  ranges_sorter.join();
  clampNesting();
}

void Builder::expect(uint64_t json_bytes) {
  pending_.reserve(pending_.size() + json_bytes / 600);
  p_.ranges.reserve(p_.ranges.size() + json_bytes / 700);
  p_.api_calls.reserve(p_.api_calls.size() + json_bytes / 4000);
  p_.activities.reserve(p_.activities.size() + json_bytes / 4000);
}

// Takes the rows another builder read (the second part of a split trace) into this one,
// re-interning its strings. Before finish().
void Builder::absorb(Builder& other, model::Profile& part) {
  std::vector<model::StringId> remap(part.strings.size());
  for (model::StringId i = 0; i < part.strings.size(); ++i) remap[i] = p_.strings.intern(part.strings[i]);
  // Grown once to the sum: a doubling would take fresh pages for the whole table again.
  p_.activities.reserve(p_.activities.size() + part.activities.size());
  p_.api_calls.reserve(p_.api_calls.size() + part.api_calls.size());
  p_.ranges.reserve(p_.ranges.size() + part.ranges.size());
  p_.frames.reserve(p_.frames.size() + part.frames.size());
  p_.marks.reserve(p_.marks.size() + part.marks.size());
  pending_.reserve(pending_.size() + other.pending_.size());
  if (presorted_ && other.presorted_)
    runs_ = Runs{{p_.activities.size(), p_.api_calls.size(), p_.marks.size()},
                 p_.ranges.size(),
                 pending_.size(),
                 p_.memory_uses.size()};
  for (auto a : part.activities) {
    a.name = remap[a.name];
    if (a.launch_config != 0) {
      const auto& cfg = part.launch_configs[a.launch_config];
      a.launch_config = launchConfig(cfg.grid, cfg.block);
    }
    p_.activities.push_back(a);
  }
  for (auto c : part.api_calls) {
    c.name = remap[c.name];
    p_.api_calls.push_back(c);
  }
  for (auto r : part.ranges) {
    r.text = remap[r.text];
    r.op = remap[r.op];
    p_.ranges.push_back(r);
  }
  auto frame_base = static_cast<uint32_t>(p_.frames.size());
  for (auto f : part.frames) {
    f.function = remap[f.function];
    f.file = remap[f.file];
    p_.frames.push_back(f);
  }
  for (auto m : part.marks) {
    m.first_frame += frame_base;
    p_.marks.push_back(m);
  }
  p_.memory_uses.insert(p_.memory_uses.end(), part.memory_uses.begin(), part.memory_uses.end());
  for (auto pc : other.pending_) {
    pc.call.file = remap[pc.call.file];
    pc.call.function = remap[pc.call.function];
    pending_.push_back(pc);
  }
  saw_call_stacks_ = saw_call_stacks_ || other.saw_call_stacks_;
  p_.capture.addAll(part.capture, [](uint32_t pid) { return pid; });
  // The part's tables freed now, for the tables finish() grows to reuse.
  other.pending_ = {};
  part.activities = {};
  part.api_calls = {};
  part.ranges = {};
  part.frames = {};
  part.marks = {};
}

uint32_t Builder::launchConfig(const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block) {
  if (grid == std::array<uint32_t, 3>{} && block == std::array<uint32_t, 3>{}) return 0;
  model::LaunchConfig cfg{grid, block};
  uint64_t key = 0;
  for (uint32_t v : grid) key = key * 1000003u + v;
  for (uint32_t v : block) key = key * 1000003u + v;
  auto [it, fresh] = configs_.emplace(key, static_cast<uint32_t>(p_.launch_configs.size()));
  if (fresh) p_.launch_configs.push_back(cfg);
  return p_.launch_configs[it->second] == cfg ? it->second : 0;
}

void Builder::describePython(std::string_view name, model::PythonCall& call) {
  model::StringId id = p_.strings.intern(name);
  auto it = python_names_.find(id);
  if (it == python_names_.end()) {
    PythonName parsed = parsePythonName(name);
    model::PythonCall shape;
    shape.kind = parsed.kind;
    shape.file = p_.strings.intern(parsed.file);
    shape.line = parsed.line;
    shape.function = p_.strings.intern(parsed.function);
    it = python_names_.emplace(id, shape).first;
  }
  call.kind = it->second.kind;
  call.file = it->second.file;
  call.line = it->second.line;
  call.function = it->second.function;
}

// "a.py(12): f;b.py(3): g;" innermost first -> one mark at the op's start.
void Builder::addCallStack(std::string_view stack, int64_t time, uint32_t pid, uint32_t tid) {
  saw_call_stacks_ = true;
  model::PythonMark m;
  m.time_ns = time;
  m.pid = pid;
  m.tid = tid;
  m.first_frame = static_cast<uint32_t>(p_.frames.size());
  while (!stack.empty()) {
    auto semi = stack.find(';');
    std::string_view frame = stack.substr(0, semi);
    stack = semi == std::string_view::npos ? std::string_view{} : stack.substr(semi + 1);
    PythonName parsed = parsePythonName(frame);
    if (parsed.kind != model::CallKind::Function) continue;
    p_.frames.push_back({p_.strings.intern(parsed.function), p_.strings.intern(parsed.file), parsed.line});
  }
  m.frame_count = static_cast<uint32_t>(p_.frames.size()) - m.first_frame;
  if (m.frame_count > 0) p_.marks.push_back(m);
}

// Float timestamps can end a child a few ns after its parent: clamp children into parents
// (within 2 ns) so nesting by time holds, as HTA does.
void Builder::clampNesting() {
  constexpr int64_t kToleranceNs = 2;
  std::vector<size_t> open;
  uint64_t thread = ~0ull;
  for (size_t i = 0; i < p_.ranges.size(); ++i) {
    auto& r = p_.ranges[i];
    uint64_t key = model::threadKey(r.pid, r.tid);
    if (key != thread) open.clear(), thread = key;
    while (!open.empty() && p_.ranges[open.back()].end_ns <= r.start_ns) open.pop_back();
    if (!open.empty()) {
      const auto& parent = p_.ranges[open.back()];
      if (r.end_ns > parent.end_ns && r.end_ns - parent.end_ns <= kToleranceNs) r.end_ns = parent.end_ns;
    }
    open.push_back(i);
  }
  for (auto& c : p_.calls) {
    if (c.parent < 0) continue;
    const auto& parent = p_.calls[static_cast<size_t>(c.parent)];
    if (parent.tid != c.tid) continue;
    if (c.end_ns > parent.end_ns && c.end_ns - parent.end_ns <= kToleranceNs) c.end_ns = parent.end_ns;
    if (c.start_ns < parent.start_ns && parent.start_ns - c.start_ns <= kToleranceNs) c.start_ns = parent.start_ns;
  }
}

}  // namespace sightline::ingest::kineto
