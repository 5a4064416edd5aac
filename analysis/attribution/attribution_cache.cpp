// Attribution <-> compact binary (attribution_cache.h): one field list per struct, walked by a
// writer and by a reader that checks counts against the bytes left.
#include "analysis/attribution/attribution_cache.h"

#include <array>
#include <cstring>
#include <map>
#include <type_traits>

#include "analysis/attribution/compiled_frames.h"
#include "analysis/model/checksum.h"

namespace sightline::attribution {

// A field added to one of these structs must be added to its field list below too: these
// sizes (libstdc++, 64-bit) catch a struct that grew without it.
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
static_assert(sizeof(LineCost) == 680, "LineCost changed: update its fields() and this size");
static_assert(sizeof(RankInfo) == 368, "RankInfo changed: update its fields() and this size");
static_assert(sizeof(StepSummary) == 680, "StepSummary changed: update its fields() and this size");
static_assert(sizeof(Attribution) == 1200, "Attribution changed: update its fields() and this size");
static_assert(sizeof(Step) == 192 && sizeof(LineRef) == 16 && sizeof(UnprofiledSteps) == 208,
              "a step struct changed: update its fields() and this size");
#endif

namespace {

constexpr char kMagic[8] = {'S', 'L', 'A', 'T', 'T', 'R', '\n', '\0'};
constexpr uint32_t kFormat =
    15;  // 15: syncs per rank; 14: ops between a call and one inside it (nestedLine); 13: the checksum in four lanes;
         // 12: each activity's step; 11: busy less waiting for other ranks; 10: a thread that lost all its records
         // keeps its steps; 9: exposed waiting, collective by collective; 8: the steps the medians stand on; 7: compute
         // slowed beside collectives; 6: ranks' hosts and GPU UUIDs, collectives; 5: copies and fills without a GPU
         // record are not lost launches

template <class Ar>
void fields(Ar& ar, KernelStat& s) {
  ar(s.count, s.ns);
}
template <class Ar>
void fields(Ar& ar, LineCost& c) {
  ar(c.gpu_ns, c.forward_ns, c.backward_ns, c.by_method, c.kernels, c.launches, c.by_name, c.memcpy_bytes,
     c.pageable_bytes, c.memcpy_ns, c.memcpy_bytes_by_kind, c.memset_ns, c.memsets, c.sync_memcpy_bytes,
     c.sync_memcpy_ns, c.sync_memcpys, c.idle_ns, c.idle_gaps, c.compile_idle_ns, c.sync_ns, c.syncs, c.sync_apis,
     c.autograd_ops, c.rank_ns, c.rank_wait_ns, c.rank_syncs, c.rank_sync_ns, c.comm_ns, c.comm_exposed_ns,
     c.comm_wait_ns, c.lost_launches, c.oneoff_ns, c.oneoff_idle_ns, c.oneoff_inclusive_ns, c.fused_with,
     c.memory_peak_bytes, c.memory_peak_by_phase, c.memory_peak_ops, c.memory_step_bytes, c.memory_step_allocations,
     c.memory_reserved_bytes, c.memory_kept_count, c.memory_kept_bytes, c.memory_kept_steps);
}
template <class Ar>
void fields(Ar& ar, RankInfo& r) {
  ar(r.pid, r.rank, r.label, r.process, r.host, r.gpu_uuid, r.rank_source, r.devices, r.gpu_ns, r.busy_ns, r.span_ns,
     r.comm_ns, r.comm_exposed_ns, r.steps, r.median_step_ns, r.launches, r.lost_launches, r.steady_steps,
     r.steady_gpu_ns, r.steady_wall_ns, r.steady_busy_ns, r.busy_share, r.steady_comm_ns, r.steady_comm_exposed_ns,
     r.comm_wait_ns, r.comm_transfer_ns, r.paired_collectives, r.late_collectives, r.steady_comm_wait_ns,
     r.steady_comm_transfer_ns, r.steady_caused_wait_ns, r.steady_late_collectives, r.steady_paired_collectives);
}
template <class Ar>
void fields(Ar& ar, CollectiveLaunch& c) {
  ar(c.activity, c.api, c.step, c.exposed_ns);
}
template <class Ar>
void fields(Ar& ar, LostRecords& l) {
  ar(l.pid, l.tid, l.launches, l.lost);
}
template <class Ar>
void fields(Ar& ar, LineRef& r) {
  ar(r.file, r.line, r.method, r.backward, r.input, r.context);
}
template <class Ar>
void fields(Ar& ar, FrameLine& f) {
  ar(f.file, f.line);
}
template <class Ar>
void fields(Ar& ar, ContextCost& c) {
  ar(c.context, c.self, c.gpu_ns, c.forward_ns, c.backward_ns);
}
template <class Ar>
void fields(Ar& ar, Step& s) {
  ar(s.start_ns, s.end_ns, s.gpu_start_ns, s.gpu_end_ns, s.kind, s.gpu_ns, s.busy_ns, s.kernels, s.top_line,
     s.compile_ns, s.window_start_ns, s.window_end_ns, s.compute_ns, s.copy_ns, s.comm_ns, s.comm_wait_ns,
     s.compute_slowed_ns, s.wait_ns, s.capture_ns);
}
template <class Ar>
void fields(Ar& ar, StepGap& g) {
  ar(g.start_ns, g.end_ns, g.wait, g.line);
}
template <class Ar>
void fields(Ar& ar, WaitLine& w) {
  ar(w.line, w.ns, w.count);
}
template <class Ar>
void fields(Ar& ar, UnprofiledSteps& u) {
  ar(u.estimated, u.overhead_ns, u.overhead_total_ns, u.scale, u.calibrated, u.logged_step_ns, u.steps, u.wall_ns,
     u.wall_min_ns, u.wall_max_ns, u.busy_share, u.busy_ns, u.wait_ns);
}
template <class Ar>
void fields(Ar& ar, StepSummary& s) {
  ar(s.steady, s.warmup, s.outliers, s.lost, s.median_steps, s.wall_ns, s.wall_min_ns, s.wall_max_ns, s.busy_ns,
     s.busy_share, s.lost_launches, s.lost_lines, s.gpu_ns, s.kernels, s.launches, s.kernel_ns, s.launch_api_ns,
     s.queue_ns, s.fp32_matmul_ns, s.comm_wait_ns, s.comm_transfer_ns, s.comm_exposed_wait_ns, s.triton_kernels,
     s.triton_ns, s.compiled_lines, s.graph_launches, s.launch_lines, s.wait_ns, s.wait_lines, s.sync_ns, s.sync_lines,
     s.oneoff_gpu_ns, s.oneoff_idle_ns, s.oneoff_compile_ns, s.all_steps, s.capture_range, s.unprofiled);
}
template <class Ar>
void fields(Ar& ar, IdleGap& g) {
  ar(g.start_ns, g.end_ns, g.device, g.line);
}
template <class Ar>
void fields(Ar& ar, Attribution::ProcessSteps& p) {
  ar(p.count, p.median_ns, p.list, p.representative, p.representative_gaps);
}
template <class Ar>
void fields(Ar& ar, Attribution& a) {
  ar(a.total_gpu_ns, a.steady_gpu_ns, a.attributed_gpu_ns, a.unattributed_gpu_ns, a.by_method, a.files,
     a.activity_lines, a.activity_steps, a.memory_use_lines, a.memory_use_ops, a.idle_gaps, a.steps, a.steps_per_rank,
     a.step_ranks, a.steps_source, a.process_steps, a.ranks, a.collectives, a.comm_ns, a.comm_exposed_ns, a.lost,
     a.processes, a.launches, a.lost_launches, a.step_summary, a.contexts, a.context_costs);
}

template <class T>
inline constexpr bool kScalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

class Writer {
 public:
  template <class... T>
  void operator()(const T&... v) {
    (put(v), ...);
  }
  std::string& bytes() { return out_; }

