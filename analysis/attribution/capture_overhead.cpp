// The capture's own cost and the replay of the steps without it.
#include "analysis/attribution/capture_overhead.h"

#include <algorithm>
#include <map>
#include <span>

#include "analysis/attribution/busy_intervals.h"
#include "analysis/attribution/step_parts.h"
#include "analysis/attribution/steps.h"

namespace sightline::attribution {
namespace {

using model::CaptureEvent;

// A process's capture cost as a running total over time: the cost of every event up to t,
// events spread evenly over their 1 ms bin.
class CostCurve {
 public:
  CostCurve(const model::CaptureEvents& events, uint32_t pid, const CaptureCosts& costs, double scale) {
    for (size_t k = 0; k < model::kCaptureEventKinds; ++k) {
      auto bins = events.bins(pid, static_cast<CaptureEvent>(k));
      if (!bins.counts || costs[k] <= 0) continue;
      if (bin_cost_.empty()) first_ns_ = bins.first_ns;
      if (bin_cost_.size() < bins.counts->size()) bin_cost_.resize(bins.counts->size(), 0);
      for (size_t i = 0; i < bins.counts->size(); ++i) bin_cost_[i] += costs[k] * scale * (*bins.counts)[i];
    }
    prefix_.assign(bin_cost_.size() + 1, 0);
    for (size_t i = 0; i < bin_cost_.size(); ++i) prefix_[i + 1] = prefix_[i] + bin_cost_[i];
  }
  // The cost of the events in (a, b].
  double between(int64_t a, int64_t b) const { return b > a ? upTo(b) - upTo(a) : 0; }

 private:
  double upTo(int64_t t) const {
    if (bin_cost_.empty() || t <= first_ns_) return 0;
    auto bin = static_cast<uint64_t>((t - first_ns_) / model::CaptureEvents::kBinNs);
    if (bin >= bin_cost_.size()) return prefix_.back();
    double within = static_cast<double>((t - first_ns_) % model::CaptureEvents::kBinNs) / model::CaptureEvents::kBinNs;
    return prefix_[bin] + bin_cost_[bin] * within;
  }
  int64_t first_ns_ = 0;
  std::vector<double> bin_cost_, prefix_;
};

struct Replayed {
  int64_t start = -1, end = -1;
};

// The activities each API call launched, for the processes with steps, in activity order: one
// array of them, grouped by call, and where each call's group starts.
class LaunchedBy {
 public:
  LaunchedBy(const model::Profile& p, const std::vector<int64_t>& call_of, const Attribution& out)
      : first_(p.api_calls.size() + 1, 0) {
    uint32_t last_pid = 0;
    bool last_has_steps = false, any = false;
    auto counted = [&](uint32_t a) {
      if (call_of[a] < 0 || static_cast<uint64_t>(call_of[a]) >= p.api_calls.size()) return false;
      uint32_t pid = p.activities[a].pid;
      if (!any || pid != last_pid) last_pid = pid, last_has_steps = out.process_steps.count(pid) > 0, any = true;
      return last_has_steps;
    };
    for (uint32_t a = 0; a < p.activities.size(); ++a)
      if (counted(a)) ++first_[static_cast<size_t>(call_of[a]) + 1];
    for (size_t c = 1; c < first_.size(); ++c) first_[c] += first_[c - 1];
    acts_.resize(first_.back());
    std::vector<uint32_t> next(first_.begin(), first_.end() - 1);
    for (uint32_t a = 0; a < p.activities.size(); ++a)
      if (counted(a)) acts_[next[static_cast<size_t>(call_of[a])]++] = a;
  }
  // The activities `call` launched (none past the profile's calls).
  std::span<const uint32_t> of(size_t call) const {
    if (call + 1 >= first_.size()) return {};
    return {acts_.data() + first_[call], first_[call + 1] - first_[call]};
  }
  // Every call's activities, call by call.
  const std::vector<uint32_t>& all() const { return acts_; }

