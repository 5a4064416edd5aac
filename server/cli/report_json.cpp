// The report as JSON (docs/report-json.md).
#include "server/cli/report_data.h"
#include "server/render/job_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/features/line_figures.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/step_view.h"
#include "analysis/features/story_verdict.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/source_alignment.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/cli/report_data.h"
#include "server/render/profile_text.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using attribution::LineCost;
using nlohmann::json;

json methodsJson(const std::array<int64_t, attribution::kMethodCount>& by_method) {
  json j = json::object();
  for (size_t m = 0; m < attribution::kMethodCount; ++m)
    j[attribution::methodName(static_cast<attribution::Method>(m))] = by_method[m];
  return j;
}

json topKernels(const model::Profile& p, const LineCost& c, size_t n) {
  std::vector<std::pair<int64_t, model::StringId>> v;
  for (const auto& [name, stat] : c.by_name) v.push_back({stat.ns, name});
  std::sort(v.rbegin(), v.rend());
  json out = json::array();
  for (size_t i = 0; i < v.size() && i < n; ++i)
    out.push_back({{"name", p.strings[v[i].second]}, {"count", c.by_name.at(v[i].second).count}, {"ns", v[i].first}});
  return out;
}

// The rank the others wait for in collectives, with the line it spends longest on beyond them.
json lateRankJson(const features::StepVerdict& v) {
  if (!v.late) return nullptr;
  json out = {{"label", v.late->label}, {"late_share", v.late->share}, {"caused_wait_ns", v.late->caused_ns}};
  if (!v.late->line.path.empty())
    out["line"] = {{"path", v.late->line.path}, {"line", v.late->line.line}, {"ns_per_step", v.late->line.ns}};
  return out;
}

json ranksJson(const attribution::Attribution& attr) {
  json out = json::array();
  for (const auto& row : features::rankRows(attr.ranks)) {
    const auto& r = *row.rank;
    out.push_back({{"label", r.label},
                   {"rank", r.rank >= 0 ? json(r.rank) : json(nullptr)},
                   {"pid", r.pid},
                   {"process", r.process},
                   {"host", r.host},
                   {"gpu_uuid", r.gpu_uuid},
                   {"rank_source", r.rank_source},
                   {"devices", r.devices},
                   {"gpu_ns", r.gpu_ns},
                   {"busy_ns", r.busy_ns},
                   {"span_ns", r.span_ns},
                   {"comm_ns", r.comm_ns},
                   {"comm_exposed_ns", r.comm_exposed_ns},
                   {"steps", r.steps},
                   {"median_step_ns", r.median_step_ns},
                   {"launches", r.launches},
                   {"lost_launches", r.lost_launches},
                   {"steady_steps", r.steady_steps},
                   {"steady_gpu_ns", r.steady_gpu_ns},
                   {"steady_wall_ns", r.steady_wall_ns},
                   {"steady_busy_ns", r.steady_busy_ns},
                   {"steady_comm_ns", r.steady_comm_ns},
                   {"steady_comm_exposed_ns", r.steady_comm_exposed_ns},
                   {"per_step", row.per_step},
                   {"gpu_ns_per_step", row.gpu_ns},
                   {"busy_share", row.busy_share},
                   {"comm_ns_per_step", row.comm_ns},
                   {"comm_exposed_ns_per_step", row.comm_exposed_ns},
                   {"comm_wait_ns", r.comm_wait_ns},
                   {"comm_transfer_ns", r.comm_transfer_ns},
                   {"paired_collectives", r.paired_collectives},
                   {"late_collectives", r.late_collectives},
                   {"steady_comm_wait_ns", r.steady_comm_wait_ns},
                   {"steady_comm_transfer_ns", r.steady_comm_transfer_ns},
                   {"steady_caused_wait_ns", r.steady_caused_wait_ns},
                   {"comm_wait_ns_per_step", row.paired ? json(row.comm_wait_ns) : json(nullptr)},
                   {"comm_transfer_ns_per_step", row.paired ? json(row.comm_transfer_ns) : json(nullptr)},
                   {"late_share", row.paired ? json(row.late_share) : json(nullptr)}});
  }
  return out;
}

json waitLinesJson(const model::Profile& p, const std::vector<attribution::WaitLine>& lines, size_t n) {
  json out = json::array();
  for (size_t i = 0; i < lines.size() && i < n; ++i)
    out.push_back({{"path", p.strings[lines[i].line.file]},
                   {"line", lines[i].line.line},
                   {"ns", lines[i].ns},
                   {"count", lines[i].count}});
  return out;
}

