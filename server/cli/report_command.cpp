// The report verb: load -> attribute -> map profile paths to local files -> print.
// Text output prints every line of each file with a left margin: time per step (or total),
// share of all GPU time, forward/backward split, a bar; def and loop header lines also show
// the roll-up of their bodies.
#include "server/cli/report_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/features/profile_view.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/profile_text.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;
using attribution::LineCost;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline report --profile PROFILE [options] [FILE...]\n"
    "\n"
    "Puts the GPU time of a profile on the lines of Python files. PROFILE is an nsys SQLite\n"
    "export (nsys export --type sqlite --include-blobs=true), a .nsys-rep (needs nsys on PATH),\n"
    "or a PyTorch profiler trace (.json or .json.gz, from export_chrome_trace).\n"
    "\n"
    "options:\n"
    "  --profile PATH      the profile to read (required); repeat it for the reports of one run's\n"
    "                      ranks (nsys profile -o run_%q{RANK}): one multi-rank profile\n"
    "  --merge JSON        add up `report --format json` outputs of single ranks (repeatable), for\n"
    "                      jobs whose reports stay where they were made; prints the merged JSON\n"
    "  --format text|json  annotated source (default) or JSON for every file (docs/report-json.md)\n"
    "  --total             times over the whole profile instead of per step\n"
    "  --all-lines         print every line of files over 150 lines (default: the lines with costs)\n"
    "  --all-steps         count every step: warm-up and outlier steps (evaluation, checkpoints)\n"
    "                      are left out of per-step figures unless this is given\n"
    "  --compare PATH      a second profile (before a change): adds each line's change from it\n"
    "  --map FROM=TO       map profile paths starting with FROM onto TO (repeatable)\n"
    "  --timing LIGHT      a light capture of the same script (nsys -t cuda,nvtx, no stacks or ranges):\n"
    "                      the step's figures come from it, the lines from --profile\n"
    "  --step-log FILE     the script's own log of a run without the profiler (iteration lines with\n"
    "                      a time): its step measures what the capture added to the step\n"
    "  --compiled-code DIR torch.compile's generated code: an Inductor cache folder\n"
    "                      (TORCHINDUCTOR_CACHE_DIR) or a TORCH_TRACE folder (repeatable); without\n"
    "                      it the folder the run used, ones under the current directory and\n"
    "                      /tmp/torchinductor_$USER are tried\n"
    "  -h, --help          this help\n"
    "\n"
    "Profile paths are mapped onto FILEs by longest common path suffix, then onto files under\n"
    "the current directory. NVTX ranges that a FILE opens (torch.cuda.nvtx.range(\"fwd\"), ...)\n"
    "charge the GPU work inside them to the opening line when nothing finer is known.\n"
    "\n"
    "Reports of several processes (torchrun, DDP) show every GPU and a table of ranks; lines\n"
    "carry their time per rank (JSON `rank_ns`) and NCCL communication (`comm_ns`, exposed\n"
    "`comm_exposed_ns`). Launches whose GPU records are missing (a capture that ended the app)\n"
    "are counted and warned about.\n";

