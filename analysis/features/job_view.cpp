// The job view from rank summaries.
#include "analysis/features/job_view.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/attribution/ranks.h"
#include "analysis/attribution/steps.h"

namespace sightline::features {
namespace {

using attribution::StepKind;
using join::RankSummary;

// The median (the mean of the middle two for an even count).
int64_t medianOf(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  int64_t upper = *mid;
  int64_t lower = *std::max_element(v.begin(), mid);
  return lower + (upper - lower) / 2;
}

// The value at quantile q (nearest rank) of v.
int64_t quantileOf(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto at = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(at, v.size() - 1)];
}

bool steadyAt(const RankSummary& s, int32_t step) {
  if (step < 0) return s.steps.empty();
  return static_cast<size_t>(step) < s.steps.size() && s.steps[static_cast<size_t>(step)].kind == StepKind::Steady;
}

// Pairs each collective across ranks as attribution's pairCollectives does: (step, name, nth);
// all ranks leave together, so the shortest kernel is the last rank's arrival and moved the data.
// waits[r][c]: rank r's collective c waited this long (-1: not paired).
struct Pairing {
  std::vector<std::vector<int64_t>> waits;
  std::vector<std::vector<char>> late;                     // rank r arrived last at its collective c
  std::vector<std::map<int32_t, int64_t>> caused_by_step;  // rank r: step -> others' waits it caused
  uint32_t paired = 0, unpaired = 0;
};

// Each rank's step index in the job: its own plus shift[r]. Ranks whose reports began a step
// apart (one caught a step's tail first) are lined up by the collectives each step holds, and
// where those cannot tell (every step alike) by their step starts when they share a clock (one
// report); else left as they are.
std::vector<int32_t> alignSteps(const std::vector<RankSummary>& in, const std::vector<size_t>& order) {
  std::vector<int32_t> shift(in.size(), 0);
  if (order.size() < 2) return shift;
  auto counts = [](const RankSummary& s) {
    std::vector<int> n(s.steps.size(), 0);
    for (const auto& c : s.collectives)
      if (c.step >= 0 && static_cast<size_t>(c.step) < n.size()) ++n[static_cast<size_t>(c.step)];
    return n;
  };
  const RankSummary& ref = in[order.front()];
  // Steps the profiler marked on every rank (ProfilerStep#N: one schedule, or sightline capture's
  // marks, number the same steps alike) line up as they are: counting collectives could shift
  // one (a rank whose first step caught the previous step's tail), and every pairing after it.
  if (std::all_of(order.begin(), order.end(), [&](size_t r) {
        return in[r].steps_source == "ProfilerStep ranges" && in[r].steps.size() == ref.steps.size();
      }))
    return shift;
  auto ref_counts = counts(ref);
  constexpr int kMaxShift = 4;
  std::vector<int32_t> offset(in.size(), 0);
  for (size_t k = 1; k < order.size(); ++k) {
    const RankSummary& s = in[order[k]];
    auto own = counts(s);
    bool same_clock = !s.report.empty() && s.report == ref.report;
    double best_score = 2;
    int64_t best_gap = INT64_MAX;
    for (int o = -kMaxShift; o <= kMaxShift; ++o) {
      // Job step j is ref's j and this rank's j - o.
      int overlap = 0, mismatched = 0;
      int64_t gap = 0;
      for (int j = 0; j < static_cast<int>(ref_counts.size()); ++j) {
        int i = j - o;
        if (i < 0 || i >= static_cast<int>(own.size())) continue;
        ++overlap;
        mismatched += ref_counts[static_cast<size_t>(j)] != own[static_cast<size_t>(i)] ? 1 : 0;
        if (same_clock)
          gap = std::min<int64_t>(INT64_MAX / 4, gap + std::llabs(ref.steps[static_cast<size_t>(j)].start_ns -
                                                                  s.steps[static_cast<size_t>(i)].start_ns));
      }
      if (overlap < 2 && o != 0) continue;
      double score = overlap > 0 ? static_cast<double>(mismatched) / overlap : 1;
      int64_t tie = same_clock ? gap / std::max(1, overlap) : std::abs(o);
      if (score < best_score - 1e-9 || (score < best_score + 1e-9 && tie < best_gap))
        best_score = score, best_gap = tie, offset[order[k]] = o;
    }
  }
  int32_t low = *std::min_element(offset.begin(), offset.end());
  for (size_t r = 0; r < in.size(); ++r) shift[r] = offset[r] - low;
  return shift;
}

Pairing pair(const std::vector<RankSummary>& in, const std::vector<size_t>& order, const std::vector<int32_t>& shift) {
  Pairing out;
  out.waits.resize(in.size());
  out.late.resize(in.size());
  out.caused_by_step.resize(in.size());
  struct Key {
    int32_t step;
    uint32_t nth;
    std::string_view name;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string_view>{}(k.name) ^ (static_cast<size_t>(k.step) * 0x9e3779b97f4a7c15ULL) ^
             (static_cast<size_t>(k.nth) << 20);
    }
  };
  std::unordered_map<Key, std::vector<std::pair<uint32_t, uint32_t>>, Hash> groups;  // -> (rank, collective)
  for (size_t r : order) {
    const auto& s = in[r];
    out.waits[r].assign(s.collectives.size(), -1);
    out.late[r].assign(s.collectives.size(), 0);
    for (size_t c = 0; c < s.collectives.size(); ++c) {
      const auto& col = s.collectives[c];
      if (col.name >= s.names.size()) continue;
      int32_t step = col.step >= 0 ? col.step + shift[r] : -1;
      groups[{step, col.nth, s.names[col.name]}].emplace_back(static_cast<uint32_t>(r), static_cast<uint32_t>(c));
    }
  }
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) {
      ++out.unpaired;
      continue;
    }
    ++out.paired;
    auto dur = [&](const std::pair<uint32_t, uint32_t>& m) { return in[m.first].collectives[m.second].durationNs(); };
    auto last = members.front();
    for (const auto& m : members)
      if (dur(m) < dur(last)) last = m;
    int64_t transfer = dur(last), caused = 0;
    for (const auto& m : members) {
      int64_t wait = dur(m) - transfer;
      out.waits[m.first][m.second] = wait;
      caused += wait;
    }
    out.late[last.first][last.second] = 1;
    // Held up a step: only the late rank's steady steps count (a warm-up's tail is no straggler).
    int32_t own = in[last.first].collectives[last.second].step;
    if (own >= 0 && steadyAt(in[last.first], own)) out.caused_by_step[last.first][key.step] += caused;
  }
  return out;
}