// torch.compile's generated code: how many Python stacks ran through it, how many reached the
// model's lines, and where the code was read from (or where the run kept it).
json generatedJson(const join::ProfileJoin& j) {
  const auto& g = j.compiled();
  json read = json::array();
  if (j.compiledCode())
    for (const auto& s : j.compiledCode()->sources) read.push_back(s);
  json substituted = json::array();
  for (const auto& [ran, found] : g.substituted) substituted.push_back({{"ran", ran}, {"found", found}});
  return {{"stacks", g.generated_marks},
          {"mapped", g.mapped_marks},
          {"backward", g.backward_marks},
          {"provenance", g.provenance},
          {"read_from", read},
          {"run_from", g.generated_dirs},
          {"missing_modules", g.missing_modules},
          {"lineless_modules", g.lineless_modules},
          {"substituted_modules", substituted},
          {"traced_calls", g.generated_calls},
          {"mapped_calls", g.mapped_calls}};
}

// torch.compile's compilations by compiled function (TORCH_TRACE records).
json compilesJson(const std::vector<join::CompiledFunctionSummary>& compiles) {
  json out = json::array();
  for (const auto& f : compiles) {
    json calls = json::array(), reasons = json::array(), breaks = json::array();
    for (const auto& c : f.calls) calls.push_back({{"path", c.file}, {"line", c.line}});
    for (const auto& r : f.recompile_reasons)
      reasons.push_back({{"guard", r.text}, {"count", r.count}, {"value_guard", r.value}});
    for (const auto& b : f.breaks)
      breaks.push_back({{"line", b.line}, {"reason", b.reason}, {"hint", b.hint}, {"count", b.count}});
    out.push_back({{"function", f.function.function},
                   {"path", f.function.file},
                   {"line", f.function.line},
                   {"calls", calls},
                   {"graphs", f.graphs},
                   {"compiles", f.compiles},
                   {"recompiles", f.recompiles},
                   {"seconds", f.seconds},
                   {"recompile_reasons", reasons},
                   {"graph_breaks", breaks},
                   {"recompile_limit", f.recompile_limit}});
  }
  return out;
}

// The steady steps replayed without the profiler (totals over the steady steps).
json unprofiledJson(const attribution::UnprofiledSteps& u) {
  json by_kind = json::object();
  for (size_t k = 0; k < model::kCaptureEventKinds; ++k)
    if (u.overhead_ns[k] > 0) by_kind[model::captureEventName(static_cast<model::CaptureEvent>(k))] = u.overhead_ns[k];
  json waits = json::object();
  for (size_t w = 0; w < attribution::kWaitCount; ++w)
    waits[attribution::waitName(static_cast<attribution::Wait>(w))] = u.wait_ns[w];
  return {{"estimated", u.estimated},
          {"overhead_ns", u.overhead_total_ns},
          {"overhead_by_event", by_kind},
          {"scale", u.scale},
          {"calibrated", u.calibrated},
          {"logged_step_ns", u.logged_step_ns},
          {"steps", u.steps},
          {"wall_ns", u.wall_ns},
          {"wall_min_ns", u.wall_min_ns},
          {"wall_max_ns", u.wall_max_ns},
          {"busy_ns", u.busy_ns},
          {"busy_share", u.busy_share},
          {"waits", waits}};
}