std::string formatPercent(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

// Pads to `width` terminal cells (UTF-8 code points, so bars and Σ count once).
std::string pad(const std::string& s, size_t width, bool left = false) {
  size_t cells = 0;
  for (unsigned char c : s) cells += (c & 0xC0) != 0x80;
  if (cells >= width) return s;
  return left ? s + std::string(width - cells, ' ') : std::string(width - cells, ' ') + s;
}

std::string bar(double share) {
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  int eighths = static_cast<int>(std::lround(share * 10 * 8));  // 10 cells = 100%
  std::string out;
  for (int i = 0; i < eighths / 8; ++i) out += "█";
  out += kEighths[eighths % 8];
  return out;
}

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

struct MappedFile {
  model::StringId profile_file;
  std::optional<std::string> local_path;
};

struct ReportArgs {
  std::vector<std::string> profile_paths;  // one, or one report per rank of a run
  std::string profile_path;                // as shown: the paths, joined
  std::string compare_path, format = "text";
  std::vector<std::string> merge_paths;    // --merge: JSON reports to add up
  std::vector<std::string> compiled_code;  // --compiled-code: Inductor cache / TORCH_TRACE folders
  std::string step_log;                    // --step-log: a log of the script run without the profiler
  std::string timing_path;                 // --timing: a light capture of the same script
  bool total = false, all_steps = false;
  bool all_lines = false;  // --all-lines: every line of a long file, not only those with costs
  std::vector<std::string> files;
  attribution::PathMapper mapper;
};

// What the report prints: the joined profile(s), and per named file what was measured there.
struct ReportData {
  const ReportArgs& args;
  const join::ProfileJoin& main;
  const join::ProfileJoin* compare;
  const std::vector<cli::NamedFile>& sources;
  std::vector<MappedFile> mapped;  // every profile file, with the local file it maps onto
  // The compare profile's costs per local file (absolute path -> 1-based line -> ns).
  std::map<std::string, std::map<int32_t, int64_t>> compare_lines;
  // Per local file whose lines the compare profile measured in another version of the script:
  // how its lines were matched.
  std::map<std::string, std::string> compare_aligned;
  std::map<std::string, join::FileCosts> measured;  // absolute path -> the file's costs
};

// The step verdict, with what the named files' DataLoader already asks for (the first file that
// makes one), so its advice names only what is missing.
std::optional<features::StepVerdict> reportVerdict(const ReportData& d) {
  auto v = features::stepVerdict(d.main.story().get());
  if (!v) return v;
  for (const auto& f : d.sources)
    if (auto loader = features::loaderSettings(*f.index)) {
      v->loader = loader;
      break;
    }
  // Named scripts none of which makes a DataLoader: advice about its workers would not apply.
  v->no_loader = !d.sources.empty() && std::none_of(d.sources.begin(), d.sources.end(), [](const cli::NamedFile& f) {
    return f.file->text().find("DataLoader") != std::string::npos;
  });
  return v;
}

// Files longer than this print their lines with costs only, unless --all-lines.
constexpr uint32_t kWholeFileLines = 150;

std::optional<int> parseReportArgs(const std::vector<std::string>& args, ReportArgs& into, std::ostream& out,
                                   std::ostream& err) {
  cli::CommandLine command_line("report", kUsage);
  command_line
      .option("--profile",
              [&into](const std::string& v) {
                into.profile_paths.push_back(v);
                into.profile_path += (into.profile_path.empty() ? "" : ", ") + v;
                return std::string();
              })
      .option("--merge",
              [&into](const std::string& v) {
                into.merge_paths.push_back(v);
                return std::string();
              })
      .option("--format", cli::choiceInto(into.format, {"text", "json"}, "format"))
      .option("--compare", cli::valueInto(into.compare_path))
      .option("--step-log", cli::valueInto(into.step_log))
      .option("--timing", cli::valueInto(into.timing_path))
      .flag("--total", [&into] { into.total = true; })
      .flag("--all-steps", [&into] { into.all_steps = true; })
      .flag("--all-lines", [&into] { into.all_lines = true; })
      .option("--map", cli::mapRuleInto(into.mapper))
      .option("--compiled-code",
              [&into](const std::string& v) {
                into.compiled_code.push_back(v);
                return std::string();
              })
      .positional(&into.files);
  if (auto code = command_line.parse(args, out, err)) return code;
  if (!into.merge_paths.empty()) {
    if (!into.profile_paths.empty() || into.format != "json") {
      err << "sightline report: --merge takes JSON reports only, and prints JSON (--format json)\n";
      return 2;
    }
    return std::nullopt;
  }
  if (into.profile_path.empty()) {
    err << "sightline report: --profile is required\n" << kUsage;
    return 2;
  }
  if (into.format == "text" && into.files.empty()) {
    err << "sightline report: name the Python file(s) to annotate, or use --format json\n";
    return 2;
  }
  return std::nullopt;
}

std::string absolutePath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).string();
}

void joinNamedFiles(ReportData& data) {
  for (const auto& [file, lines] : data.main.attribution().files)
    data.mapped.push_back({file, data.main.localPathOf(file)});
  for (const auto& src : data.sources) {
    auto joined = join::joinFile(data.main, data.compare, src.absolute, *src.file, *src.index);
    data.measured[src.absolute] = joined.measured;
    // A compare profile with nothing on this file says nothing about it.
    if (!joined.has_compare || (joined.compare.lines.empty() && joined.compare_alignment.empty())) continue;
    if (!joined.compare_alignment.empty()) data.compare_aligned[src.absolute] = joined.compare_alignment;
    auto& into = data.compare_lines[src.absolute];
    for (const auto& [line, c] : joined.compare.lines) into[line] += c.gpu_ns;
  }
}

