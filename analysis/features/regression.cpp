// The regression gate.
#include "analysis/features/regression.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace sightline::features {
namespace {

double medianOf(std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2) return static_cast<double>(*mid);
  return (static_cast<double>(*std::max_element(v.begin(), mid)) + static_cast<double>(*mid)) / 2;
}

// splitmix64: a fixed sequence, the same on every machine.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

std::string fileName(const std::string& path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The script a captured command ran: its first argument that names a .py file (its file name).
std::string scriptOf(const std::vector<std::string>& command) {
  for (const auto& word : command)
    if (word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0) return fileName(word);
  return "";
}

std::string profilerOf(const join::RankSummary& s) {
  if (!s.profiler.empty() && s.profiler != "none") return s.profiler;
  return s.format == "kineto-json" ? "torch" : s.format == "nsys-sqlite" ? "nsys" : s.format;
}

std::string whyIncomparable(const std::vector<join::RankSummary>& base, const std::vector<join::RankSummary>& next) {
  if (base.empty()) return "the base run has no rank with GPU work";
  if (next.empty()) return "the new run has no rank with GPU work";
  const auto &b = base.front(), &n = next.front();
  if (profilerOf(b) != profilerOf(n))
    return "different profilers: " + profilerOf(b) + " (base) and " + profilerOf(n) +
           " (new); each profiler slows a step its own way";
  if (!b.profiler_options.empty() && !n.profiler_options.empty() && b.profiler_options != n.profiler_options) {
    auto list = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& o : v) out += (out.empty() ? "" : ", ") + o;
      return out;
    };
    return "different profiler options: " + list(b.profiler_options) + " (base) and " + list(n.profiler_options) +
           " (new); each option changes what a profiled step costs";
  }
  if (b.gpu_name != n.gpu_name && !b.gpu_name.empty() && !n.gpu_name.empty())
    return "different GPUs: " + b.gpu_name + " (base) and " + n.gpu_name + " (new)";
  if (base.size() != next.size())
    return "different numbers of ranks: " + std::to_string(base.size()) + " (base) and " + std::to_string(next.size()) +
           " (new)";
  std::string bs = scriptOf(b.command), ns = scriptOf(n.command);
  if (!bs.empty() && !ns.empty() && bs != ns) return "different scripts: " + bs + " (base) and " + ns + " (new)";
  // Without the commands (no steps file): runs whose lines share no file are of other scripts.
  auto files = [](const std::vector<join::RankSummary>& run) {
    std::set<std::string> out;
    for (const auto& s : run)
      for (const auto& l : s.lines) out.insert(fileName(l.path));
    return out;
  };
  std::set<std::string> bf = files(base), nf = files(next);
  if ((bs.empty() || ns.empty()) && (bf.empty() || nf.empty()))
    return std::string("cannot tell the runs ran one script: the ") + (bf.empty() ? "base" : "new") +
           " run has no source lines (its summary was made where the script could not be read?) and not both runs "
           "name their command (sightline capture's steps file does)";
  if (!bf.empty() && !nf.empty() &&
      std::none_of(nf.begin(), nf.end(), [&](const std::string& f) { return bf.count(f) > 0; }))
    return "different scripts: the runs have no source file in common (" + *bf.begin() + " and " + *nf.begin() + ")";
  return "";
}

// Each step: whether it counts in the rank's median (join::countsInMedian: the job view's rule).
std::vector<char> steadyMask(const join::RankSummary& s) {
  std::vector<char> mask(s.steps.size());
  for (size_t k = 0; k < s.steps.size(); ++k) mask[k] = join::countsInMedian(s, k);
  return mask;
}

// The step's samples: every rank's measured steps where every rank has them (`measured`), else
// every rank's steady profiled steps.
std::vector<int64_t> stepSamples(const std::vector<join::RankSummary>& run, bool measured) {
  std::vector<int64_t> out;
  for (const auto& s : run) {
    if (measured) {
      out.insert(out.end(), s.measured_ns.begin(), s.measured_ns.end());
      continue;
    }
    std::vector<char> mask = steadyMask(s);
    for (size_t k = 0; k < s.steps.size(); ++k)
      if (mask[k]) out.push_back(s.steps[k].wallNs());
  }
  return out;
}