// The steps: each process's, with its kind, and the steady steps' summary.
json stepsJson(const model::Profile& p, const attribution::Attribution& attr) {
  const auto& s = attr.step_summary;
  json waits = json::object();
  for (size_t w = 0; w < attribution::kWaitCount; ++w)
    waits[attribution::waitName(static_cast<attribution::Wait>(w))] = {{"ns", s.wait_ns[w]},
                                                                       {"lines", waitLinesJson(p, s.wait_lines[w], 5)}};
  json processes = json::array();
  for (const auto& [pid, steps] : attr.process_steps) {
    json list = json::array();
    for (const auto& st : steps.list) {
      json j = {{"start_ns", st.start_ns}, {"end_ns", st.end_ns},   {"kind", attribution::stepKindName(st.kind)},
                {"gpu_ns", st.gpu_ns},     {"busy_ns", st.busy_ns}, {"kernels", st.kernels}};
      if (st.top_line.file != 0) j["top_line"] = {{"path", p.strings[st.top_line.file]}, {"line", st.top_line.line}};
      if (st.compile_ns > 0) j["compile_ns"] = st.compile_ns;
      list.push_back(j);
    }
    processes.push_back({{"pid", pid}, {"count", steps.count}, {"median_ns", steps.median_ns}, {"steps", list}});
  }
  return {{"steady", s.steady},
          {"warmup", s.warmup},
          {"outliers", s.outliers},
          {"lost", s.lost},
          {"median_steps", s.median_steps},
          {"lost_launches", s.lost_launches},
          {"busy_share", s.busy_share},
          {"all_steps", s.all_steps},
          {"wall_ns", s.wall_ns},
          {"wall_min_ns", s.wall_min_ns},
          {"wall_max_ns", s.wall_max_ns},
          {"busy_ns", s.busy_ns},
          {"gpu_ns", s.gpu_ns},
          {"kernels", s.kernels},
          {"kernel_ns", s.kernel_ns},
          {"launches", s.launches},
          {"launch_api_ns", s.launch_api_ns},
          {"queue_ns", s.queue_ns},
          {"fp32_matmul_ns", s.fp32_matmul_ns},
          {"triton_kernels", s.triton_kernels},
          {"triton_ns", s.triton_ns},
          {"compiled_lines", waitLinesJson(p, s.compiled_lines, 5)},
          {"graph_launches", s.graph_launches},
          {"sync_ns", s.sync_ns},
          {"sync_lines", waitLinesJson(p, s.sync_lines, 5)},
          {"waits", waits},
          {"oneoff_gpu_ns", s.oneoff_gpu_ns},
          {"oneoff_idle_ns", s.oneoff_idle_ns},
          {"oneoff_compile_ns", s.oneoff_compile_ns},
          {"unprofiled", unprofiledJson(s.unprofiled)},
          {"processes", processes}};
}

// The step verdict's JSON (docs/report-json.md).
// What the capture added per step, as the text's Profiler line says it: measured (the captured
// step less the step without the profiler from the same run or its log), else null.
json capturedAddedNs(const features::StepVerdict& v) {
  const auto& u = v.unprofiled;
  bool measured =
      u.wall_ns && (u.source == features::StepSource::Measured || u.source == features::StepSource::StepLog);
  return measured ? json(u.added_ns) : json(nullptr);
}

json verdictJson(const features::StepVerdict& v) {
  auto placed = [](const std::vector<join::PlacedLine>& lines) {
    json out = json::array();
    for (const auto& l : lines) out.push_back({{"path", l.path}, {"line", l.line}, {"ns", l.ns}, {"count", l.count}});
    return out;
  };
  json causes = json::array(), changes = json::array();
  for (const auto& c : v.causes)
    causes.push_back({{"cause", features::causeName(c.kind)},
                      {"bound", features::boundName(c.kind)},
                      {"ns_per_step", c.ns},
                      {"captured_ns_per_step", c.captured_ns},
                      {"measured", c.measured},
                      {"lines", placed(c.lines)}});
  for (const auto& c : v.changes)
    changes.push_back(
        {{"change", features::changeName(c.change)}, {"ns_per_step", c.ns}, {"text", features::changeText(c, v)}});
  const auto& cap = v.capture;
  json by_event = json::object();
  for (const auto& [e, ns] : cap.by_event) by_event[model::captureEventName(e)] = ns;
  return {{"bound", features::boundName(v.bound)},
          {"captured_bound", features::boundName(cap.captured_bound)},
          {"capture_estimated", cap.estimated},
          {"estimate_applied", cap.applied},
          // What the text says the capture added: the difference where the step was measured or
          // logged, else null (the text then gives only capture_overhead_max_ns); the cost model's
          // own figure apart, as the model's.
          {"capture_overhead_ns", capturedAddedNs(v)},
          {"capture_overhead_max_ns", v.unprofiled.added_max_ns},
          {"model_capture_overhead_ns", cap.estimated ? json(cap.overhead_ns) : json(nullptr)},
          {"capture_overhead_by_event", by_event},
          {"light_capture_overhead_ns", cap.light_overhead_ns},
          {"unprofiled", unprofiledStepJson(v)},
          {"unprofiled_wall_ns", v.unprofiled.wall_ns ? json(*v.unprofiled.wall_ns) : json(nullptr)},
          {"unprofiled_busy_share",
           v.unprofiled.wall_ns && v.unprofiled.busy_known ? json(v.unprofiled.busy_share) : json(nullptr)},
          {"model_wall_ns", cap.estimated ? json(cap.wall_ns) : json(nullptr)},
          {"calibrated", cap.calibrated},
          {"logged_step_ns", cap.calibrated ? json(cap.logged_step_ns) : json(nullptr)},
          {"confidence", v.low_confidence ? "low" : "normal"},
          {"confidence_reason", features::confidenceReason(v)},
          {"lost_steps", v.lost_steps},
          {"busy_share", v.busy_share},
          {"idle_ns_per_step", v.low_confidence ? json(nullptr) : json(v.idle_ns)},
          {"wall_ns", v.wall_ns},
          {"comm_exposed_ns_per_step", v.comm_exposed_ns},
          {"comm_wait_ns_per_step", v.comm_paired ? json(v.comm_wait_ns) : json(nullptr)},
          {"comm_transfer_ns_per_step", v.comm_paired ? json(v.comm_transfer_ns) : json(nullptr)},
          {"comm_exposed_wait_ns_per_step", v.comm_paired ? json(v.comm_exposed_wait_ns) : json(nullptr)},
          {"late_rank", lateRankJson(v)},
          {"causes", causes},
          {"changes", changes},
          {"as_captured", v.as_captured}};
}