// Inclusive time per profile file and line: each piece of work once per line it ran beneath.
std::map<model::StringId, std::map<int32_t, features::Inclusive>> inclusiveByLine(const attribution::Attribution& a) {
  std::map<model::StringId, std::map<int32_t, features::Inclusive>> out;
  for (const auto& cc : a.context_costs)
    for (const auto& f : a.contexts[cc.context]) {
      auto& inc = out[f.file][f.line];
      inc.gpu_ns += cc.gpu_ns, inc.forward_ns += cc.forward_ns, inc.backward_ns += cc.backward_ns;
    }
  return out;
}

// The step verdict's JSON (docs/report-json.md).
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
          {"capture_overhead_ns", cap.overhead_ns},
          {"capture_overhead_by_event", by_event},
          {"light_capture_overhead_ns", cap.light_overhead_ns},
          {"unprofiled_wall_ns", cap.estimated ? json(cap.wall_ns) : json(nullptr)},
          {"unprofiled_busy_share", cap.estimated ? json(cap.busy_share) : json(nullptr)},
          {"calibrated", cap.calibrated},
          {"logged_step_ns", cap.calibrated ? json(cap.logged_step_ns) : json(nullptr)},
          {"confidence", v.low_confidence ? "low" : "normal"},
          {"confidence_reason", confidenceReason(v)},
          {"lost_steps", v.lost_steps},
          {"busy_share", v.busy_share},
          {"wall_ns", v.wall_ns},
          {"comm_exposed_ns_per_step", v.comm_exposed_ns},
          {"comm_wait_ns_per_step", v.comm_paired ? json(v.comm_wait_ns) : json(nullptr)},
          {"comm_transfer_ns_per_step", v.comm_paired ? json(v.comm_transfer_ns) : json(nullptr)},
          {"comm_exposed_wait_ns_per_step", v.comm_paired ? json(v.comm_exposed_wait_ns) : json(nullptr)},
          {"late_rank", lateRankJson(v)},
          {"causes", causes},
          {"changes", changes}};
}

json reportJson(const ReportData& d) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  auto inclusive = inclusiveByLine(attr);
  json jfiles = json::array();
  for (const auto& m : d.mapped) {
    json jlines = json::array();
    int64_t file_ns = 0;
    const std::map<int32_t, int64_t>* before = nullptr;
    if (d.compare && m.local_path) {
      auto it = d.compare_lines.find(absolutePath(*m.local_path));
      static const std::map<int32_t, int64_t> kNone;
      before = it == d.compare_lines.end() ? &kNone : &it->second;
    }
    // Lines with time of their own, and lines with work beneath them only (`model(x)`).
    std::map<int32_t, LineCost> lines_here = attr.files.at(m.profile_file);
    const auto& inc_here = inclusive[m.profile_file];
    for (const auto& [line, inc] : inc_here) lines_here[line];
    for (const auto& [line, c] : lines_here) {
      file_ns += c.gpu_ns;
      auto inc = inc_here.find(line);
      features::Inclusive incl =
          inc == inc_here.end() ? features::Inclusive{c.gpu_ns, c.forward_ns, c.backward_ns} : inc->second;
      jlines.push_back({{"line", line},
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
                        {"top_kernels", topKernels(profile, c, 5)}});
      if (attr.ranks.size() > 1) {
        std::vector<int64_t> per_rank = c.rank_ns;
        per_rank.resize(attr.ranks.size());
        jlines.back()["rank_ns"] = per_rank;
      }
      if (before) {
        auto b = before->find(line);
        jlines.back()["compare_gpu_ns"] = b == before->end() ? 0 : b->second;
      }
    }
    // A file the profile names but puts no cost on (GPU, host waits, idle gaps) says nothing.
    bool any = file_ns > 0;
    for (const auto& [line, c] : attr.files.at(m.profile_file))
      any = any || c.sync_ns > 0 || c.idle_ns > 0 || c.oneoff_ns > 0;
    any = any || !inc_here.empty();
    if (!any) continue;
    jfiles.push_back({{"path", profile.strings[m.profile_file]},
                      {"local_path", m.local_path ? json(*m.local_path) : json(nullptr)},
                      {"gpu_ns", file_ns},
                      {"lines", jlines}});
  }
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
  if (auto v = reportVerdict(d)) doc["verdict"] = verdictJson(*v);
  if (attr.attributed_gpu_ns == 0) doc["advice"] = ingest::captureAdvice(profile.info);
  if (d.compare) {
    json files_before = json::array();
    for (const auto& [local, lines] : d.compare_lines) {
      json jl = json::array();
      for (const auto& [line, ns] : lines) jl.push_back({{"line", line}, {"gpu_ns", ns}});
      files_before.push_back({{"local_path", local}, {"lines", jl}});
    }
    json aligned = json::object();
    for (const auto& [local, how] : d.compare_aligned) aligned[local] = how;
    doc["compare"] = {{"path", d.args.compare_path},
                      {"total_gpu_ns", d.compare->attribution().total_gpu_ns},
                      {"steady_gpu_ns", d.compare->attribution().steady_gpu_ns},
                      {"steps", d.compare->attribution().steps},
                      {"files", files_before},
                      {"aligned", aligned}};
  }
  return doc;
}