bool allMeasured(const std::vector<join::RankSummary>& run) {
  return !run.empty() &&
         std::all_of(run.begin(), run.end(), [](const join::RankSummary& s) { return !s.measured_ns.empty(); });
}

bool allHaveInput(const std::vector<join::RankSummary>& run) {
  return std::all_of(run.begin(), run.end(), [](const join::RankSummary& s) { return !s.measured_input_ns.empty(); });
}

// One run's lines by their match key, with their per-step samples pooled over ranks.
struct RunLine {
  std::string path, text;
  int32_t line = 0;
  std::vector<int64_t> samples;
  bool sampled = true;
  int64_t total_ns = 0;
  int64_t syncs = 0, sync_ns = 0;
  std::vector<std::string> kernels;  // the first rank's that names any
};

struct RunLines {
  std::map<std::string, RunLine> by_key;
  size_t steady_steps = 0;   // per-step samples a line absent from this run counts as zero
  size_t counted_steps = 0;  // every steady step: what a line's syncs were counted over
};

RunLines linesOf(const std::vector<join::RankSummary>& run, const std::set<std::string>& by_number) {
  RunLines out;
  for (const auto& s : run) {
    size_t steady_here = 0;
    std::vector<char> mask = steadyMask(s);
    for (size_t k = 0; k < s.steps.size(); ++k) steady_here += mask[k] ? 1 : 0;
    out.steady_steps += steady_here;
    out.counted_steps += static_cast<size_t>(std::count_if(
        s.steps.begin(), s.steps.end(), [](const auto& st) { return st.kind == attribution::StepKind::Steady; }));
    // The k-th line of a file with the same text: lines `x = block(x)` twice stay two lines.
    std::vector<const join::SummaryLine*> ordered;
    for (const auto& l : s.lines) ordered.push_back(&l);
    std::sort(ordered.begin(), ordered.end(), [](const join::SummaryLine* a, const join::SummaryLine* b) {
      return std::tie(a->path, a->line) < std::tie(b->path, b->line);
    });
    std::map<std::pair<std::string, std::string>, int> seen;
    for (const join::SummaryLine* l : ordered) {
      std::string file = fileName(l->path);
      std::string key = l->text.empty() || by_number.count(file)
                            ? file + "\n#" + std::to_string(l->line)
                            : file + "\n" + l->text + "\n" + std::to_string(seen[{file, l->text}]++);
      RunLine& r = out.by_key[key];
      r.path = l->path, r.text = l->text, r.line = l->line;
      r.total_ns += l->ns;
      r.syncs += l->syncs, r.sync_ns += l->sync_ns;
      if (r.kernels.empty()) r.kernels = l->kernels;
      if (l->step_ns.size() == s.steps.size() && !s.steps.empty()) {
        for (size_t k = 0; k < s.steps.size(); ++k)
          if (mask[k]) r.samples.push_back(l->step_ns[k]);
      } else {
        r.sampled = false;  // past the costliest lines a summary keeps per step
      }
    }
  }
  return out;
}

