// Ranks, busy time and communication exposure.
#include "analysis/attribution/ranks.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "analysis/model/sorted_runs.h"

namespace sightline::attribution {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint union of intervals (a GPU's come mostly in order: few runs to merge).
std::vector<Interval> merged(std::vector<Interval> v) {
  model::stableSortRuns(v.begin(), v.end(), std::less<>());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

int64_t covered(const std::vector<Interval>& u) {
  int64_t ns = 0;
  for (const auto& [a, b] : u) ns += model::spanNs(a, b);
  return ns;
}

// Time of [start, end) that no interval of `u` (sorted, disjoint) covers.
int64_t uncovered(const std::vector<Interval>& u, int64_t start, int64_t end) {
  int64_t free = model::spanNs(start, end);
  auto it = std::lower_bound(u.begin(), u.end(), Interval{start, start},
                             [](const Interval& a, const Interval& b) { return a.second < b.first; });
  for (; it != u.end() && it->first < end; ++it)
    free -= model::spanNs(std::max(start, it->first), std::min(end, it->second));
  return std::max<int64_t>(free, 0);
}

}  // namespace

std::vector<std::string> rankLabels(const std::vector<RankInfo>& all) {
  std::set<std::string> hosts;
  std::set<std::pair<std::string, uint32_t>> gpus;
  bool distinct = true;  // each process on its own GPU of its host
  for (const auto& o : all) {
    hosts.insert(o.host);
    distinct = distinct && o.devices.size() == 1 && gpus.insert({o.host, o.devices.front()}).second;
  }
  std::vector<std::string> out;
  out.reserve(all.size());
  for (const auto& r : all) {
    std::string gpu = r.devices.size() == 1 ? "GPU " + std::to_string(r.devices.front()) : "";
    if (r.rank >= 0) {
      std::string where = r.host;
      if (!gpu.empty()) where += (where.empty() ? "" : ", ") + gpu;
      out.push_back("rank " + std::to_string(r.rank) + (where.empty() ? "" : " (" + where + ")"));
      continue;
    }
    std::string host = hosts.size() > 1 && !r.host.empty() ? " (" + r.host + ")" : "";
    out.push_back((distinct ? gpu : "pid " + std::to_string(r.pid)) + host);
  }
  return out;
}

bool isCommunicationKernel(std::string_view name) {
  return name.rfind("nccl", 0) == 0 || name.rfind("void nccl", 0) == 0;
}

RankTable buildRanks(const model::Profile& p) {
  RankTable t;
  // Activities come in long runs of one GPU of one process: counted per run.
  std::map<std::pair<uint32_t, uint32_t>, size_t> per_gpu;  // (pid, device) -> its activities
  std::pair<uint32_t, uint32_t> last_gpu{~0u, ~0u};
  size_t* count = nullptr;
  for (const auto& a : p.activities) {
    if (std::pair(a.pid, a.device) != last_gpu) last_gpu = {a.pid, a.device}, count = &per_gpu[last_gpu];
    ++*count;
  }
  std::map<uint32_t, std::set<uint32_t>> devices;  // pid -> devices it ran work on
  for (const auto& [gpu, n] : per_gpu) devices[gpu.first].insert(gpu.second);
  std::map<uint32_t, const model::ProcessInfo*> info;
  for (const auto& proc : p.info.processes) info[proc.pid] = &proc;
  for (const auto& [pid, devs] : devices) {
    RankInfo r;
    r.pid = pid;
    r.devices.assign(devs.begin(), devs.end());
    if (auto it = info.find(pid); it != info.end()) {
      r.rank = it->second->rank;
      r.process = it->second->name;
      r.host = it->second->host;
      r.gpu_uuid = it->second->gpu_uuid;
      if (r.rank >= 0) r.rank_source = it->second->rank_source;
    }
    t.ranks.push_back(std::move(r));
  }
  std::sort(t.ranks.begin(), t.ranks.end(), [](const RankInfo& a, const RankInfo& b) {
    bool ka = a.rank >= 0, kb = b.rank >= 0;
    if (ka != kb) return ka;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.host != b.host) return a.host < b.host;
    return a.pid < b.pid;
  });
  auto labels = rankLabels(t.ranks);
  for (size_t i = 0; i < t.ranks.size(); ++i) t.ranks[i].label = std::move(labels[i]);
  std::map<uint32_t, uint16_t> index;
  for (size_t i = 0; i < t.ranks.size(); ++i) index[t.ranks[i].pid] = static_cast<uint16_t>(i);

  // Busy time per rank, and compute intervals per GPU (pid, device) for exposure.
  std::map<uint16_t, std::vector<Interval>> all, compute;
  std::map<std::pair<uint16_t, uint32_t>, std::vector<Interval>> compute_by_gpu;
  for (const auto& [gpu, n] : per_gpu) {  // room for every activity: no table grown by doubling
    uint16_t rank = index[gpu.first];
    all[rank].reserve(all[rank].capacity() + n);
    compute_by_gpu[{rank, gpu.second}].reserve(n);
  }
  t.activity_rank.resize(p.activities.size());
  t.exposed_ns.assign(p.activities.size(), -1);
  std::vector<int8_t> comm_name(p.strings.size(), -1);  // per kernel name: NCCL's (1) or not (0)
  auto isComm = [&](const model::GpuActivity& a) {
    if (a.kind != model::ActivityKind::Kernel) return false;
    if (a.name >= comm_name.size()) comm_name.resize(a.name + 1, -1);
    if (comm_name[a.name] < 0) comm_name[a.name] = isCommunicationKernel(p.strings[a.name]) ? 1 : 0;
    return comm_name[a.name] == 1;
  };
  last_gpu = {~0u, ~0u};
  uint16_t r = 0;
  std::vector<Interval>*all_of = nullptr, *compute_of = nullptr;
  for (size_t i = 0; i < p.activities.size(); ++i) {
    const auto& a = p.activities[i];
    if (std::pair(a.pid, a.device) != last_gpu) {
      last_gpu = {a.pid, a.device};
      r = index[a.pid];
      all_of = &all[r], compute_of = &compute_by_gpu[{r, a.device}];
    }
    t.activity_rank[i] = r;
    all_of->emplace_back(a.start_ns, a.end_ns);
    if (!isComm(a) && a.kind != model::ActivityKind::Memcpy && a.kind != model::ActivityKind::Memset)
      compute_of->emplace_back(a.start_ns, a.end_ns);
    t.ranks[r].gpu_ns += a.duration();
  }
  for (auto& [r, v] : all) {
    auto u = merged(std::move(v));
    t.ranks[r].busy_ns = covered(u);
    if (!u.empty()) t.ranks[r].span_ns = model::spanNs(u.front().first, u.back().second);
  }
  std::map<std::pair<uint16_t, uint32_t>, std::vector<Interval>> unions;
  for (auto& [gpu, v] : compute_by_gpu) unions[gpu] = merged(std::move(v));
  static const std::vector<Interval> kNone;
  for (size_t i = 0; i < p.activities.size(); ++i) {
    const auto& a = p.activities[i];
    if (!isComm(a)) continue;
    uint16_t r = t.activity_rank[i];
    auto u = unions.find({r, a.device});
    int64_t exposed = uncovered(u == unions.end() ? kNone : u->second, a.start_ns, a.end_ns);
    t.exposed_ns[i] = exposed;
    t.ranks[r].comm_ns += a.duration();
    t.ranks[r].comm_exposed_ns += exposed;
  }
  return t;
}

void pairCollectives(const model::Profile& p, const std::vector<int32_t>& step_of, RankTable& t) {
  t.wait_ns.assign(p.activities.size(), -1);
  t.caused_ns.assign(p.activities.size(), -1);
  if (t.ranks.size() < 2) return;
  // (step, name, nth of that name in the step) -> per rank, the activity.
  using Key = std::tuple<int32_t, std::string_view, uint32_t>;
  std::map<Key, std::map<uint16_t, size_t>> groups;
  std::map<std::tuple<uint16_t, int32_t, std::string_view>, uint32_t> seen;
  std::vector<size_t> order;
  for (size_t i = 0; i < p.activities.size(); ++i)
    if (t.exposed_ns[i] >= 0) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = p.activities[a], &y = p.activities[b];
    return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
  });
  for (size_t i : order) {
    uint16_t r = t.activity_rank[i];
    int32_t step = i < step_of.size() ? step_of[i] : -1;
    std::string_view name = p.strings[p.activities[i].name];
    uint32_t nth = seen[{r, step, name}]++;
    groups[{step, name, nth}].emplace(r, i);
  }
  for (const auto& [key, by_rank] : groups) {
    if (by_rank.size() < 2) continue;
    size_t last = by_rank.begin()->second;
    for (const auto& [r, i] : by_rank)
      if (p.activities[i].duration() < p.activities[last].duration()) last = i;
    int64_t transfer = p.activities[last].duration();
    int64_t caused = 0;
    for (const auto& [r, i] : by_rank) {
      int64_t wait = p.activities[i].duration() - transfer;
      t.wait_ns[i] = wait;
      caused += wait;
      t.ranks[r].comm_wait_ns += wait;
      t.ranks[r].comm_transfer_ns += transfer;
    }
    t.caused_ns[last] = caused;
    ++t.ranks[t.activity_rank[last]].late_collectives;
    for (const auto& [r, i] : by_rank) ++t.ranks[r].paired_collectives;
  }
}

}  // namespace sightline::attribution