// Each profile per its own steps, when both know them (and --total is not given).
bool comparePerStep(const ReportData& d) {
  return !d.args.total && d.main.attribution().steps > 0 && d.compare && d.compare->attribution().steps > 0;
}

// "2 × NVIDIA H200", or each name once per GPU kind.
std::string gpuList(const std::vector<std::string>& gpus) {
  std::vector<std::pair<std::string, int>> kinds;
  for (const auto& g : gpus) {
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == g; });
    if (it == kinds.end())
      kinds.emplace_back(g, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [name, n] : kinds)
    out += (out.empty() ? "" : ", ") + (n > 1 ? std::to_string(n) + " × " : "") + name;
  return out;
}

// GPUs, processes and, for several processes with GPU work, the table of ranks.
void writeMachine(const ReportData& d, std::ostream& out) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  if (!profile.info.gpus.empty()) out << "GPUs      " << gpuList(profile.info.gpus) << "\n";
  if (attr.ranks.size() <= 1) return;
  bool recorded = std::all_of(attr.ranks.begin(), attr.ranks.end(), [](const auto& r) { return r.rank >= 0; });
  out << "Ranks     " << attr.ranks.size() << " (" << attr.processes << " processes, " << attr.ranks.size()
      << " with GPU work" << (recorded ? "" : "; no distributed rank recorded, named by GPU") << ")\n";
  auto rows = features::rankRows(attr.ranks);
  bool per_step = std::all_of(rows.begin(), rows.end(), [](const auto& r) { return r.per_step; });
  std::string unit = per_step ? " ms/step" : " ms";
  bool paired = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.paired; });
  out << "          " << pad("rank", 10, true) << pad("GPU" + unit, 13) << pad("busy", 8) << pad("comm" + unit, 14)
      << pad("exposed", 10) << (paired ? pad("waiting", 9) + pad("moving", 8) + pad("last in", 9) : "")
      << pad("steps", 7) << pad("median step", 13) << "\n";
  for (const auto& row : rows) {
    const auto& r = *row.rank;
    out << "          " << pad(r.label, 10, true) << pad(features::formatMilliseconds(row.gpu_ns), 13)
        << pad(formatPercent(row.busy_share), 8) << pad(features::formatMilliseconds(row.comm_ns), 14)
        << pad(features::formatMilliseconds(row.comm_exposed_ns), 10);
    if (paired)
      out << pad(row.paired ? features::formatMilliseconds(row.comm_wait_ns) : "", 9)
          << pad(row.paired ? features::formatMilliseconds(row.comm_transfer_ns) : "", 8)
          << pad(row.paired ? formatPercent(row.late_share) : "", 9);
    out << pad(r.steady_steps > 0 ? std::to_string(r.steady_steps) : "", 7)
        << pad(r.median_step_ns > 0 ? features::formatMilliseconds(static_cast<double>(r.median_step_ns)) + " ms" : "",
               13)
        << "\n";
  }
}