json memoryPlaceJson(const join::MemoryPlace& p) {
  json j = {{"path", p.path}, {"line", p.line}};
  if (!p.function.empty()) j["function"] = p.function;
  return j;
}

// The memory object (docs/report-json.md): the peak, what holds it, an out-of-memory error.
json memoryJson(const join::MemoryStory& m) {
  auto withBytes = [](const std::vector<join::MemoryPlace>& places) {
    json out = json::array();
    for (const auto& p : places) {
      json j = memoryPlaceJson(p);
      j["bytes"] = p.bytes;
      out.push_back(std::move(j));
    }
    return out;
  };
  json top = withBytes(m.top), growth = withBytes(m.growth);
  json doc = {{"source", m.source},
              {"device", m.device},
              {"devices", m.devices},
              {"peak_allocated_bytes", m.allocated_known ? json(m.peak_allocated_bytes) : json(nullptr)},
              {"pool_growth_bytes", m.pool_growth_bytes},
              {"pool_growth_lines", growth},
              {"peak_reserved_bytes", m.peak_reserved_bytes},
              {"allocated_before_trace_bytes", m.allocated_before_trace_bytes},
              {"unattributed_at_peak_bytes", m.unattributed_bytes},
              {"peak_phase",
               m.peak_phase == attribution::MemoryPhase::Unknown ? json(nullptr) : json(join::phaseName(m.peak_phase))},
              {"steps", m.steps},
              {"peak_step", m.peak_step > 0 ? json(m.peak_step) : json(nullptr)},
              {"steady_steps", m.steady_steps},
              {"top_lines", top},
              {"oom", nullptr}};
  if (m.oom) {
    json stack = json::array();
    for (const auto& f : m.oom->chain) stack.push_back(memoryPlaceJson(f));
    doc["oom"] = {{"path", m.oom->where.path.empty() ? json(nullptr) : json(m.oom->where.path)},
                  {"line", m.oom->where.line},
                  {"requested_bytes", m.oom->requested_bytes},
                  {"free_bytes", m.oom->free_bytes},
                  {"stack", stack}};
  }
  return doc;
}

// A line's GPU memory: bytes at the peak (by pass and operator), per steady step, pool growth.
void addLineMemory(json& jl, const join::MemoryStory& m, const LineCost& c, const model::Profile& profile) {
  if (m.allocated_known) {
    jl["memory_at_peak_bytes"] = c.memory_peak_bytes;
    const auto& ph = c.memory_peak_by_phase;
    if (ph[0] + ph[1] + ph[2] > 0)
      jl["memory_at_peak_by_phase"] = {{"forward", ph[0]}, {"backward", ph[1]}, {"optimizer", ph[2]}};
    if (!c.memory_peak_ops.empty()) {
      json ops = json::array();
      for (size_t i = 0; i < c.memory_peak_ops.size() && i < 5; ++i)
        ops.push_back({{"op", profile.strings[c.memory_peak_ops[i].first]}, {"bytes", c.memory_peak_ops[i].second}});
      jl["memory_at_peak_ops"] = ops;
    }
  }
  if (m.steady_steps > 0) {
    jl["memory_per_step_bytes"] = c.memory_step_bytes;
    jl["memory_per_step_allocations"] = c.memory_step_allocations;
  }
  if (m.pool_growth_bytes > 0) jl["memory_reserved_bytes"] = c.memory_reserved_bytes;
}