  template <class T>
  void put(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      out_.push_back(v ? 1 : 0);
    } else if constexpr (kScalar<T>) {
      out_.append(reinterpret_cast<const char*>(&v), sizeof v);
    } else {
      fields(*this, const_cast<T&>(v));  // the field lists take non-const for the reader
    }
  }
  void put(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    out_.append(s);
  }
  template <class T>
  void put(const std::vector<T>& v) {
    put(static_cast<uint64_t>(v.size()));
    for (const auto& x : v) put(x);
  }
  template <class K, class V>
  void put(const std::map<K, V>& m) {
    put(static_cast<uint64_t>(m.size()));
    for (const auto& [k, v] : m) put(k), put(v);
  }
  template <class T, size_t N>
  void put(const std::array<T, N>& a) {
    for (const auto& x : a) put(x);
  }
  template <class A, class B>
  void put(const std::pair<A, B>& p) {
    put(p.first), put(p.second);
  }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <class... T>
  void operator()(T&... v) {
    (get(v), ...);
  }
  bool ok() const { return ok_; }
  size_t left() const { return in_.size() - pos_; }
  bool take(void* data, size_t n) {
    if (!ok_ || n > left()) return ok_ = false;
    std::memcpy(data, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }

  template <class T>
  void get(T& v) {
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = 0;
      take(&b, 1);
      if (b > 1) ok_ = false;
      v = b == 1;
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> raw{};
      take(&raw, sizeof raw);
      v = static_cast<T>(raw);  // checked against its range afterwards (valid())
    } else if constexpr (kScalar<T>) {
      take(&v, sizeof v);
    } else {
      fields(*this, v);
    }
  }
  void get(std::string& s) {
    uint64_t n = count();
    if (!ok_) return;
    s.assign(in_.data() + pos_, n);
    pos_ += n;
  }
  template <class T>
  void get(std::vector<T>& v) {
    uint64_t n = count();
    v.clear();
    if (!ok_) return;
    v.resize(n);
    for (auto& x : v) {
      get(x);
      if (!ok_) return;
    }
  }
  template <class K, class V>
  void get(std::map<K, V>& m) {
    uint64_t n = count();
    m.clear();
    for (uint64_t i = 0; i < n && ok_; ++i) {
      K k{};
      get(k);
      get(m[k]);
    }
  }
  template <class T, size_t N>
  void get(std::array<T, N>& a) {
    for (auto& x : a) get(x);
  }
  template <class A, class B>
  void get(std::pair<A, B>& p) {
    get(p.first), get(p.second);
  }