 private:
  std::vector<uint32_t> first_;
  std::vector<uint32_t> acts_;
};

// One process's steps, replayed: the new start and end of every activity its calls in
// [from, to) launched. A call keeps the time the host spent in it and before it, less the
// capture's cost of the events there; cost that does not fit in one gap (a backtrace recorded
// after its call returned) is taken from the next ones, up to the next sync. A sync ends when
// the replayed GPU work before it does.
void replayProcess(const ReplayInput& in, uint32_t pid, int64_t from, int64_t to, const CostCurve& cost,
                   const LaunchedBy& launched, std::vector<Replayed>& acts) {
  const auto& p = in.profile;
  constexpr int64_t kMinCallNs = 4000;
  int64_t orig_prev = -1, now = 0, done = 0;
  double debt = 0;
  std::map<std::pair<uint32_t, uint32_t>, int64_t> stream_free;  // (device, stream) -> replayed time
  auto first = std::lower_bound(p.api_calls.begin(), p.api_calls.end(), from,
                                [](const model::ApiCall& c, int64_t t) { return c.start_ns < t; });
  for (auto it = first; it != p.api_calls.end() && it->start_ns < to; ++it) {
    const auto& call = *it;
    if (call.pid != pid) continue;
    if (orig_prev < 0) orig_prev = call.start_ns, now = call.start_ns, done = call.start_ns;
    int64_t gap = std::max<int64_t>(0, call.start_ns - orig_prev);
    int64_t dur = model::spanNs(std::max(call.start_ns, orig_prev), call.end_ns);
    debt += cost.between(orig_prev, std::max(orig_prev, call.end_ns));
    bool waits = call.sync != model::SyncKind::None;
    int64_t start_new = 0, end_new = 0;
    if (waits) {  // the host's own time before it shrinks; the wait is the replayed GPU's
      auto take = static_cast<int64_t>(std::min<double>(debt, static_cast<double>(gap)));
      debt -= static_cast<double>(take);
      start_new = now + gap - take;
      end_new = std::max(start_new + kMinCallNs, done);
      // Cost that found no host time before the sync is not carried past it: had the profiler
      // cost that much, the host would have waited here anyway (and the costs are averages).
      debt = 0;
    } else {
      int64_t span = gap + dur;
      auto take =
          static_cast<int64_t>(std::min<double>(debt, static_cast<double>(std::max<int64_t>(0, span - kMinCallNs))));
      debt -= static_cast<double>(take);
      end_new = now + span - take;
      start_new = end_new - std::min(dur, end_new - now);
    }
    for (uint32_t a : launched.of(static_cast<size_t>(it - p.api_calls.begin()))) {
      const auto& act = p.activities[a];
      int64_t& free = stream_free[{act.device, act.stream}];
      int64_t s = std::max(waits ? start_new : end_new, free);
      int64_t dropped = 0;
      if (in.comm_wait && (*in.comm_wait)[a] > 0)
        dropped = static_cast<int64_t>(static_cast<double>((*in.comm_wait)[a]) * (1 - in.wait_kept));
      acts[a] = {s, s + std::max<int64_t>(0, act.duration() - dropped)};
      free = acts[a].end;
      done = std::max(done, free);
      // A blocking copy returns when its copy is done.
      if (call.sync == model::SyncKind::BlockingMemcpy) end_new = std::max(end_new, free);
    }
    now = std::max(now, end_new);
    orig_prev = std::max(orig_prev, call.end_ns);
  }
}

}  // namespace

const CaptureCosts& measuredCaptureCosts() {
  // Fitted on our H100 captures (docs/capture-overhead.md, tests/data/overhead): nsys 2025.3.1,
  // PyTorch 2.11, the per-event host time each option adds to a training step.
  static const CaptureCosts costs = [] {
    CaptureCosts c{};
    c[static_cast<size_t>(CaptureEvent::RuntimeCall)] = 10'700;
    c[static_cast<size_t>(CaptureEvent::DriverCall)] = 2'800;
    c[static_cast<size_t>(CaptureEvent::NativeBacktrace)] = 78'500;
    c[static_cast<size_t>(CaptureEvent::PythonBacktrace)] = 900;
    c[static_cast<size_t>(CaptureEvent::AutogradRange)] = 3'900;
    c[static_cast<size_t>(CaptureEvent::ShapesRange)] = 5'100;
    c[static_cast<size_t>(CaptureEvent::TraceOp)] = 2'900;
    c[static_cast<size_t>(CaptureEvent::TraceShapes)] = 2'100;
    c[static_cast<size_t>(CaptureEvent::TracePython)] = 2'400;
    c[static_cast<size_t>(CaptureEvent::TraceApi)] = 3'100;
    return c;
  }();
  return costs;
}

namespace {

// estimateUnprofiled with each call's launches given (the same for every scale).
void estimateWith(const ReplayInput& in, const LaunchedBy& launched, const CaptureCosts& costs, double scale,
                  Attribution& out) {
  const auto& p = in.profile;
  UnprofiledSteps& u = out.step_summary.unprofiled;
  u = UnprofiledSteps{};
  u.scale = scale;
  if (p.capture.empty()) return;
  std::vector<Replayed> acts(p.activities.size());
  std::vector<int64_t> walls, busies;
  std::vector<double> shares;
  for (const auto& [pid, steps] : out.process_steps) {
    const auto& list = steps.list;
    size_t first = list.size(), last = 0;
    for (size_t k = 0; k < list.size(); ++k)
      if (list[k].kind == StepKind::Steady) first = std::min(first, k), last = k;
    if (first == list.size()) continue;
    // The capture's cost in the steady steps, by kind.
    for (size_t k = first; k <= last; ++k) {
      if (list[k].kind != StepKind::Steady) continue;
      for (size_t e = 0; e < model::kCaptureEventKinds; ++e) {
        double n = p.capture.count(pid, static_cast<CaptureEvent>(e), list[k].start_ns, list[k].end_ns);
        auto ns = static_cast<int64_t>(n * costs[e] * scale);
        u.overhead_ns[e] += ns, u.overhead_total_ns += ns;
      }
    }
    // Replay from the step before the first steady one (the GPU's queue at its start), to the
    // end of the step after the last.
    int64_t from = list[first > 0 ? first - 1 : first].start_ns;
    int64_t to = list[std::min(last + 1, list.size() - 1)].end_ns;
    CostCurve cost(p.capture, pid, costs, scale);
    replayProcess(in, pid, from, to, cost, launched, acts);
    // Each step's first GPU work, replayed.
    std::vector<int64_t> step_start(list.size(), -1);
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k].gpu_start_ns < 0) continue;
      auto lo = std::lower_bound(p.api_calls.begin(), p.api_calls.end(), list[k].start_ns,
                                 [](const model::ApiCall& c, int64_t t) { return c.start_ns < t; });
      int64_t best_orig = INT64_MAX;
      for (auto it = lo; it != p.api_calls.end() && it->start_ns < list[k].end_ns; ++it) {
        if (it->pid != pid) continue;
        for (uint32_t a : launched.of(static_cast<size_t>(it - p.api_calls.begin())))
          if (acts[a].start >= 0 && p.activities[a].start_ns < best_orig)
            best_orig = p.activities[a].start_ns, step_start[k] = acts[a].start;
      }
    }
    // Busy intervals of the replay, each with the activity that opens it.
    std::vector<std::pair<int64_t, uint32_t>> order;
    order.reserve(launched.all().size());
    for (uint32_t a : launched.all())
      if (p.activities[a].pid == pid && acts[a].start >= 0) order.emplace_back(acts[a].start, a);
    std::sort(order.begin(), order.end());
    std::vector<BusyInterval> busy;
    busy.reserve(order.size());
    for (const auto& [s, a] : order) addBusy(busy, s, acts[a].end, a);
    for (size_t k = first; k <= last && k + 1 < list.size(); ++k) {
      if (list[k].kind != StepKind::Steady || step_start[k] < 0 || step_start[k + 1] <= step_start[k]) continue;
      int64_t s = step_start[k], e = step_start[k + 1];
      int64_t busy_ns =
          walkBusy(busy, s, e, [&](int64_t from, int64_t to, const BusyInterval*, const BusyInterval* after) {
            GapCause cause = after ? in.gap_cause[after->first] : GapCause{};
            int64_t piece = to - from, compiling = piece * cause.compile / 255;
            u.wait_ns[static_cast<size_t>(Wait::Compile)] += compiling;
            u.wait_ns[cause.wait >= 0 ? static_cast<size_t>(cause.wait) : static_cast<size_t>(Wait::Launch)] +=
                piece - compiling;
          });
      walls.push_back(e - s);
      busies.push_back(busy_ns);
      shares.push_back(std::min(1.0, static_cast<double>(busy_ns) / static_cast<double>(e - s)));
    }
  }
  if (walls.empty()) return;
  // Idle totals over every steady step, as the capture's are (the last step of each process has
  // no wall and was not replayed): the replayed steps' mean per step, times the steady steps.
  int steady = 0;
  for (const auto& [pid, steps] : out.process_steps)
    for (const auto& st : steps.list) steady += st.kind == StepKind::Steady ? 1 : 0;
  for (auto& w : u.wait_ns)
    w = static_cast<int64_t>(static_cast<double>(w) * steady / static_cast<double>(walls.size()));
  u.estimated = true;
  u.steps = static_cast<int>(walls.size());
  u.wall_ns = medianNs(walls);
  u.wall_min_ns = *std::min_element(walls.begin(), walls.end());
  u.wall_max_ns = *std::max_element(walls.begin(), walls.end());
  u.busy_ns = medianNs(busies);
  u.busy_share = median(shares);
}

}  // namespace