// The profiled steps' parts, each step a sample: GPU work, communication, idle by cause.
std::vector<PartChange> partsOf(const std::vector<std::vector<join::RankSummary>>& bases,
                                const std::vector<join::RankSummary>& next, bool slower) {
  auto samples = [](const std::vector<join::RankSummary>& run, int part) {
    std::vector<int64_t> out;
    for (const auto& s : run) {
      std::vector<char> mask = steadyMask(s);
      // Communication no other kernel overlapped, per step: its collectives' exposed time.
      std::vector<int64_t> exposed(s.steps.size(), 0);
      for (const auto& c : s.collectives)
        if (c.step >= 0 && static_cast<size_t>(c.step) < exposed.size())
          exposed[static_cast<size_t>(c.step)] += c.exposed_ns;
      for (size_t k = 0; k < s.steps.size(); ++k) {
        if (!mask[k]) continue;
        const auto& st = s.steps[k];
        out.push_back(part == -3   ? exposed[k]
                      : part == -2 ? st.compute_ns + st.copy_ns
                      : part == -1 ? st.comm_ns
                                   : st.wait_ns[static_cast<size_t>(part)]);
      }
    }
    return out;
  };
  std::vector<PartChange> out;
  bool communicates = std::any_of(next.begin(), next.end(), [](const auto& s) { return !s.collectives.empty(); });
  for (int part = -3; part < static_cast<int>(attribution::kWaitCount); ++part) {
    if (part == -3 && !communicates) continue;
    std::string name = part == -3   ? "communication exposed (no compute beside it)"
                       : part == -2 ? "GPU work"
                       : part == -1
                           ? "communication"
                           : std::string("GPU idle: ") + attribution::waitName(static_cast<attribution::Wait>(part));
    SampleRuns base;
    for (const auto& run : bases) base.push_back(samples(run, part));
    out.push_back({name, changeOfRuns(base, {samples(next, part)})});
  }
  std::stable_sort(out.begin(), out.end(), [&](const PartChange& x, const PartChange& y) {
    return slower ? x.change.delta_ns > y.change.delta_ns : x.change.delta_ns < y.change.delta_ns;
  });
  return out;
}

// The loop's measured wait for its next batch: over the run, or in a run of several ranks per
// rank (a rank that waits for data holds up the others at the next collective, and a pooled
// median hides it), the largest change in the step's direction first.
std::vector<PartChange> inputWaits(const std::vector<std::vector<join::RankSummary>>& bases,
                                   const std::vector<join::RankSummary>& next, bool slower) {
  const char* name = "the loop waiting for its next batch (measured)";
  auto waits = [](const std::vector<join::RankSummary>& run, int32_t rank) {
    std::vector<int64_t> out;
    for (const auto& s : run)
      if (rank < 0 || s.rank == rank) out.insert(out.end(), s.measured_input_ns.begin(), s.measured_input_ns.end());
    return out;
  };
  auto of = [&](int32_t rank) {
    SampleRuns base;
    for (const auto& run : bases) base.push_back(waits(run, rank));
    return changeOfRuns(base, {waits(next, rank)});
  };
  std::vector<PartChange> out;
  bool per_rank = next.size() > 1;
  for (const auto& s : next) {
    bool everywhere =
        s.rank >= 0 && std::all_of(bases.begin(), bases.end(), [&](const auto& run) {
          return std::any_of(run.begin(), run.end(), [&](const join::RankSummary& b) { return b.rank == s.rank; });
        });
    per_rank = per_rank && everywhere;
  }
  if (!per_rank) return {{name, of(-1), next.front().input_path, next.front().input_line}};
  for (const auto& s : next) out.push_back({name, of(s.rank), s.input_path, s.input_line, s.rank});
  std::stable_sort(out.begin(), out.end(), [&](const PartChange& x, const PartChange& y) {
    return slower ? x.change.delta_ns > y.change.delta_ns : x.change.delta_ns < y.change.delta_ns;
  });
  return out;
}