 private:
  // An element count: each element takes a byte at least, so it cannot pass the bytes left.
  uint64_t count() {
    uint64_t n = 0;
    take(&n, sizeof n);
    if (n > left()) ok_ = false;
    return ok_ ? n : 0;
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

std::string layout() {
  return std::to_string(sizeof(LineCost)) + "/" + std::to_string(sizeof(RankInfo)) + "/" +
         std::to_string(sizeof(StepSummary)) + "/" + std::to_string(sizeof(Attribution)) + "/" +
         std::to_string(kMethodCount) + "/" + std::to_string(model::kCaptureEventKinds);
}

// Every string id, index and enum of `a` within what `profile` holds.
bool valid(const Attribution& a, const model::Profile& profile) {
  size_t strings = profile.strings.size();
  auto id = [&](model::StringId s) { return s < strings; };
  auto ref = [&](const LineRef& r) {
    return id(r.file) && static_cast<size_t>(r.method) < kMethodCount && r.context < a.contexts.size();
  };
  auto lines = [&](const std::vector<WaitLine>& v) {
    for (const auto& w : v)
      if (!ref(w.line)) return false;
    return true;
  };
  for (const auto& [file, costs] : a.files) {
    if (!id(file)) return false;
    for (const auto& [line, c] : costs) {
      for (const auto& [name, stat] : c.by_name)
        if (!id(name)) return false;
      for (const auto& [api, n] : c.sync_apis)
        if (!id(api)) return false;
      for (const auto& [op, n] : c.autograd_ops)
        if (!id(op)) return false;
      for (const auto& [f, l] : c.fused_with)
        if (!id(f)) return false;
      for (const auto& [op, bytes] : c.memory_peak_ops)
        if (!id(op)) return false;
      if (c.rank_ns.size() > a.ranks.size() || c.rank_wait_ns.size() > a.ranks.size() ||
          c.rank_syncs.size() > a.ranks.size() || c.rank_sync_ns.size() != c.rank_syncs.size())
        return false;
    }
  }
  if (a.activity_lines.size() != profile.activities.size() || a.memory_use_lines.size() != profile.memory_uses.size() ||
      a.memory_use_ops.size() != profile.memory_uses.size())
    return false;
  for (const auto& r : a.activity_lines)
    if (!ref(r)) return false;
  if (a.activity_steps.size() != profile.activities.size()) return false;
  for (size_t i = 0; i < a.activity_steps.size(); ++i) {
    int32_t step = a.activity_steps[i];
    if (step < -1) return false;
    if (step < 0) continue;
    auto steps = a.process_steps.find(profile.activities[i].pid);
    if (steps == a.process_steps.end() || static_cast<size_t>(step) >= steps->second.list.size()) return false;
  }
  for (const auto& r : a.memory_use_lines)
    if (!ref(r)) return false;
  for (int32_t op : a.memory_use_ops)
    if (op < -1 || (op >= 0 && static_cast<size_t>(op) >= profile.ranges.size())) return false;
  for (const auto& g : a.idle_gaps)
    if (!ref(g.line)) return false;
  for (const auto& c : a.collectives) {
    if (c.activity >= profile.activities.size() || c.api < -1 ||
        (c.api >= 0 && static_cast<size_t>(c.api) >= profile.api_calls.size()) || c.step < -1)
      return false;
    auto steps = a.process_steps.find(profile.activities[c.activity].pid);
    if (c.step >= 0 && (steps == a.process_steps.end() || static_cast<size_t>(c.step) >= steps->second.list.size()))
      return false;
  }
  for (const auto& [pid, steps] : a.process_steps) {
    for (const auto& s : steps.list)
      if (!ref(s.top_line) || static_cast<uint8_t>(s.kind) > static_cast<uint8_t>(StepKind::Lost)) return false;
    if (steps.representative < -1 ||
        (steps.representative >= 0 && static_cast<size_t>(steps.representative) >= steps.list.size()))
      return false;
    for (const auto& g : steps.representative_gaps)
      if (!ref(g.line) || static_cast<size_t>(g.wait) >= kWaitCount) return false;
  }
  const auto& sum = a.step_summary;
  if (!lines(sum.lost_lines) || !lines(sum.compiled_lines) || !lines(sum.sync_lines)) return false;
  for (const auto& w : sum.wait_lines)
    if (!lines(w)) return false;
  if (a.contexts.empty()) return false;  // [0] is the empty context
  for (const auto& c : a.contexts)
    for (const auto& f : c)
      if (!id(f.file)) return false;
  for (const auto& c : a.context_costs)
    if (c.context >= a.contexts.size() || !ref(c.self)) return false;
  return true;
}

}  // namespace

std::optional<std::string> attributionInputs(const model::Profile& profile, const Options& options) {
  if (options.is_user_file) return std::nullopt;
  if (options.fused_lines && !options.fused_lines->empty()) return std::nullopt;
  if (const CompiledMapping* c = options.compiled; c && (c->generated_marks > 0 || c->generated_calls > 0 ||
                                                         !c->sites.empty() || !c->traced.empty() || !c->fused.empty()))
    return std::nullopt;
  if (!options.compile_windows.empty()) return std::nullopt;
  Writer w;
  w(std::string("inputs 2"), static_cast<uint64_t>(profile.strings.size()), options.methods, options.idle_gap_ns,
    options.all_steps, options.estimate_unprofiled, options.logged_step_ns, options.capture_costs.has_value());
  if (options.capture_costs) w(*options.capture_costs);
  // The processes' ranks: a steps file may name them (the join sets them before attribution).
  w(static_cast<uint64_t>(profile.info.processes.size()));
  for (const auto& p : profile.info.processes) w(p.pid, p.rank, p.rank_source, p.host);
  w(static_cast<uint64_t>(options.nvtx_sites.size()));
  for (const auto& s : options.nvtx_sites) w(s.text, profile.strings[s.file], s.line, s.per_step);
  return std::move(w.bytes());
}

uint64_t callSitesDigest(const CallSiteTable* table) {
  if (!table) return 0;
  Writer w;
  w(static_cast<uint64_t>(table->functions.size()));
  for (const auto& f : table->functions) {
    w(f.name, f.first_line, f.def_line, f.last_line, static_cast<uint64_t>(f.calls.size()));
    for (const auto& c : f.calls) w(c.line, c.name, c.module_classes, c.object_call);
  }
  return model::checksum(model::kChecksumSeed, w.bytes().data(), w.bytes().size()) | 1;  // never 0
}

std::string encodeAttribution(const Attribution& attribution, const std::string& key, const CallSiteAnswers& answers) {
  Writer w;
  w.bytes().append(kMagic, sizeof kMagic);
  w(kFormat, layout(), key, answers, attribution);
  uint64_t sum = model::checksum(model::kChecksumSeed, w.bytes().data(), w.bytes().size());
  w(sum);
  return std::move(w.bytes());
}

std::optional<Attribution> decodeAttribution(std::string_view bytes, const std::string& key,
                                             const model::Profile& profile,
                                             const std::function<const CallSiteTable*(std::string_view)>& call_sites,
                                             std::string& error) {
  uint64_t sum = 0;
  if (bytes.size() < sizeof kMagic + sizeof sum || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    error = "not a cached attribution";
    return std::nullopt;
  }
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof sum, sizeof sum);
  std::string_view body = bytes.substr(0, bytes.size() - sizeof sum);
  if (model::checksum(model::kChecksumSeed, body.data(), body.size()) != sum) {
    error = "damaged (checksum)";
    return std::nullopt;
  }
  Reader r(body.substr(sizeof kMagic));
  uint32_t format = 0;
  std::string stored_layout, stored_key;
  r(format, stored_layout, stored_key);
  if (!r.ok() || format != kFormat || stored_layout != layout()) {
    error = "written by another build";
    return std::nullopt;
  }
  if (stored_key != key) {
    error = "made with other inputs";
    return std::nullopt;
  }
  CallSiteAnswers answers;
  r(answers);
  for (const auto& [path, digest] : answers)
    if (!r.ok() || callSitesDigest(call_sites ? call_sites(path) : nullptr) != digest) {
      error = "a script it was attributed with changed";
      return std::nullopt;
    }
  Attribution a;
  r(a);
  if (!r.ok() || r.left() != 0 || !valid(a, profile)) {
    error = "damaged (does not fit the profile)";
    return std::nullopt;
  }
  return a;
}

}  // namespace sightline::attribution