// Whether any line of a file has a cost other than GPU time: host waits, idle gaps, memory.
bool hasCost(const std::map<int32_t, LineCost>& lines) {
  return std::any_of(lines.begin(), lines.end(), [](const auto& entry) {
    const LineCost& c = entry.second;
    return c.sync_ns > 0 || c.idle_ns > 0 || c.oneoff_ns > 0 || c.oneoff_inclusive_ns > 0 || c.memory_peak_bytes > 0 ||
           c.memory_reserved_bytes > 0 || c.memory_step_bytes > 0;
  });
}

// The compared profile (--compare): its totals and its lines per file, and how files were aligned.
json compareJson(const ReportData& d) {
  json files_before = json::array();
  for (const auto& [local, lines] : d.compare_lines) {
    json jl = json::array();
    for (const auto& [line, ns] : lines) jl.push_back({{"line", line}, {"gpu_ns", ns}});
    files_before.push_back({{"local_path", local}, {"lines", jl}});
  }
  json aligned = json::object();
  for (const auto& [local, how] : d.compare_aligned) aligned[local] = how;
  return {{"path", d.args.compare_path},
          {"total_gpu_ns", d.compare->attribution().total_gpu_ns},
          {"steady_gpu_ns", d.compare->attribution().steady_gpu_ns},
          {"steps", d.compare->attribution().steps},
          {"files", files_before},
          {"aligned", aligned}};
}

// One line of a file: its counts, the figures every surface shows (line_figures.h), its work by
// kind, memory, and each rank's part.
json lineJson(const ReportData& d, const attribution::LineCost& c, int32_t line, const features::Inclusive& incl,
              const features::Scale& scale) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  double total = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  json out = {{"line", line},
              {"gpu_ns", c.gpu_ns},
              {"forward_ns", c.forward_ns},
              {"backward_ns", c.backward_ns},
              {"by_method", methodsJson(c.by_method)},
              {"kernels", c.kernels},
              {"launches", c.launches},
              {"memcpy_bytes", c.memcpy_bytes},
              {"memcpy_pageable_bytes", c.pageable_bytes},
              {"memcpy_ns", c.memcpy_ns},
              {"memset_ns", c.memset_ns},
              {"sync_ns", c.sync_ns},
              {"syncs", c.syncs},
              {"idle_ns", c.idle_ns},
              {"idle_gaps", c.idle_gaps},
              {"comm_ns", c.comm_ns},
              {"comm_exposed_ns", c.comm_exposed_ns},
              {"lost_launches", c.lost_launches},
              {"inclusive_ns", incl.gpu_ns},
              {"inclusive_forward_ns", incl.forward_ns},
              {"inclusive_backward_ns", incl.backward_ns},
              {"oneoff_ns", c.oneoff_ns},
              {"oneoff_idle_ns", c.oneoff_idle_ns},
              {"oneoff_inclusive_ns", c.oneoff_inclusive_ns},
              // The figures every surface shows, by the rules of line_figures.h.
              {"share", static_cast<double>(c.gpu_ns) / total},
              {"inclusive_share", static_cast<double>(incl.gpu_ns) / total},
              {"inclusive_shown", features::showsInclusive(static_cast<double>(c.gpu_ns) / scale.divisor,
                                                           static_cast<double>(incl.gpu_ns) / scale.divisor)},
              {"oneoff_marked", features::marksOneoff(c.oneoff_inclusive_ns, attr.step_summary.oneoff_gpu_ns)},
              {"top_kernels", topKernels(profile, c, 5)}};
  if (auto kinds = features::workByKind(c, profile.strings); kinds.size() >= 2) {
    json k = json::array();
    for (const auto& w : kinds) k.push_back({{"kind", w.kind}, {"ns", w.ns}, {"count", w.count}, {"share", w.share}});
    out["work_by_kind"] = std::move(k);
  }
  if (const auto& story = d.main.memory().story) addLineMemory(out, *story, c, profile);
  if (attr.ranks.size() > 1) {
    std::vector<int64_t> per_rank = c.rank_ns;
    per_rank.resize(attr.ranks.size());
    out["rank_ns"] = per_rank;
    // The slowest rank by its own work, as the margin's and the hover's (line_figures.h).
    if (auto slow = features::slowestRank(c, attr.ranks, scale); slow.ranked)
      out["slowest_rank"] = {{"rank", attr.ranks[slow.rank].label}, {"ratio", slow.ratio}, {"shown", slow.shown}};
  }
  return out;
}