// Lines edited in place: a line of the new run whose text no base line has, at the place of a
// base line whose text the new run lacks (moved as far as the nearest matched line above it,
// or below it at the top of a file).
// `fp32: with torch.autocast(..., enabled=False): return ...` for `return ...` on line 75 is the
// same line changed, not one removed and one new. Returns new key -> base key.
std::map<std::string, std::string> editedLines(const std::map<std::string, bool>& keys, const std::vector<RunLines>& b,
                                               const RunLines& n) {
  struct Place {
    std::string file;
    int32_t line = 0;
  };
  auto baseLine = [&](const std::string& key) -> const RunLine* {
    for (const auto& run : b)
      if (auto it = run.by_key.find(key); it != run.by_key.end()) return &it->second;
    return nullptr;
  };
  std::map<std::string, std::vector<std::pair<int32_t, int32_t>>> matched;  // file -> (base line, new line)
  std::map<std::pair<std::string, int32_t>, std::string> fresh;             // (file, new line) -> new-only key
  std::vector<std::pair<Place, std::string>> gone;                          // base-only lines
  for (const auto& [key, in_new] : keys) {
    const RunLine* old = baseLine(key);
    if (in_new && old) {
      const RunLine& now = n.by_key.at(key);
      matched[fileName(now.path)].emplace_back(old->line, now.line);
    } else if (in_new) {
      const RunLine& now = n.by_key.at(key);
      fresh[{fileName(now.path), now.line}] = key;
    } else if (old) {
      gone.push_back({{fileName(old->path), old->line}, key});
    }
  }
  for (auto& [file, pairs] : matched) std::sort(pairs.begin(), pairs.end());
  std::map<std::string, std::string> out;
  for (const auto& [place, key] : gone) {
    int32_t shift = 0;  // how far the nearest matched line above (else below) moved
    if (auto m = matched.find(place.file); m != matched.end()) {
      auto below = std::lower_bound(m->second.begin(), m->second.end(), std::make_pair(place.line, INT32_MIN));
      if (below != m->second.begin())
        shift = std::prev(below)->second - std::prev(below)->first;
      else if (below != m->second.end())
        shift = below->second - below->first;
    }
    auto now = fresh.find({place.file, place.line + shift});
    if (now != fresh.end() && !out.count(now->second)) out[now->second] = key;
  }
  return out;
}