// The ranks in order (the job's rank, then host, then pid), a rank a summary before it already
// has left out (the same rank, host and GPU: the same report merged twice; counted), with the
// hosts; `labels` gets each kept rank's name.
std::vector<size_t> keptRanks(const std::vector<RankSummary>& in, JobView& job, std::vector<std::string>& labels) {
  std::vector<size_t> order(in.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = in[a], &y = in[b];
    bool kx = x.rank >= 0, ky = y.rank >= 0;
    if (kx != ky) return kx;
    return std::tie(x.rank, x.host, x.pid) < std::tie(y.rank, y.host, y.pid);
  });
  std::vector<attribution::RankInfo> infos;
  infos.reserve(in.size());
  std::set<std::tuple<int32_t, std::string, std::vector<uint32_t>>> seen;
  std::set<std::string> hosts;
  std::vector<size_t> kept;
  for (size_t r : order) {
    if (in[r].rank >= 0 && !seen.insert({in[r].rank, in[r].host, in[r].devices}).second) {
      ++job.duplicate_ranks;
      continue;
    }
    kept.push_back(r);
    attribution::RankInfo info;
    info.rank = in[r].rank, info.host = in[r].host, info.devices = in[r].devices, info.pid = in[r].pid;
    infos.push_back(std::move(info));
    if (!in[r].host.empty()) hosts.insert(in[r].host);
  }
  job.hosts.assign(hosts.begin(), hosts.end());
  labels = attribution::rankLabels(infos);
  return kept;
}