void estimateUnprofiled(const ReplayInput& in, const CaptureCosts& costs, double scale, Attribution& out) {
  estimateWith(in, LaunchedBy(in.profile, in.call_of, out), costs, scale, out);
}

// Of the waits in collectives, the share the late rank's own extra GPU work explains (per step,
// beyond the other ranks' median; communication left out): a profiler slows the GPU's work next
// to nothing, so those waits remain without it, and the rest do not. 1 where nothing was paired.
double waitExplained(const Attribution& out) {
  size_t late = out.ranks.size();
  for (size_t r = 0; r < out.ranks.size(); ++r)
    if (out.ranks[r].steady_caused_wait_ns > 0 &&
        (late == out.ranks.size() || out.ranks[r].steady_caused_wait_ns > out.ranks[late].steady_caused_wait_ns))
      late = r;
  if (late == out.ranks.size()) return 1;
  auto perStep = [](const RankInfo& r, int64_t ns) {
    return r.steady_steps > 0 ? static_cast<double>(ns) / r.steady_steps : 0;
  };
  std::vector<double> others;
  double waits = 0;
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    if (r == late) continue;
    others.push_back(perStep(out.ranks[r], out.ranks[r].steady_gpu_ns - out.ranks[r].steady_comm_ns));
    waits += perStep(out.ranks[r], out.ranks[r].steady_comm_wait_ns);
  }
  if (others.empty() || waits <= 0) return 1;
  std::sort(others.begin(), others.end());
  double extra = perStep(out.ranks[late], out.ranks[late].steady_gpu_ns - out.ranks[late].steady_comm_ns) -
                 others[others.size() / 2];
  return std::clamp(extra / (waits / static_cast<double>(others.size())), 0.0, 1.0);
}