// Each line of either side, matched by key: its samples per base run (zeros where a run lacks
// it) against the new run's.
void addLines(const std::vector<std::vector<join::RankSummary>>& bases, const std::vector<join::RankSummary>& next,
              RunDiff& d) {
  // A file whose lines some run has no text for (its summary was made where the script could not
  // be read) is matched by line number in every run.
  std::set<std::string> by_number;
  auto note = [&](const std::vector<join::RankSummary>& run) {
    for (const auto& s : run)
      for (const auto& l : s.lines)
        if (l.text.empty()) by_number.insert(fileName(l.path));
  };
  for (const auto& run : bases) note(run);
  note(next);
  d.matched_by_number.assign(by_number.begin(), by_number.end());
  std::vector<RunLines> b;
  for (const auto& run : bases) b.push_back(linesOf(run, by_number));
  RunLines n = linesOf(next, by_number);
  std::map<std::string, bool> keys;  // key -> in the new run
  for (const auto& [key, l] : n.by_key) keys[key] = true;
  for (const auto& run : b)
    for (const auto& [key, l] : run.by_key) keys.emplace(key, false);
  auto zeros = [](size_t count) { return std::vector<int64_t>(count, 0); };
  std::map<std::string, std::string> edited = editedLines(keys, b, n);  // new key -> its old self's key
  std::set<std::string> replaced;
  for (const auto& [now, was] : edited) replaced.insert(was);
  // Intervals for the costliest lines only (a summary keeps per-step samples for 64 per rank;
  // a crafted one could ask for a bootstrap of every line it names).
  std::vector<std::pair<double, std::string>> weight;
  for (const auto& [key, in_new] : keys) {
    double w = in_new ? static_cast<double>(n.by_key.at(key).total_ns) : 0;
    for (const auto& run : b)
      if (auto it = run.by_key.find(key); it != run.by_key.end()) w += static_cast<double>(it->second.total_ns);
    weight.emplace_back(-w, key);
  }
  std::sort(weight.begin(), weight.end());
  std::set<std::string> with_interval;
  for (size_t i = 0; i < weight.size() && i < kMaxIntervalLines; ++i) with_interval.insert(weight[i].second);
  for (const auto& [key, in_new] : keys) {
    if (replaced.count(key)) continue;  // shown as the line it became
    auto was = edited.find(key);
    const std::string& base_key = was == edited.end() ? key : was->second;
    LineChange lc;
    const RunLine* first_base = nullptr;
    bool sampled = true;
    SampleRuns base;
    double base_total = 0, base_steps = 0, base_counted = 0, base_syncs = 0, base_sync_ns = 0;
    for (const auto& run : b) {
      auto it = run.by_key.find(base_key);
      const RunLine* bl = it == run.by_key.end() ? nullptr : &it->second;
      if (bl && !first_base) first_base = bl;
      if (bl && !bl->sampled) sampled = false;
      base.push_back(bl ? bl->samples : zeros(run.steady_steps));
      base_total += bl ? static_cast<double>(bl->total_ns) : 0, base_steps += static_cast<double>(run.steady_steps);
      base_counted += static_cast<double>(run.counted_steps);
      base_syncs += bl ? static_cast<double>(bl->syncs) : 0;
      base_sync_ns += bl ? static_cast<double>(bl->sync_ns) : 0;
    }
    const RunLine* nl = in_new ? &n.by_key.at(key) : nullptr;
    auto counted = static_cast<double>(n.counted_steps);
    lc.base_syncs = base_counted > 0 ? base_syncs / base_counted : 0;
    lc.new_syncs = nl && counted > 0 ? static_cast<double>(nl->syncs) / counted : 0;
    lc.base_sync_ns = base_counted > 0 ? base_sync_ns / base_counted : 0;
    lc.new_sync_ns = nl && counted > 0 ? static_cast<double>(nl->sync_ns) / counted : 0;
    if (nl && !nl->sampled) sampled = false;
    lc.kind = !nl                   ? LineChange::Kind::Removed
              : was != edited.end() ? LineChange::Kind::Edited
              : first_base          ? LineChange::Kind::Both
                                    : LineChange::Kind::New;
    const RunLine& shown = nl ? *nl : *first_base;
    lc.path = shown.path, lc.text = shown.text;
    lc.new_line = nl ? nl->line : 0;
    if (first_base) lc.base_kernels = first_base->kernels;
    if (nl) lc.new_kernels = nl->kernels;
    lc.base_line = first_base ? first_base->line : 0;
    if (sampled && (with_interval.count(key) || with_interval.count(base_key))) {
      lc.change = changeOfRuns(base, {nl ? nl->samples : zeros(n.steady_steps)});
    } else {
      // Totals per steady step, without an interval: shown, never gated.
      lc.change.base_ns = base_steps > 0 ? base_total / base_steps : 0;
      lc.change.new_ns = nl && n.steady_steps ? static_cast<double>(nl->total_ns) / n.steady_steps : 0;
      lc.change.delta_ns = lc.change.low_ns = lc.change.high_ns = lc.change.new_ns - lc.change.base_ns;
    }
    d.lines.push_back(std::move(lc));
  }
}

// The lines that explain the step's change first: the largest changes in its direction. Where
// the step grew past its spread and the lines' GPU time explains less than half of it, lines
// that now synchronize more often come first: the host waits there, and the GPU for it.
void orderLines(RunDiff& d) {
  bool slower = d.step.delta_ns >= 0;
  std::stable_sort(d.lines.begin(), d.lines.end(), [&](const LineChange& x, const LineChange& y) {
    return slower ? x.change.delta_ns > y.change.delta_ns : x.change.delta_ns < y.change.delta_ns;
  });
  if (!slower || !d.step.certain()) return;
  double explained = 0;
  for (const auto& l : d.lines)
    if (l.change.certain() && l.change.delta_ns > 0) explained += l.change.delta_ns;
  if (explained * 2 >= d.step.delta_ns) return;
  for (auto& l : d.lines) l.sync_added = l.new_line > 0 && l.new_syncs - l.base_syncs >= kSyncsAdded;
  // The host's time blocked there orders them: the sync that drains the queue waits the longest.
  std::stable_sort(d.lines.begin(), d.lines.end(), [](const LineChange& x, const LineChange& y) {
    if (x.sync_added != y.sync_added) return x.sync_added;
    return x.sync_added && x.new_sync_ns - x.base_sync_ns > y.new_sync_ns - y.base_sync_ns;
  });
}