void writeHeader(const ReportData& d, std::ostream& out) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  out << "Profile   " << d.args.profile_path << " (" << (profile.info.format == "nsys-sqlite" ? "Nsight Systems " : "")
      << profile.info.tool_version << ")\n";
  writeMachine(d, out);
  auto verdict = reportVerdict(d);
  out << "Steps     ";
  if (verdict) {
    out << verdict->all_steps
        << (attr.step_ranks > 1 ? " per rank on " + std::to_string(attr.step_ranks) + " ranks" : "") << " ("
        << verdict->steps_source
        << (verdict->timing_from.empty() ? "" : "; figures from the light capture " + verdict->timing_from)
        << "): " << verdict->steady << " steady, " << verdict->warmup << " warm-up, " << verdict->outliers << " outlier"
        << (verdict->outliers == 1 ? "" : "s");
    if (verdict->lost_steps > 0) out << ", " << verdict->lost_steps << " without GPU records";
  } else if (attr.steps > 0)
    out << attr.steps << " (" << attr.steps_source << ")";
  else
    out << "not detected";
  out << "\nGPU time  " << features::formatMilliseconds(static_cast<double>(attr.steady_gpu_ns)) << " ms "
      << (verdict ? "in steady steps" : "total");
  if (attr.steps > 0)
    out << ", " << features::formatMilliseconds(static_cast<double>(attr.steady_gpu_ns) / attr.steps) << " ms/step"
        << (attr.step_ranks > 1 ? " per GPU" : "");
  out << "\n";
  if (verdict) out << verdictText(*verdict, false);
  if (!attr.files.empty()) {
    out << "Methods  ";
    for (size_t m = 0; m < attribution::kMethodCount; ++m)
      if (attr.by_method[m] > 0)
        out << " " << attribution::methodName(static_cast<attribution::Method>(m)) << " "
            << formatPercent(static_cast<double>(attr.by_method[m]) / total_ns);
    out << "\n";
  }
  if (d.compare) {
    bool per_step = comparePerStep(d);
    double before =
        static_cast<double>(d.compare->attribution().steady_gpu_ns) / (per_step ? d.compare->attribution().steps : 1);
    double now = static_cast<double>(attr.steady_gpu_ns) / (per_step ? attr.steps : 1);
    out << "Compare   " << d.args.compare_path << ": " << features::formatMilliseconds(before) << " -> "
        << features::formatMilliseconds(now) << (per_step ? " ms/step" : " ms in total") << ", "
        << formatDelta(now - before) << "\n";
    for (const auto& [local, how] : d.compare_aligned)
      out << "          " << fs::path(local).filename().string() << " changed since the compared run: " << how << "\n";
  }
  for (const auto& w : profileWarnings(attr, profile.info)) out << "Warning   " << w << "\n";
  if (attr.attributed_gpu_ns == 0)
    out << "No GPU time could be put on source lines: " << ingest::captureAdvice(profile.info) << "\n";
}

// Roll-ups on def and loop header lines (1-based line -> ns of the body).
std::map<int32_t, int64_t> rollups(const cli::NamedFile& local, const join::FileCosts& costs) {
  const source::SourceFile& src = *local.file;
  std::map<int32_t, int64_t> rollup;
  auto addRange = [&](uint32_t first0, uint32_t last0) {
    int64_t sum =
        features::inclusiveOver(costs, static_cast<int32_t>(first0 + 1), static_cast<int32_t>(last0 + 1)).gpu_ns;
    if (sum > 0) rollup[static_cast<int32_t>(first0 + 1)] = sum;
  };
  for (const auto& f : local.index->functions) addRange(f.def_line, f.end_line);
  for (const auto& l : local.index->loops)
    addRange(src.lines().pointAt(l.range.begin).line, src.lines().pointAt(l.range.end).line);
  return rollup;
}

// The left margin of one line: time, share, fwd + bwd and a bar, or a def/loop's Σ.
std::string marginFor(const std::map<int32_t, LineCost>& lines, const std::map<int32_t, int64_t>& rollup,
                      const std::map<int32_t, int64_t>& beneath, int32_t line, double steps, double total_ns) {
  auto it = lines.find(line);
  auto roll = rollup.find(line);
  auto inc = beneath.find(line);
  if (inc != beneath.end()) {
    // Inclusive: `incl` and the share of all it holds; its own time in the split column.
    double share = static_cast<double>(inc->second) / total_ns;
    int64_t self = it == lines.end() ? 0 : it->second.gpu_ns;
    return pad(features::formatMilliseconds(static_cast<double>(inc->second) / steps), 9) + "  " +
           pad(formatPercent(share), 6) + "  " +
           pad("incl, self " + features::formatMilliseconds(static_cast<double>(self) / steps), 15, true) + "  " +
           pad(bar(share), 10, true);
  }
  if (it != lines.end() && it->second.gpu_ns > 0) {
    const auto& c = it->second;
    double share = static_cast<double>(c.gpu_ns) / total_ns;
    std::string split = c.backward_ns > 0
                            ? features::formatMilliseconds(static_cast<double>(c.forward_ns) / steps) + " + " +
                                  features::formatMilliseconds(static_cast<double>(c.backward_ns) / steps)
                            : "";
    return pad(features::formatMilliseconds(static_cast<double>(c.gpu_ns) / steps), 9) + "  " +
           pad(formatPercent(share), 6) + "  " + pad(split, 15, true) + "  " + pad(bar(share), 10, true);
  }
  if (roll != rollup.end()) {
    double share = static_cast<double>(roll->second) / total_ns;
    return pad("Σ " + features::formatMilliseconds(static_cast<double>(roll->second) / steps), 9) + "  " +
           pad(formatPercent(share), 6) + "  " + pad("", 15) + "  " + pad("", 10);
  }
  return std::string(9 + 2 + 6 + 2 + 15 + 2 + 10, ' ');
}