// Each kept rank's row: its steady steps, step walls (in the job's numbering), communication
// waiting and moving; and the job's means per rank and step.
void addRanks(const std::vector<RankSummary>& in, const std::vector<size_t>& order,
              const std::vector<std::string>& labels, const std::vector<int32_t>& shift, const Pairing& pairing,
              JobView& job) {
  std::vector<int64_t> steady_walls;
  int64_t gpu = 0, busy = 0, exposed = 0, wait = 0, transfer = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    size_t r = order[k];
    const auto& s = in[r];
    JobRank jr;
    jr.summary = r;
    jr.label = labels[k];
    std::vector<int64_t> walls;
    std::vector<int64_t> row(static_cast<size_t>(shift[r]), -1);
    std::vector<StepKind> kinds(static_cast<size_t>(shift[r]), StepKind::Lost);
    for (size_t i = 0; i < s.steps.size(); ++i) {
      const auto& st = s.steps[i];
      row.push_back(st.wallNs());
      kinds.push_back(st.kind);
      if (st.kind != StepKind::Steady) continue;
      // The median over the steps the headline takes: the last, cut short where the loop ends,
      // left out (as attribution's summary does).
      if (join::countsInMedian(s, i)) walls.push_back(st.wallNs());
      jr.steady_gpu_ns += st.gpu_ns, jr.steady_busy_ns += st.busy_ns, jr.steady_wall_ns += st.wallNs();
    }
    jr.steady_steps = static_cast<int>(
        std::count_if(s.steps.begin(), s.steps.end(), [](const auto& st) { return st.kind == StepKind::Steady; }));
    jr.median_step_ns = attribution::medianNs(walls);  // the headline's median (attribution/steps.h)
    steady_walls.insert(steady_walls.end(), walls.begin(), walls.end());
    for (size_t c = 0; c < s.collectives.size(); ++c) {
      const auto& col = s.collectives[c];
      if (!steadyAt(s, col.step)) continue;
      jr.comm_ns += col.durationNs(), jr.comm_exposed_ns += col.exposed_ns;
      int64_t w = pairing.waits[r][c];
      if (w < 0) continue;
      ++jr.paired;
      jr.comm_wait_ns += w, jr.comm_transfer_ns += col.durationNs() - w;
      if (pairing.late[r][c]) ++jr.late;
    }
    for (const auto& [step, ns] : pairing.caused_by_step[r]) jr.caused_wait_ns += ns;
    job.max_steps = std::max(job.max_steps, static_cast<int>(row.size()));
    job.max_steady_steps = std::max(job.max_steady_steps, jr.steady_steps);
    job.min_steady_steps = job.ranks.empty() ? jr.steady_steps : std::min(job.min_steady_steps, jr.steady_steps);
    if (s.world_size > 0) job.world_size = std::max(job.world_size, s.world_size);
    job.step_wall_ns.push_back(std::move(row));
    job.step_kind.push_back(std::move(kinds));
    gpu += jr.steady_gpu_ns, busy += jr.steady_busy_ns, exposed += jr.comm_exposed_ns;
    wait += jr.comm_wait_ns, transfer += jr.comm_transfer_ns;
    job.steady_steps += jr.steady_steps;
    job.ranks.push_back(std::move(jr));
  }
  job.median_step_ns = attribution::medianNs(steady_walls);
  if (job.steady_steps > 0) {
    int64_t n = job.steady_steps;
    job.gpu_ns_per_step = gpu / n, job.busy_ns_per_step = busy / n, job.comm_exposed_ns_per_step = exposed / n;
    job.wait_ns_per_step = wait / n, job.transfer_ns_per_step = transfer / n;
  }
}