// torch, its CUDA and the driver, where a base run and the new one name different ones.
std::vector<std::string> versionChanges(const std::vector<std::vector<join::RankSummary>>& bases,
                                        const std::vector<join::RankSummary>& next) {
  std::vector<std::string> out;
  if (next.empty()) return out;
  using Field = std::string join::RankSummary::*;
  for (auto [name, field] : {std::pair<const char*, Field>{"torch", &join::RankSummary::torch_version},
                             std::pair<const char*, Field>{"CUDA", &join::RankSummary::cuda_version},
                             std::pair<const char*, Field>{"the driver's CUDA", &join::RankSummary::cuda_driver}}) {
    const std::string& now = next.front().*field;
    std::set<std::string> before;
    for (const auto& run : bases)
      if (!run.empty() && !(run.front().*field).empty() && run.front().*field != now) before.insert(run.front().*field);
    if (now.empty() || before.empty()) continue;
    std::string was;
    for (const auto& b : before) was += (was.empty() ? "" : ", ") + b;
    out.push_back(std::string(name) + " " + was + " (base) and " + now + " (new)");
  }
  return out;
}

// A run's measured peak: its largest rank's; -1 where a rank has none.
int64_t peakOf(const std::vector<join::RankSummary>& run) {
  int64_t peak = -1;
  for (const auto& s : run) {
    if (s.measured_peak_allocated_bytes < 0) return -1;
    peak = std::max(peak, s.measured_peak_allocated_bytes);
  }
  return peak;
}

MemoryChange memoryOf(const std::vector<std::vector<join::RankSummary>>& bases,
                      const std::vector<join::RankSummary>& next) {
  MemoryChange m;
  m.new_bytes = peakOf(next);
  if (m.new_bytes < 0 || bases.empty()) return m;
  m.base_min_bytes = INT64_MAX;
  for (const auto& run : bases) {
    int64_t peak = peakOf(run);
    if (peak < 0) return MemoryChange{};
    m.base_min_bytes = std::min(m.base_min_bytes, peak), m.base_max_bytes = std::max(m.base_max_bytes, peak);
  }
  m.known = true;
  return m;
}

double ruleLower(const GateRule& rule, const MedianChange& c) {
  if (!rule.percent) return c.low_ns;
  if (c.base_ns <= 0) return c.low_ns > 0 ? std::numeric_limits<double>::infinity() : 0;
  return std::max(-100.0, c.low_ns / c.base_ns * 100);  // no run is faster than nothing
}

GateResult check(const GateRule& rule, const RunDiff& d) {
  GateResult g{rule, false, true, "", 0};
  if (rule.scope == GateRule::Scope::Memory) {
    // Against the largest base peak: a peak is a count, and the base runs' spread is their range.
    g.subject = "the memory peak";
    g.checked = d.memory.known;
    g.lower = rule.percent ? d.memory.relative() * 100 : static_cast<double>(d.memory.deltaBytes());
    if (rule.percent && d.memory.base_max_bytes == 0 && d.memory.new_bytes > 0)
      g.lower = std::numeric_limits<double>::infinity();  // from nothing: past every percentage
    g.exceeded = g.checked && g.lower > rule.value;
    return g;
  }
  if (rule.scope == GateRule::Scope::Step) {
    g.subject = "the step";
    g.lower = ruleLower(rule, d.step);
    g.exceeded = d.step.sampled && g.lower > rule.value;
    return g;
  }
  bool first = true;
  for (const auto& l : d.lines) {
    if (!l.change.sampled) continue;
    if (rule.percent && l.change.base_ns <= 0) continue;  // a new line has no percent: give it in time
    double lower = ruleLower(rule, l.change);
    if (first || lower > g.lower) {
      g.lower = lower, first = false;
      g.subject = fileName(l.path) + ":" + std::to_string(l.new_line ? l.new_line : l.base_line);
    }
  }
  g.exceeded = !first && g.lower > rule.value;
  return g;
}

}  // namespace