void writeAnnotatedFile(const ReportData& d, const cli::NamedFile& local, std::ostream& out) {
  const attribution::Attribution& attr = d.main.attribution();
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  const auto& lines = d.measured.at(local.absolute).lines;
  int64_t this_file = 0;
  for (const auto& [line, c] : lines) this_file += c.gpu_ns;
  int64_t other = attr.attributed_gpu_ns - this_file;
  out << "\n"
      << local.path << ": " << formatPercent(static_cast<double>(this_file) / total_ns) << " of GPU time on its lines, "
      << formatPercent(static_cast<double>(other) / total_ns) << " on other files, "
      << formatPercent(static_cast<double>(attr.unattributed_gpu_ns) / total_ns) << " unattributed\n";
  // A file the profile never ran: say so, and name the one it ran.
  bool seen = std::any_of(d.mapped.begin(), d.mapped.end(),
                          [&](const MappedFile& m) { return m.local_path && *m.local_path == local.absolute; });
  if (!seen && this_file == 0 && other > 0) {
    std::map<model::StringId, int64_t> by_file;
    for (const auto& [file, file_lines] : attr.files)
      for (const auto& [line, c] : file_lines) by_file[file] += c.gpu_ns;
    auto top = std::max_element(by_file.begin(), by_file.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    out << "Notice    the profile never ran this file: no stack in it passes through " << local.path
        << "; most of its GPU time is on " << d.main.profile().strings[top->first] << " ("
        << formatPercent(static_cast<double>(top->second) / total_ns)
        << "). Name that script (a copy of it in this workspace), or map its path with --map "
           "PROFILE_PREFIX=LOCAL_PREFIX\n";
  }
  auto rollup = rollups(local, d.measured.at(local.absolute));
  // Work beneath a line through calls (`model(x)`), where it adds to the line's own time.
  std::map<int32_t, int64_t> beneath;
  for (uint32_t l = 0; l < local.file->lines().lineCount(); ++l) {
    auto line = static_cast<int32_t>(l + 1);
    int64_t inc = features::inclusiveOver(d.measured.at(local.absolute), line, line).gpu_ns;
    auto own = lines.find(line);
    int64_t self = own == lines.end() ? 0 : own->second.gpu_ns;
    if (inc - self >= std::max<int64_t>(5000, inc / 20)) beneath[line] = inc;
  }
  double steps = d.args.total || attr.steps <= 0 ? 1 : attr.steps;
  bool per_step = comparePerStep(d);
  const std::map<int32_t, int64_t>* before_lines = nullptr;
  if (d.compare) {
    auto it = d.compare_lines.find(local.absolute);
    static const std::map<int32_t, int64_t> kNone;
    before_lines = it == d.compare_lines.end() ? &kNone : &it->second;
  }
  // The change column: this profile minus the compare profile, on the line.
  auto deltaColumn = [&](int32_t line) -> std::string {
    if (!before_lines) return "";
    auto b = before_lines->find(line);
    auto n = lines.find(line);
    double before =
        b == before_lines->end() ? 0 : static_cast<double>(b->second) / (per_step ? d.compare->attribution().steps : 1);
    double now = n == lines.end() ? 0 : static_cast<double>(n->second.gpu_ns) / (per_step ? attr.steps : 1);
    if (std::abs(now - before) < 5e3) return pad("", 13);
    return "  " + pad(formatDelta(now - before), 11, true);
  };
  out << pad(d.args.total ? "ms" : "ms/step", 9) << "  " << pad("share", 6) << "  " << pad("fwd + bwd", 15, true)
      << "  " << pad("", 10);
  if (before_lines) out << "  " << pad(per_step ? "Δ per step" : "Δ total", 11, true);
  // Several ranks: the slowest rank on the line and how far above the median it is.
  bool ranked = attr.ranks.size() > 1;
  auto rankColumn = [&](int32_t line) -> std::string {
    if (!ranked) return "";
    auto n = lines.find(line);
    if (n == lines.end() || n->second.rank_ns.size() != attr.ranks.size() || n->second.gpu_ns == 0) return pad("", 14);
    std::vector<int64_t> v;  // each rank's own work: waits for other ranks left out
    for (size_t r = 0; r < attr.ranks.size(); ++r) v.push_back(attribution::rankWorkNs(n->second, r));
    size_t slowest = static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
    int64_t max = v[slowest];
    std::sort(v.begin(), v.end());
    double median = v.size() % 2
                        ? static_cast<double>(v[v.size() / 2])
                        : (static_cast<double>(v[v.size() / 2 - 1]) + static_cast<double>(v[v.size() / 2])) / 2;
    if (static_cast<double>(max) < 1.1 * median) return pad("", 14);
    char ratio[24];
    std::snprintf(ratio, sizeof ratio, " ×%.1f", static_cast<double>(max) / std::max(1.0, median));
    return "  " + pad(attr.ranks[slowest].label + ratio, 12, true);
  };
  if (ranked) out << "  " << pad("slowest rank", 12, true);
  out << " │\n";
  const source::SourceFile& src = *local.file;
  uint32_t count = src.lines().lineCount();
  if (count > 0 && src.lines().lineRange(count - 1).begin == src.lines().lineRange(count - 1).end) --count;
  // A long file shows its lines with costs (hot lines), each run of the others as one marker.
  bool hot_only = !d.args.all_lines && count > kWholeFileLines;
  uint32_t skipped = 0;
  auto flushSkipped = [&] {
    if (skipped == 0) return;
    out << std::string(11, ' ') << "⋮ " << skipped << (skipped == 1 ? " line" : " lines") << " without cost\n";
    skipped = 0;
  };
  for (uint32_t l = 0; l < count; ++l) {
    auto r = src.lines().lineRange(l);
    auto line = static_cast<int32_t>(l + 1);
    std::string columns =
        marginFor(lines, rollup, beneath, line, steps, total_ns) + deltaColumn(line) + rankColumn(line);
    if (hot_only && columns.find_first_not_of(' ') == std::string::npos) {
      ++skipped;
      continue;
    }
    flushSkipped();
    out << columns << " │" << pad(std::to_string(line), 5) << "  " << src.text().substr(r.begin, r.end - r.begin)
        << "\n";
  }
  flushSkipped();
  if (hot_only) out << "(lines with costs only; --all-lines prints the whole file)\n";
}

// --merge: the JSON reports of single ranks, added up into one multi-rank report. Ranks are
// listed in input order; every line gets a `rank_ns` entry per rank (0 where that rank has no
// time on it), so the result reads like the report of one multi-rank profile.
int mergeReports(const std::vector<std::string>& paths, std::ostream& out, std::ostream& err) {
  std::vector<json> docs;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    json doc = json::parse(in, nullptr, false);
    if (!in.good() && !in.eof()) doc = json();
    if (!doc.is_object() || !doc.contains("files") || !doc.contains("ranks") || !doc["files"].is_array() ||
        !doc["ranks"].is_array()) {
      err << "sightline report: --merge " << path << ": not a `sightline report --format json` output\n";
      return 2;
    }
    docs.push_back(std::move(doc));
  }
  size_t rank_count = 0;
  for (const auto& d : docs) rank_count += std::max<size_t>(1, d["ranks"].size());
  json merged = {
      {"profile", {{"path", paths.front()}, {"parts", paths}, {"format", "merged"}, {"warnings", json::array()}}},
      {"ranks", json::array()}};
  for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                          "comm_exposed_ns", "launches", "lost_launches", "processes"})
    merged[key] = 0;
  merged["steps"] = 0;
  std::map<std::string, std::map<int, json>> files;  // local (else profile) path -> line -> merged line
  std::map<std::string, json> file_info;
  size_t first_rank = 0;
  for (size_t k = 0; k < docs.size(); ++k) {
    const json& d = docs[k];
    for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                            "comm_exposed_ns", "launches", "lost_launches", "processes"})
      merged[key] = merged[key].get<int64_t>() + d.value(key, int64_t{0});
    merged["steps"] = std::max(merged["steps"].get<int>(), d.value("steps", 0));
    for (const auto& w : d["profile"].value("warnings", json::array()))
      merged["profile"]["warnings"].push_back(fs::path(paths[k]).filename().string() + ": " + w.get<std::string>());
    size_t ranks_here = std::max<size_t>(1, d["ranks"].size());
    for (const auto& r : d["ranks"]) merged["ranks"].push_back(r);
    for (const auto& f : d["files"]) {
      std::string key = f["local_path"].is_string() ? f["local_path"].get<std::string>() : f.value("path", "");
      file_info[key] = {{"path", f.value("path", "")}, {"local_path", f["local_path"]}};
      for (const auto& l : f["lines"]) {
        json& m = files[key][l["line"].get<int>()];
        if (m.is_null()) {
          m = {{"line", l["line"]}, {"rank_ns", std::vector<int64_t>(rank_count, 0)}};
        }
        for (const auto& [name, value] : l.items())
          if (value.is_number_integer() && name != "line") m[name] = m.value(name, int64_t{0}) + value.get<int64_t>();
        std::vector<int64_t> own = l.contains("rank_ns") ? l["rank_ns"].get<std::vector<int64_t>>()
                                                         : std::vector<int64_t>{l.value("gpu_ns", int64_t{0})};
        for (size_t r = 0; r < own.size() && r < ranks_here; ++r)
          m["rank_ns"][first_rank + r] = m["rank_ns"][first_rank + r].get<int64_t>() + own[r];
      }
    }
    first_rank += ranks_here;
  }
  json jfiles = json::array();
  for (auto& [key, lines] : files) {
    json f = file_info[key];
    int64_t ns = 0;
    f["lines"] = json::array();
    for (auto& [line, l] : lines) {
      ns += l.value("gpu_ns", int64_t{0});
      f["lines"].push_back(l);
    }
    f["gpu_ns"] = ns;
    jfiles.push_back(f);
  }
  merged["files"] = jfiles;
  out << protocol::dumpJson(merged) << "\n";
  return 0;
}

}  // namespace

int runReportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ReportArgs parsed;
  if (auto code = parseReportArgs(args, parsed, out, err)) return *code;
  // The named files, parsed once: their NVTX range sites feed attribution, their lines the output.
  bool unreadable = false;
  auto sources = cli::readNamedFiles(parsed.files, "report", err, unreadable);
  cli::mapOntoFiles(parsed.mapper, parsed.files);
  std::string error;
  if (!parsed.merge_paths.empty()) return mergeReports(parsed.merge_paths, out, err);
  cli::JoinRequest request;
  request.all_steps = parsed.all_steps;
  request.compiled_code = parsed.compiled_code;
  if (!parsed.step_log.empty()) {
    request.logged_step_ns = cli::readStepLog(parsed.step_log, error);
    if (request.logged_step_ns <= 0) {
      err << "sightline report: --step-log " << error << "\n";
      return 2;
    }
  }
  auto main = cli::loadJoinedProfile(parsed.profile_paths, parsed.mapper, sources, request, error);
  if (!main) {
    err << "sightline report: " << error << "\n";
    return 2;
  }
  if (!parsed.timing_path.empty()) {
    cli::JoinRequest timing_request = request;
    timing_request.logged_step_ns = request.logged_step_ns;
    auto timing = cli::loadJoinedProfile({parsed.timing_path}, parsed.mapper, sources, timing_request, error);
    if (!timing) {
      err << "sightline report: --timing: " << error << "\n";
      return 2;
    }
    main->setTiming(*timing, fs::path(parsed.timing_path).filename().string());
  }
  std::unique_ptr<join::ProfileJoin> compare;
  if (!parsed.compare_path.empty()) {
    cli::JoinRequest compare_request = request;
    compare_request.logged_step_ns = 0;  // the log is of the main profile's script
    compare = cli::loadJoinedProfile({parsed.compare_path}, parsed.mapper, sources, compare_request, error);
    if (!compare) {
      err << "sightline report: --compare: " << error << "\n";
      return 2;
    }
  }
  ReportData data{parsed, *main, compare.get(), sources, {}, {}, {}, {}};
  joinNamedFiles(data);
  if (parsed.format == "json") {
    out << protocol::dumpJson(reportJson(data)) << "\n";
    return 0;
  }
  writeHeader(data, out);
  for (const auto& local : sources) writeAnnotatedFile(data, local, out);
  return unreadable ? 2 : 0;
}

}  // namespace sightline::server