// Every file the profile names that carries a cost: its lines and their figures (and, with
// --compare, each line's change).
json filesJson(const ReportData& d, const std::vector<MemoryChange>& memory_change_list) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  auto inclusive = features::inclusiveByLine(attr);
  features::Scale scale{d.args.total || attr.steps <= 0 ? 1.0 : static_cast<double>(attr.steps),
                        !d.args.total && attr.steps > 0};
  // --compare of two profiles that tell memory: each line's change (JSON also lists the lines
  // only the compared profile has, under `memory_compare`).
  std::map<std::pair<std::string, int32_t>, MemoryChange> changes;
  for (const auto& c : memory_change_list) changes[{c.path, c.line}] = c;
  const auto* memory_changes = comparesMemory(d) ? &changes : nullptr;
  json jfiles = json::array();
  for (const auto& m : d.mapped) {
    json jlines = json::array();
    int64_t file_ns = 0;
    const std::map<int32_t, int64_t>* before = nullptr;
    if (comparesTimes(d) && m.local_path) {
      auto it = d.compare_lines.find(absolutePath(*m.local_path));
      static const std::map<int32_t, int64_t> kNone;
      before = it == d.compare_lines.end() ? &kNone : &it->second;
    }
    // Lines with time of their own, and lines with work beneath them only (`model(x)`).
    std::map<int32_t, LineCost> lines_here = attr.files.at(m.profile_file);
    const auto& inc_here = inclusive[m.profile_file];
    for (const auto& [line, inc] : inc_here) lines_here[line];
    // A named file changed since it was profiled: its lines where the join moved them, none on a
    // line without code (join/source_alignment.h).
    const cli::NamedFile* named = nullptr;
    int32_t moved_by = 0;
    if (m.local_path) {
      std::string absolute = absolutePath(*m.local_path);
      for (const auto& src : d.sources)
        if (src.absolute == absolute) named = &src;
      if (auto it = d.measured.find(absolute); it != d.measured.end()) moved_by = it->second.realigned_by;
    }
    for (const auto& [profiled_line, c] : lines_here) {
      int32_t line = profiled_line + moved_by;
      if (named && !join::isCodeLine(*named->file, line)) continue;
      auto inc = inc_here.find(profiled_line);
      file_ns += c.gpu_ns;
      features::Inclusive incl =
          inc == inc_here.end() ? features::Inclusive{c.gpu_ns, c.forward_ns, c.backward_ns} : inc->second;
      jlines.push_back(lineJson(d, c, line, incl, scale));
      if (memory_changes && m.local_path) {
        auto change = memory_changes->find({absolutePath(*m.local_path), line});
        if (change != memory_changes->end()) {
          jlines.back()["memory_change_bytes"] = change->second.peakChange();
          jlines.back()["memory_per_step_change_bytes"] = change->second.stepChange();
        }
      }
      if (before) {
        auto b = before->find(line);
        jlines.back()["compare_gpu_ns"] = b == before->end() ? 0 : b->second;
      }
    }
    // A file the profile names but puts no cost on (GPU, host waits, idle gaps, memory) says nothing.
    if (file_ns == 0 && inc_here.empty() && !hasCost(attr.files.at(m.profile_file))) continue;
    jfiles.push_back({{"path", profile.strings[m.profile_file]},
                      {"local_path", m.local_path ? json(*m.local_path) : json(nullptr)},
                      {"gpu_ns", file_ns},
                      {"lines", jlines}});
    if (moved_by != 0) jfiles.back()["realigned_by"] = moved_by;
  }
  return jfiles;
}