MedianChange changeOf(const std::vector<int64_t>& base, const std::vector<int64_t>& next) {
  return changeOfRuns({base}, {next});
}

MedianChange changeOfRuns(const SampleRuns& base, const SampleRuns& next) {
  MedianChange c;
  auto pooled = [](const SampleRuns& runs) {
    std::vector<int64_t> out;
    for (const auto& r : runs) out.insert(out.end(), r.begin(), r.end());
    return out;
  };
  std::vector<int64_t> b = pooled(base), n = pooled(next);
  c.base_samples = b.size(), c.new_samples = n.size();
  c.base_ns = medianOf(b), c.new_ns = medianOf(n);
  c.delta_ns = c.new_ns - c.base_ns;
  c.low_ns = c.high_ns = c.delta_ns;
  auto filled = [](const SampleRuns& runs) {
    return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const auto& r) { return !r.empty(); });
  };
  if (!filled(base) || !filled(next)) return c;
  // A bootstrap of one or two steps has no spread to draw from: no interval, never gated.
  if (b.size() < kMinSamples || n.size() < kMinSamples) return c;
  c.sampled = true;
  // A run of thousands of steps is resampled through an even subset of kMaxResampledSteps of
  // them: the interval of fewer samples is the wider one, never a narrower one than the data's.
  auto thin = [](const SampleRuns& runs) {
    SampleRuns out;
    for (const auto& r : runs) {
      if (r.size() <= kMaxResampledSteps) {
        out.push_back(r);
        continue;
      }
      std::vector<int64_t> t;
      for (size_t i = 0; i < kMaxResampledSteps; ++i) t.push_back(r[i * r.size() / kMaxResampledSteps]);
      out.push_back(std::move(t));
    }
    return out;
  };
  SampleRuns base_thin = thin(base), next_thin = thin(next);
  Random random{0x5167'6874'6C69'6E65ull ^ (b.size() * 1'000'003u + n.size() * 7u + base.size())};
  // Two levels: the runs drawn again (the run-to-run spread, where several runs are given),
  // then each drawn run's steps.
  auto resample = [&](const SampleRuns& runs, std::vector<int64_t>& into) {
    into.clear();
    for (size_t k = 0; k < runs.size(); ++k) {
      const auto& run = runs.size() == 1 ? runs[0] : runs[random.below(runs.size())];
      for (size_t i = 0; i < run.size(); ++i) into.push_back(run[random.below(run.size())]);
    }
    return medianOf(into);
  };
  std::vector<double> deltas(kBootstrapResamples);
  for (double& d : deltas) {
    double mb = resample(base_thin, b);
    d = resample(next_thin, n) - mb;
  }
  std::sort(deltas.begin(), deltas.end());
  double tail = (1 - kConfidence) / 2;
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(std::clamp(q * (deltas.size() - 1) + 0.5, 0.0, deltas.size() - 1.0));
    return deltas[i];
  };
  c.low_ns = at(tail), c.high_ns = at(1 - tail);
  return c;
}

RunDiff diffRuns(const std::vector<join::RankSummary>& base, const std::vector<join::RankSummary>& next,
                 const std::vector<GateRule>& rules) {
  return diffRuns(std::vector<std::vector<join::RankSummary>>{base}, next, rules);
}