// The straggler. Per step, the rank whose late arrivals made the others wait longest holds the
// step up when that wait is measurable: over 2% of the median step for each waiting rank. The
// job's straggler is the rank that held up steps and caused the most waiting over the steady
// steps; its steps are those it held up. (A rank late in a few steps of many is found in
// those steps, though its mean over all steps is small.)
void findStraggler(const Pairing& pairing, JobView& job) {
  int64_t waiting = static_cast<int64_t>(std::max<size_t>(1, job.ranks.size() - 1));
  int64_t floor = std::max<int64_t>(100'000, job.median_step_ns / 50) * waiting;
  std::map<int32_t, std::pair<int64_t, size_t>> top;  // step -> (caused, rank k)
  for (size_t k = 0; k < job.ranks.size(); ++k)
    for (const auto& [step, ns] : pairing.caused_by_step[job.ranks[k].summary])
      if (step >= 0 && ns > top[step].first) top[step] = {ns, k};
  std::set<size_t> held_up;
  for (const auto& [step, who] : top)
    if (who.first >= floor) held_up.insert(who.second);
  int64_t best = 0;
  for (size_t k : held_up)
    if (job.ranks[k].caused_wait_ns > best) best = job.ranks[k].caused_wait_ns, job.straggler = static_cast<int32_t>(k);
  // Every rank that held up a step, the straggler first.
  for (const auto& [step, who] : top) {
    if (who.first < floor) continue;
    const size_t late = who.second;  // a structured binding cannot be captured (clang 14)
    auto it = std::find_if(job.late_ranks.begin(), job.late_ranks.end(),
                           [late](const LateRank& l) { return l.rank == late; });
    if (it == job.late_ranks.end()) it = job.late_ranks.insert(job.late_ranks.end(), LateRank{late, {}, {}});
    it->steps.push_back(step);
  }
  std::stable_partition(job.late_ranks.begin(), job.late_ranks.end(),
                        [&](const LateRank& l) { return static_cast<int32_t>(l.rank) == job.straggler; });
  if (job.straggler >= 0) {
    const JobRank& jr = job.ranks[static_cast<size_t>(job.straggler)];
    job.straggler_caused_ns_per_step = jr.caused_wait_ns / std::max(1, jr.steady_steps);
    job.straggler_late_share = jr.paired > 0 ? static_cast<double>(jr.late) / jr.paired : 0;
    for (const auto& [step, who] : top)
      if (who.second == static_cast<size_t>(job.straggler) && who.first >= floor) job.straggler_steps.push_back(step);
  }
}

// Why the straggler was late: the line that ran longer on it in its steps than on the others
// (median), the GPU work it launched there over theirs, and whether its summary knows its lines
// per step at all (a trace read without its script knows none).
void explainStraggler(const std::vector<RankSummary>& in, const std::vector<int32_t>& shift, JobView& job) {
  if (job.straggler < 0 || job.straggler_steps.empty()) return;
  const size_t me = job.ranks[static_cast<size_t>(job.straggler)].summary;
  const RankSummary& s = in[me];
  // The other ranks' per-step line costs, by (path, line).
  std::vector<std::map<std::pair<std::string_view, int32_t>, const std::vector<int64_t>*>> by_line;
  for (const auto& jr : job.ranks) {
    if (jr.summary == me) continue;
    auto& lines = by_line.emplace_back();
    for (const auto& ol : in[jr.summary].lines)
      if (!ol.step_ns.empty()) lines[{ol.path, ol.line}] = &ol.step_ns;
  }
  for (const auto& l : s.lines) {
    if (l.step_ns.empty()) continue;
    int64_t extra = 0;
    for (int32_t step : job.straggler_steps) {
      int32_t mine = step - shift[me];
      if (mine < 0 || static_cast<size_t>(mine) >= l.step_ns.size()) continue;
      std::vector<int64_t> others;
      size_t o = 0;
      for (const auto& jr : job.ranks) {
        if (jr.summary == me) continue;
        const auto& lines = by_line[o++];
        auto it = lines.find({l.path, l.line});
        int32_t theirs = step - shift[jr.summary];
        others.push_back(it != lines.end() && theirs >= 0 && static_cast<size_t>(theirs) < it->second->size()
                             ? (*it->second)[static_cast<size_t>(theirs)]
                             : 0);
      }
      extra += l.step_ns[static_cast<size_t>(mine)] - medianOf(others);
    }
    extra /= static_cast<int64_t>(job.straggler_steps.size());
    if (extra > job.straggler_line_extra_ns && extra >= std::max<int64_t>(500'000, job.median_step_ns / 100)) {
      job.straggler_line_extra_ns = extra;
      job.straggler_line_path = l.path;
      job.straggler_line = l.line;
    }
  }
  job.straggler_lines_known =
      std::any_of(s.lines.begin(), s.lines.end(), [](const auto& l) { return !l.step_ns.empty(); });
  int64_t extra = 0;
  int counted = 0;
  auto gpuAt = [&](size_t r, int32_t step) -> int64_t {
    int32_t own = step - shift[r];
    if (own < 0 || static_cast<size_t>(own) >= in[r].steps.size()) return -1;
    return in[r].steps[static_cast<size_t>(own)].gpu_ns;
  };
  for (int32_t step : job.straggler_steps) {
    int64_t mine = gpuAt(me, step);
    std::vector<int64_t> others;
    for (const auto& jr : job.ranks)
      if (jr.summary != me)
        if (int64_t v = gpuAt(jr.summary, step); v >= 0) others.push_back(v);
    if (mine < 0 || others.empty()) continue;
    extra += mine - medianOf(others);
    ++counted;
  }
  if (counted > 0) job.straggler_gpu_extra_ns = extra / counted;
}

// For each rank that held up steps, the lines with GPU work on it in those steps that no other
// rank runs at all (a rank-only branch: rank 0's logging, its checkpoint, its evaluation).
void onlyLines(const std::vector<RankSummary>& in, const std::vector<int32_t>& shift, JobView& job) {
  std::map<std::pair<std::string_view, int32_t>, size_t> ran_by;  // line -> ranks with it
  for (const auto& jr : job.ranks)
    for (const auto& l : in[jr.summary].lines)
      if (l.ns > 0 || std::any_of(l.step_ns.begin(), l.step_ns.end(), [](int64_t v) { return v > 0; }))
        ++ran_by[{l.path, l.line}];
  for (auto& late : job.late_ranks) {
    const size_t me = job.ranks[late.rank].summary;
    for (const auto& l : in[me].lines) {
      if (l.step_ns.empty() || ran_by[{l.path, l.line}] != 1) continue;
      int64_t ns = 0;
      for (int32_t step : late.steps) {
        int32_t mine = step - shift[me];
        if (mine >= 0 && static_cast<size_t>(mine) < l.step_ns.size()) ns += l.step_ns[static_cast<size_t>(mine)];
      }
      if (ns > 0) late.only_lines.push_back({l.path, l.line, ns / static_cast<int64_t>(late.steps.size())});
    }
    std::stable_sort(late.only_lines.begin(), late.only_lines.end(),
                     [](const LateRank::Line& a, const LateRank::Line& b) { return a.ns > b.ns; });
    if (late.only_lines.size() > kMaxOnlyLines) late.only_lines.resize(kMaxOnlyLines);
  }
}

// Each line's time per steady step across ranks (ranks without it count 0), costliest first.
void spreadLines(const std::vector<RankSummary>& in, JobView& job) {
  std::map<std::pair<std::string_view, int32_t>, std::pair<std::vector<int64_t>, std::vector<int64_t>>> per_line;
  for (size_t k = 0; k < job.ranks.size(); ++k) {
    const RankSummary& s = in[job.ranks[k].summary];
    int64_t steps = std::max(1, job.ranks[k].steady_steps);
    for (const auto& l : s.lines) {
      auto& [ns, comm] = per_line[{l.path, l.line}];
      if (ns.empty()) ns.assign(job.ranks.size(), 0), comm.assign(job.ranks.size(), 0);
      ns[k] += l.ns / steps;
      comm[k] += l.comm_ns / steps;
    }
  }
  for (const auto& [key, values] : per_line) {
    LineSpread ls;
    ls.path = std::string(key.first);
    ls.line = key.second;
    const auto& ns = values.first;
    ls.median_ns = medianOf(ns);
    ls.p95_ns = quantileOf(ns, 0.95);
    auto mx = std::max_element(ns.begin(), ns.end());
    ls.max_ns = *mx;
    ls.max_rank = static_cast<size_t>(mx - ns.begin());
    ls.comm_ns = medianOf(values.second);
    if (ls.max_ns > 0) job.lines.push_back(std::move(ls));
  }
  std::stable_sort(job.lines.begin(), job.lines.end(), [](const LineSpread& a, const LineSpread& b) {
    return std::tie(b.median_ns, b.max_ns) < std::tie(a.median_ns, a.max_ns);
  });
  if (job.lines.size() > kMaxSpreadLines) job.lines.resize(kMaxSpreadLines);
}

// Communication by module and direction (FSDP names its modules; DDP's buckets have none), and
// advice where it moved data while nothing computed, measurably: only with every rank of the job
// here (a rank alone cannot tell waiting from moving).
void communicationByModule(const std::vector<RankSummary>& in, const Pairing& pairing, JobView& job) {
  std::map<std::tuple<std::string, std::string, join::CollectivePass>, ModuleComm> modules;
  for (const auto& jr : job.ranks) {
    const RankSummary& s = in[jr.summary];
    for (size_t c = 0; c < s.collectives.size(); ++c) {
      const auto& col = s.collectives[c];
      if (!steadyAt(s, col.step) || col.name >= s.names.size()) continue;
      std::string module = col.module >= 0 && static_cast<size_t>(col.module) < s.names.size()
                               ? s.names[static_cast<size_t>(col.module)]
                               : "";
      std::string kind = collectiveKind(s.names[col.name]);
      auto& m = modules[{module, kind, col.pass}];
      m.module = module, m.kind = kind, m.pass = col.pass;
      ++m.count;
      m.ns += col.durationNs(), m.exposed_ns += col.exposed_ns;
      int64_t w = pairing.waits[jr.summary][c];
      int64_t exposed_wait = attribution::exposedWaitNs(col.durationNs(), w, col.exposed_ns);
      m.wait_ns += exposed_wait;
      job.exposed_wait_ns_per_step += exposed_wait;  // summed here, per step below
    }
  }
  if (job.steady_steps > 0) job.exposed_wait_ns_per_step /= job.steady_steps;
  for (auto& [key, m] : modules) {
    if (job.steady_steps > 0) {
      m.ns /= job.steady_steps, m.exposed_ns /= job.steady_steps, m.wait_ns /= job.steady_steps;
    }
    job.modules.push_back(std::move(m));
  }
  std::stable_sort(job.modules.begin(), job.modules.end(),
                   [](const ModuleComm& a, const ModuleComm& b) { return a.exposed_ns > b.exposed_ns; });

  job.complete = job.ranks.size() >= 2 && (job.world_size <= 0 || static_cast<int>(job.ranks.size()) >= job.world_size);
  int64_t advice_floor = std::max<int64_t>(500'000, job.median_step_ns / 50);
  for (size_t i = 0; i < job.modules.size(); ++i) {
    const auto& m = job.modules[i];
    int64_t moving = m.exposed_ns - m.wait_ns;
    if (!job.complete || moving < advice_floor) continue;
    std::string change;
    bool backward = m.pass == join::CollectivePass::Backward;
    bool forward = m.pass == join::CollectivePass::Forward;
    if (!m.module.empty() && m.kind == "all-gather" && (forward || backward))
      change = backward ? "backward-prefetch" : "forward-prefetch";
    else if (!m.module.empty() && m.kind == "reduce-scatter")
      change = "reduce-dtype";
    else if (m.module.empty() && m.kind == "all-reduce" && backward)
      change = "ddp-buckets";
    if (!change.empty()) job.advice.push_back({i, change, moving});
  }
}

// What bounds the job's step: ranks waiting for each other, communication moving data, the
// GPU's own work, or the host (the GPU idle).
JobBound boundOf(const JobView& job) {
  if (job.median_step_ns <= 0 || job.steady_steps <= 0) return JobBound::Unknown;
  int64_t step = job.median_step_ns;
  int64_t moving_exposed = std::max<int64_t>(0, job.comm_exposed_ns_per_step - job.exposed_wait_ns_per_step);
  int64_t compute = std::max<int64_t>(0, job.busy_ns_per_step - job.comm_exposed_ns_per_step);
  int64_t idle = std::max<int64_t>(0, step - job.busy_ns_per_step);
  if (job.exposed_wait_ns_per_step >= step / 10 && job.exposed_wait_ns_per_step >= moving_exposed)
    return JobBound::WaitingRanks;
  if (moving_exposed >= step / 10 && moving_exposed >= idle) return JobBound::Communication;
  return idle > compute ? JobBound::Host : JobBound::Gpu;
}

}  // namespace

const char* jobBoundName(JobBound b) {
  switch (b) {
    case JobBound::WaitingRanks:
      return "waiting-ranks";
    case JobBound::Communication:
      return "communication";
    case JobBound::Gpu:
      return "gpu";
    case JobBound::Host:
      return "host";
    case JobBound::Unknown:
      break;
  }
  return "unknown";
}

std::string collectiveKind(std::string_view name) {
  static const std::pair<const char*, const char*> kKinds[] = {{"AllGather", "all-gather"},
                                                               {"ReduceScatter", "reduce-scatter"},
                                                               {"AllReduce", "all-reduce"},
                                                               {"Broadcast", "broadcast"},
                                                               {"Reduce", "reduce"},
                                                               {"SendRecv", "send/recv"},
                                                               {"Send", "send"},
                                                               {"Recv", "recv"},
                                                               {"AllToAll", "all-to-all"}};
  for (const auto& [key, kind] : kKinds)
    if (name.find(key) != std::string_view::npos) return kind;
  return "";
}

JobView buildJob(const std::vector<RankSummary>& in) {
  JobView job;
  std::vector<std::string> labels;
  std::vector<size_t> order = keptRanks(in, job, labels);
  std::vector<int32_t> shift = alignSteps(in, order);
  Pairing pairing = pair(in, order, shift);
  job.paired_collectives = pairing.paired;
  job.unpaired_collectives = pairing.unpaired;
  addRanks(in, order, labels, shift, pairing, job);
  findStraggler(pairing, job);
  explainStraggler(in, shift, job);
  onlyLines(in, shift, job);
  spreadLines(in, job);
  communicationByModule(in, pairing, job);
  job.bound = boundOf(job);
  return job;
}

}  // namespace sightline::features
