// The attribution's values: the names of its kinds, and line costs added together.
#include <algorithm>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

bool isFp32MatmulKernel(std::string_view name) {
  if (name.find("tf32") != std::string_view::npos || name.find("tensorop") != std::string_view::npos) return false;
  return name.find("sgemm") != std::string_view::npos ||
         (name.find("gemm") != std::string_view::npos && name.find("f32f32_f32f32_f32") != std::string_view::npos) ||
         (name.find("gemm") != std::string_view::npos && name.find("ffma") != std::string_view::npos) ||
         name.find("convolve_sgemm") != std::string_view::npos;
}

std::vector<WaitLine> costliestFirst(const LineTally& tally) {
  std::vector<WaitLine> out;
  out.reserve(tally.size());
  for (const auto& [key, w] : tally) out.push_back(w);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.ns > y.ns; });
  return out;
}

const char* stepKindName(StepKind k) {
  switch (k) {
    case StepKind::Steady:
      return "steady";
    case StepKind::Warmup:
      return "warm-up";
    case StepKind::Outlier:
      return "outlier";
    case StepKind::Lost:
      return "lost";
  }
  return "?";
}

const char* waitName(Wait w) {
  switch (w) {
    case Wait::Launch:
      return "launch";
    case Wait::Sync:
      return "sync";
    case Wait::Input:
      return "input";
    case Wait::Host:
      return "host";
    case Wait::Compile:
      return "compile";
  }
  return "?";
}

const char* methodName(Method m) {
  switch (m) {
    case Method::Stack:
      return "stack";
    case Method::Op:
      return "op";
    case Method::Backward:
      return "backward";
    case Method::Inferred:
      return "inferred";
    case Method::Sample:
      return "sample";
    case Method::Nvtx:
      return "nvtx";
    case Method::Aligned:
      return "aligned";
    case Method::Function:
      return "function";
    case Method::Caller:
      return "caller";
  }
  return "?";
}

void addCost(LineCost& into, const LineCost& from) {
  for (const auto& f : from.fused_with)
    if (std::find(into.fused_with.begin(), into.fused_with.end(), f) == into.fused_with.end())
      into.fused_with.push_back(f);
  into.gpu_ns += from.gpu_ns;
  into.memory_peak_bytes += from.memory_peak_bytes;
  into.memory_reserved_bytes += from.memory_reserved_bytes;
  into.memory_kept_count += from.memory_kept_count;
  into.memory_kept_bytes += from.memory_kept_bytes;
  into.memory_kept_steps = std::max(into.memory_kept_steps, from.memory_kept_steps);
  for (size_t i = 0; i < into.memory_peak_by_phase.size(); ++i)
    into.memory_peak_by_phase[i] += from.memory_peak_by_phase[i];
  for (const auto& held : from.memory_peak_ops) {
    auto it = std::find_if(into.memory_peak_ops.begin(), into.memory_peak_ops.end(),
                           [&](const auto& o) { return o.first == held.first; });
    if (it == into.memory_peak_ops.end())
      into.memory_peak_ops.push_back(held);
    else
      it->second += held.second;
  }
  std::stable_sort(into.memory_peak_ops.begin(), into.memory_peak_ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  into.memory_step_bytes += from.memory_step_bytes;
  into.memory_step_allocations += from.memory_step_allocations;
  into.forward_ns += from.forward_ns;
  into.backward_ns += from.backward_ns;
  for (size_t m = 0; m < kMethodCount; ++m) into.by_method[m] += from.by_method[m];
  into.kernels += from.kernels;
  into.launches += from.launches;
  for (const auto& [name, stat] : from.by_name) {
    into.by_name[name].count += stat.count;
    into.by_name[name].ns += stat.ns;
  }
  into.memcpy_bytes += from.memcpy_bytes;
  into.pageable_bytes += from.pageable_bytes;
  into.memcpy_ns += from.memcpy_ns;
  for (size_t k = 0; k < into.memcpy_bytes_by_kind.size(); ++k)
    into.memcpy_bytes_by_kind[k] += from.memcpy_bytes_by_kind[k];
  into.memset_ns += from.memset_ns;
  into.memsets += from.memsets;
  into.sync_memcpy_bytes += from.sync_memcpy_bytes;
  into.sync_memcpy_ns += from.sync_memcpy_ns;
  into.sync_memcpys += from.sync_memcpys;
  into.idle_ns += from.idle_ns;
  into.idle_gaps += from.idle_gaps;
  into.compile_idle_ns += from.compile_idle_ns;
  into.sync_ns += from.sync_ns;
  into.syncs += from.syncs;
  for (const auto& [name, n] : from.sync_apis) into.sync_apis[name] += n;
  for (const auto& [name, n] : from.autograd_ops) into.autograd_ops[name] += n;
  if (into.rank_ns.size() < from.rank_ns.size()) into.rank_ns.resize(from.rank_ns.size());
  for (size_t r = 0; r < from.rank_ns.size(); ++r) into.rank_ns[r] += from.rank_ns[r];
  if (into.rank_syncs.size() < from.rank_syncs.size())
    into.rank_syncs.resize(from.rank_syncs.size()), into.rank_sync_ns.resize(from.rank_syncs.size());
  for (size_t r = 0; r < from.rank_syncs.size() && r < from.rank_sync_ns.size(); ++r)
    into.rank_syncs[r] += from.rank_syncs[r], into.rank_sync_ns[r] += from.rank_sync_ns[r];
  if (into.rank_wait_ns.size() < from.rank_wait_ns.size()) into.rank_wait_ns.resize(from.rank_wait_ns.size());
  for (size_t r = 0; r < from.rank_wait_ns.size(); ++r) into.rank_wait_ns[r] += from.rank_wait_ns[r];
  into.comm_ns += from.comm_ns;
  into.comm_exposed_ns += from.comm_exposed_ns;
  into.comm_wait_ns += from.comm_wait_ns;
  into.lost_launches += from.lost_launches;
  into.oneoff_inclusive_ns += from.oneoff_inclusive_ns;
}

}  // namespace sightline::attribution