RunDiff diffRuns(const std::vector<std::vector<join::RankSummary>>& bases, const std::vector<join::RankSummary>& next,
                 const std::vector<GateRule>& rules) {
  RunDiff d;
  d.base_runs = bases.size();
  if (bases.empty()) d.incomparable = "no base run";
  for (size_t r = 0; r < bases.size() && d.incomparable.empty(); ++r) {
    d.incomparable = whyIncomparable(bases[r], next);
    if (!d.incomparable.empty() && bases.size() > 1)
      d.incomparable = "base run " + std::to_string(r + 1) + ": " + d.incomparable;
  }
  if (!d.incomparable.empty()) return d;
  auto each = [&](auto&& of) {
    SampleRuns out;
    for (const auto& run : bases) out.push_back(of(run));
    return out;
  };
  bool base_measured = std::all_of(bases.begin(), bases.end(), [](const auto& run) { return allMeasured(run); });
  bool measured = base_measured && allMeasured(next);
  d.step_basis = measured ? "measured without the profiler recording (sightline capture's timed steps)"
                          : "profiled steps (the profiler's own cost is in them)";
  if (!measured && (base_measured || allMeasured(next)))
    d.step_basis_note = std::string("only the ") + (base_measured ? "base" : "new") +
                        " run was measured without the profiler: both are compared on their profiled steps";
  d.base_steps = each([&](const auto& run) { return stepSamples(run, measured); });
  d.new_steps = stepSamples(next, measured);
  d.step = changeOfRuns(d.base_steps, {d.new_steps});
  if (d.step.base_ns > 0) d.detectable = (d.step.high_ns - d.step.low_ns) / 2 / d.step.base_ns;

  d.parts = partsOf(bases, next, d.step.delta_ns >= 0);
  if (measured && allHaveInput(next) &&
      std::all_of(bases.begin(), bases.end(), [](const auto& run) { return allHaveInput(run); })) {
    auto waits = inputWaits(bases, next, d.step.delta_ns >= 0);
    d.parts.insert(d.parts.begin(), waits.begin(), waits.end());
  }
  addLines(bases, next, d);
  orderLines(d);
  d.lines_total = d.lines.size();
  d.memory = memoryOf(bases, next);
  d.version_changes = versionChanges(bases, next);
  for (const auto& rule : rules) d.gate.push_back(check(rule, d));
  return d;
}

std::optional<GateRule> parseGateRule(const std::string& text, std::string& error) {
  GateRule rule;
  rule.text = text;
  auto colon = text.find(':');
  std::string scope = text.substr(0, colon);
  if (colon == std::string::npos || (scope != "step" && scope != "line" && scope != "memory")) {
    error =
        "`" + text + "`: a threshold is step:+5%, line:+1ms or memory:+10% (step:, line: or memory:, then a change)";
    return std::nullopt;
  }
  rule.scope = scope == "step"   ? GateRule::Scope::Step
               : scope == "line" ? GateRule::Scope::Line
                                 : GateRule::Scope::Memory;
  std::string value = text.substr(colon + 1);
  if (!value.empty() && value.front() == '-') {
    error =
        "`" + text + "`: a threshold is a growth (step:+5%, memory:+10%); a faster or smaller run never fails the gate";
    return std::nullopt;
  }
  if (!value.empty() && value.front() == '+') value.erase(0, 1);
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(value, &used);
  } catch (...) {
    used = 0;
  }
  std::string unit = value.substr(used);
  double scale = -1;
  if (unit == "%") {
    scale = 1;
  } else if (rule.scope == GateRule::Scope::Memory) {
    static const std::map<std::string, double> kBytes = {
        {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    if (auto it = kBytes.find(unit); it != kBytes.end()) scale = it->second;
  } else {
    scale = unit == "ms" ? 1e6 : unit == "us" ? 1e3 : unit == "ns" ? 1 : unit == "s" ? 1e9 : -1;
  }
  if (used == 0 || scale < 0 || !std::isfinite(number) || number < 0 || number > 1e12) {
    error = "`" + text + "`: the change is a number and a unit: " +
            (rule.scope == GateRule::Scope::Memory ? "%, B, KiB, MiB, GiB, KB, MB or GB (memory:+10%, memory:+512MiB)"
                                                   : "%, ms, us, ns or s (step:+5%, line:+1ms)");
    return std::nullopt;
  }
  rule.percent = unit == "%";
  rule.value = number * scale;
  return rule;
}

}  // namespace sightline::features