// The steady steps without the profiler (capture_overhead.h), with the measured costs, or
// scaled so the replay takes as long as the step the script's own log gives.
void estimateWithoutProfiler(const ReplayInput& in, const Options& options, Attribution& out) {
  const CaptureCosts& costs = options.capture_costs ? *options.capture_costs : measuredCaptureCosts();
  const LaunchedBy launched(in.profile, in.call_of, out);  // built once for every scale tried
  auto estimate = [&](double scale) { estimateWith(in, launched, costs, scale, out); };
  estimate(1.0);
  auto& u = out.step_summary.unprofiled;
  if (u.estimated) chargeCaptureToSteps(in.profile, costs, 1.0, out);
  if (!u.estimated || options.logged_step_ns <= 0) return;
  // Fewer costs, longer steps: bisect the factor (0 keeps the capture's own steps).
  double lo = 0, hi = 4;
  estimate(hi);
  if (u.wall_ns > options.logged_step_ns) lo = hi;
  for (int i = 0; i < 14 && hi - lo > 1e-3; ++i) {
    double mid = (lo + hi) / 2;
    estimate(mid);
    (u.wall_ns > options.logged_step_ns ? lo : hi) = mid;
  }
  estimate((lo + hi) / 2);
  u.calibrated = true;
  u.logged_step_ns = options.logged_step_ns;
  chargeCaptureToSteps(in.profile, costs, u.scale, out);
}

}  // namespace sightline::attribution