// --compare of two profiles that tell memory: the peaks and every line with memory in either.
json memoryCompareJson(const ReportData& d, const std::vector<MemoryChange>& changes) {
  const auto& before = *d.compare->memory().story;
  const auto& now = *d.main.memory().story;
  json lines = json::array();
  for (const auto& c : changes)
    lines.push_back({{"path", c.path},
                     {"line", c.line},
                     {"before_bytes", c.peak_before},
                     {"after_bytes", c.peak_after},
                     {"memory_change_bytes", c.peakChange()},
                     {"per_step_before_bytes", c.step_before},
                     {"per_step_after_bytes", c.step_after},
                     {"memory_per_step_change_bytes", c.stepChange()}});
  return {{"path", d.args.compare_path},
          {"peak_allocated_before_bytes", before.peak_allocated_bytes},
          {"peak_allocated_bytes", now.peak_allocated_bytes},
          {"peak_change_bytes", now.peak_allocated_bytes - before.peak_allocated_bytes},
          {"peak_reserved_before_bytes", before.peak_reserved_bytes},
          {"peak_reserved_bytes", now.peak_reserved_bytes},
          {"lines", lines}};
}

}  // namespace

json reportJson(const ReportData& d) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  auto memory_changes = memoryChanges(d);
  json jfiles = filesJson(d, memory_changes);
  json doc = {{"profile",
               {{"path", d.args.profile_paths.front()},
                {"parts", d.args.profile_paths},
                {"format", profile.info.format},
                {"tool_version", profile.info.tool_version},
                {"schema_version", profile.info.schema_version},
                {"gpus", profile.info.gpus},
                {"capabilities", profile.info.capabilities},
                {"warnings", profileWarnings(attr, profile.info)}}},
              {"warnings", profileWarnings(attr, profile.info)},
              {"total_gpu_ns", attr.total_gpu_ns},
              {"steady_gpu_ns", attr.steady_gpu_ns},
              {"attributed_gpu_ns", attr.attributed_gpu_ns},
              {"unattributed_gpu_ns", attr.unattributed_gpu_ns},
              {"steps", attr.steps},
              {"steps_per_rank", attr.steps_per_rank},
              {"step_ranks", attr.step_ranks},
              {"steps_source", attr.steps_source},
              {"step_summary", stepsJson(profile, attr)},
              {"by_method", methodsJson(attr.by_method)},
              {"ranks", ranksJson(attr)},
              {"processes", attr.processes},
              {"comm_ns", attr.comm_ns},
              {"comm_exposed_ns", attr.comm_exposed_ns},
              {"launches", attr.launches},
              {"lost_launches", attr.lost_launches},
              {"files", jfiles}};
  if (d.main.compiled().generated_marks > 0 || d.main.compiled().generated_calls > 0)
    doc["generated_code"] = generatedJson(d.main);
  if (!d.main.compiles().empty()) doc["compiles"] = compilesJson(d.main.compiles());
  if (const auto& logs = d.main.compileLogs(); !logs.read.empty() || !logs.set_aside.empty()) {
    json aside = json::array();
    for (const auto& a : logs.set_aside) aside.push_back({{"log", a.log}, {"reason", a.reason}});
    doc["compile_logs"] = {{"read", logs.read}, {"set_aside", aside}};
  }
  if (auto v = reportVerdict(d)) doc["verdict"] = verdictJson(*v);
  if (!d.summaries.empty()) doc["rank_summaries"] = rankSummariesJson(d.summaries)["summaries"];
  if (d.job) doc["job"] = jobJson(*d.job, d.summaries);
  if (const auto& memory = d.main.memory().story) doc["memory"] = memoryJson(*memory);
  bool memory_placed =
      d.main.memory().story && (!d.main.memory().story->top.empty() || !d.main.memory().story->growth.empty());
  if (attr.attributed_gpu_ns == 0 && !memory_placed) doc["advice"] = ingest::captureAdvice(profile.info);
  if (comparesTimes(d)) doc["compare"] = compareJson(d);
  if (comparesMemory(d)) doc["memory_compare"] = memoryCompareJson(d, memory_changes);
  // The step view's figures, as the HTML report and the editor draw them (the timeline's spans
  // and the memory series only there: thousands of points).
  features::StepViewOptions view_options;
  view_options.verdict = d.verdict ? &*d.verdict : nullptr;
  doc["step_view"] = stepViewJson(features::computeStepView(d.main, view_options),
                                  stepViewSource(d.main, d.args.profile_paths.front()));
  doc["step_view"].erase("timelines");
  if (doc["step_view"]["memory"].is_object()) {
    doc["step_view"]["memory"].erase("series");
    doc["step_view"]["memory"].erase("stepSeries");
  }
  return doc;
}

}  // namespace sightline::server::report
