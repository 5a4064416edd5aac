// The report verb: load -> attribute -> map profile paths to local files -> print (as JSON:
// report_json.cpp; as text: report_text.cpp).
#include "server/cli/report_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "analysis/features/profile_view.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/cli/report_data.h"
#include "server/platform/output_file.h"
#include "server/platform/phase_clock.h"
#include "server/platform/terminal_text.h"
#include "server/render/job_json.h"
#include "server/render/profile_text.h"
#include "server/render/step_view_html.h"
#include "server/workspace/local_files.h"
#include "server/workspace/profiles.h"
#include "server/workspace/steps_file.h"

namespace sightline::server {
namespace {

using namespace report;  // NOLINT(google-build-using-namespace): the verb's own parts

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline report --profile PROFILE [options] [FILE...]\n"
    "\n"
    "Puts the GPU time (and memory) of a profile on the lines of Python files. PROFILE is an\n"
    "nsys SQLite export (nsys export --type sqlite --include-blobs=true), a .nsys-rep (needs nsys\n"
    "on PATH), a PyTorch profiler trace (.json or .json.gz, from export_chrome_trace), or a CUDA\n"
    "memory snapshot (.pickle, from torch.cuda.memory._dump_snapshot; docs/memory.md).\n"
    "\n"
    "options:\n"
    "  --profile PATH      the profile to read (required); repeat it for the reports of one run's\n"
    "                      ranks (nsys profile -o run_%q{RANK}): one multi-rank profile\n"
    "  --merge PATH        the job from rank summaries (`--format summary`, or `--format json`)\n"
    "                      made where each rank's report was written: a file or a folder of them\n"
    "                      (repeatable); prints the job (text or JSON; docs/jobs.md)\n"
    "  --format text|json|html|summary\n"
    "                      annotated source (default), JSON for every file (docs/report-json.md),\n"
    "                      the step view as one self-contained HTML page (steps, a steady step's\n"
    "                      timeline, memory, top lines, the named files' hot lines), or each rank's\n"
    "                      summary for --merge (small: make it on the node, merge anywhere)\n"
    "                      and for sightline diff (run it where the script is: its lines'\n"
    "                      text lets diff match lines an edit moved)\n"
    "  -j, --jobs N        read N reports at once (default: one per core); more than 8 reports\n"
    "                      make the job view only, each read, summarized and dropped in turn\n"
    "  -o, --output PATH   write the report to PATH instead of standard output\n"
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
    "                      (TORCHINDUCTOR_CACHE_DIR), a TORCH_TRACE or TORCH_COMPILE_DEBUG folder,\n"
    "                      or one holding TORCH_LOGS=output_code logs (repeatable); without it the\n"
    "                      folder the run used, ones under the current directory and\n"
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

cli::CommandLine::ValueHandler jobsInto(size_t& into) {
  return [&into](const std::string& v) {
    char* end = nullptr;
    unsigned long n = std::strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 1 || n > 256) return std::string("-j takes a count of reports, 1 to 256");
    into = n;
    return std::string();
  };
}

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
      .option("--format", cli::choiceInto(into.format, {"text", "json", "html", "summary"}, "format"))
      .option("--jobs", jobsInto(into.jobs))
      .option("-j", jobsInto(into.jobs))
      .option("--output", cli::valueInto(into.output))
      .option("-o", cli::valueInto(into.output))
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
    if (!into.profile_paths.empty() || into.format == "summary" || !into.files.empty()) {
      err << "sightline report: --merge builds the job from rank summaries alone: no --profile, no script, no "
             "--format summary with it (make each summary first: report --format summary --profile P -o S.json)\n";
      return 2;
    }
    return std::nullopt;
  }
  if (into.profile_path.empty()) {
    err << "sightline report: --profile is required\n" << kUsage;
    return 2;
  }
  return std::nullopt;
}

// Why the profiles cannot be compared ("" when they can): one has GPU times and the other none
// (a memory snapshot) once gave a 100% change on every line. Where both tell memory they are
// compared on memory alone.
std::string incomparable(const join::ProfileJoin& main, const join::ProfileJoin& compare, const ReportArgs& args) {
  bool main_times = !main.profile().activities.empty(), compare_times = !compare.profile().activities.empty();
  if (main_times == compare_times) return "";
  auto tellsMemory = [](const join::ProfileJoin& j) {
    const auto& story = j.memory().story;
    return story && story->allocated_known;
  };
  if (tellsMemory(main) && tellsMemory(compare)) return "";
  const std::string& without = main_times ? args.compare_path : args.profile_path;
  const std::string& with = main_times ? args.profile_path : args.compare_path;
  return without + " has no GPU times (a memory snapshot): nothing to compare the GPU times of " + with +
         " with. Compare two profiles with GPU times, or two that tell memory (snapshots, traces with "
         "profile_memory=True)";
}

// Every file the report reads: an output may be none of them.
std::vector<std::string> reportInputs(const ReportArgs& args) {
  std::vector<std::string> inputs = args.profile_paths;
  for (const auto* list : {&args.merge_paths, &args.files}) inputs.insert(inputs.end(), list->begin(), list->end());
  for (const auto* one : {&args.compare_path, &args.timing_path, &args.step_log})
    if (!one->empty()) inputs.push_back(*one);
  return inputs;
}

// The report's destination: -o's file (written beside it and renamed when whole) or standard
// output. `finish` says whether every write reached it, so that a full disk is an exit code and
// never a truncated report with exit 0.
class ReportSink {
 public:
  ReportSink(const ReportArgs& args, std::ostream& out, std::ostream& err)
      : out_(out), err_(err), to_file_(!args.output.empty()) {
    std::string error;
    if (to_file_) {
      file_ = OutputFile::open(args.output, reportInputs(args), error);
      if (!file_) err_ << "sightline report: " << error << "\n";
    } else if (&out == &std::cout) {
      // The process's own standard output: written through a checked buffer, so a full disk's
      // error is the one told.
      std::cout.flush();
      file_ = OutputFile::standardOutput(error);
    }
  }
  bool ok() const { return file_ || !to_file_; }
  std::ostream& stream() { return file_ ? file_->stream() : out_; }
  bool finish() {
    std::string error;
    bool ok = file_ ? file_->commit(error) : writeOutputStream(out_, "", error);
    if (!ok) err_ << "sightline report: " << error << "\n";
    return ok;
  }

 private:
  std::ostream& out_;
  std::ostream& err_;
  bool to_file_;
  std::unique_ptr<OutputFile> file_;
};

}  // namespace

// `--format summary`, and the job of more reports than one process holds joined: from the
// summaries alone.
int writeJobOnly(const ReportArgs& args, const std::vector<join::RankSummary>& summaries, std::ostream& out,
                 std::ostream& err) {
  ReportSink sink(args, out, err);
  if (!sink.ok()) return 2;
  std::ostream& to = sink.stream();
  if (args.format == "summary") {
    to << protocol::dumpJson(rankSummariesJson(summaries)) << "\n";
  } else {
    auto job = features::buildJob(summaries);
    if (args.format == "html") {
      if (int code = report::writeJobHtml(args, job, summaries, to, err); code != 0) return code;
    } else if (args.format == "json") {
      json doc = {{"profile", {{"path", args.profile_path}, {"parts", args.profile_paths}, {"format", "job"}}},
                  {"job", jobJson(job, summaries)},
                  {"rank_summaries", rankSummariesJson(summaries)["summaries"]}};
      to << protocol::dumpJson(doc) << "\n";
    } else {
      TerminalSafeStream text(to);  // hosts, paths and warnings of the ranks' reports
      text << "Profile   " << args.profile_paths.size() << " reports (" << args.profile_paths.front() << ", ...)\n";
      report::writeJobText(job, summaries, text);
      text << "(more than " << report::kMaxJoinedReports
           << " reports: the job view only, from each rank's summary; name up to 8 for lines annotated)\n";
    }
  }
  return sink.finish() ? 0 : 2;
}

namespace report {

std::string absolutePath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).string();
}

bool comparesMemory(const ReportData& d) {
  const auto& now = d.main.memory().story;
  const auto& before = d.compare ? d.compare->memory().story : nullptr;
  return now && before && now->allocated_known && before->allocated_known;
}

std::vector<MemoryChange> memoryChanges(const ReportData& d) {
  std::vector<MemoryChange> out;
  if (!comparesMemory(d)) return out;
  for (const auto& src : d.sources) {
    std::map<int32_t, MemoryChange> lines;
    if (auto m = d.measured.find(src.absolute); m != d.measured.end())
      for (const auto& [line, c] : m->second.lines)
        if (c.memory_peak_bytes > 0 || c.memory_step_bytes > 0)
          lines[line].peak_after = c.memory_peak_bytes, lines[line].step_after = c.memory_step_bytes;
    if (auto b = d.compare_memory.find(src.absolute); b != d.compare_memory.end())
      for (const auto& [line, bytes] : b->second)
        lines[line].peak_before = bytes.first, lines[line].step_before = bytes.second;
    for (auto& [line, change] : lines) {
      change.path = src.absolute;
      change.line = line;
      out.push_back(change);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const MemoryChange& a, const MemoryChange& b) {
    return std::llabs(a.peakChange()) > std::llabs(b.peakChange());
  });
  return out;
}

// `--merge`: summaries (or JSON reports) made apart, as one job, written once it is whole.
int runMerge(const ReportArgs& parsed, std::ostream& out, std::ostream& err) {
  std::ostringstream merged;
  bool listed = true;
  auto inputs = mergeInputs(parsed.merge_paths, err, listed);
  if (!listed) return 2;
  int code = parsed.format == "json" && allJsonReports(inputs) ? mergeReports(inputs, merged, err)
                                                               : mergeSummaries(parsed, merged, err);
  if (code != 0) return code;
  std::string error, text = parsed.format == "text" ? terminalSafe(merged.str()) : merged.str();
  bool ok = parsed.output.empty() ? writeOutputStream(out, text, error)
                                  : writeOutputFile(parsed.output, text, reportInputs(parsed), error);
  if (!ok) err << "sightline report: " << error << "\n";
  return ok ? 0 : 2;
}

// --timing's profile set on `main`, and --compare's joined into `compare` and checked against
// it; false (said on err) when one cannot be read or compared.
bool joinOthers(const ReportArgs& parsed, const std::vector<cli::NamedFile>& sources, const cli::JoinRequest& request,
                join::ProfileJoin& main, std::unique_ptr<join::ProfileJoin>& compare, std::ostream& err) {
  std::string error;
  if (!parsed.timing_path.empty()) {
    auto timing = cli::loadJoinedProfile({parsed.timing_path}, parsed.mapper, sources, request, error);
    if (!timing) {
      err << "sightline report: --timing: " << error << "\n";
      return false;
    }
    main.setTiming(*timing, fs::path(parsed.timing_path).filename().string());
  }
  if (parsed.compare_path.empty()) return true;
  cli::JoinRequest compare_request = request;
  compare_request.measured.reset();  // the log is of the main profile's run
  compare = cli::loadJoinedProfile({parsed.compare_path}, parsed.mapper, sources, compare_request, error);
  if (!compare) {
    err << "sightline report: --compare: " << error << "\n";
    return false;
  }
  if (std::string why = incomparable(main, *compare, parsed); !why.empty()) {
    err << "sightline report: --compare: " << why << "\n";
    return false;
  }
  return true;
}

}  // namespace report

int runReportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ReportArgs parsed;
  if (auto code = parseReportArgs(args, parsed, out, err)) return *code;
  // The named files, parsed once: their NVTX range sites feed attribution, their lines the output.
  bool unreadable = false;
  auto sources = cli::readNamedFiles(parsed.files, "report", err, unreadable);
  markPhase("named files: read and index");
  cli::mapOntoFiles(parsed.mapper, parsed.files);
  std::string error;
  // An output that would replace an input (the profile, the script) is refused before any work.
  if (!parsed.output.empty()) {
    if (std::string why = checkOutputPath(parsed.output, reportInputs(parsed)); !why.empty()) {
      err << "sightline report: -o " << why << "\n";
      return 2;
    }
  }
  if (parsed.jobs == 0) parsed.jobs = std::max(1u, std::thread::hardware_concurrency());
  if (!parsed.merge_paths.empty()) return runMerge(parsed, out, err);
  cli::JoinRequest request;
  request.all_steps = parsed.all_steps;
  request.compiled_code = parsed.compiled_code;
  if (!parsed.step_log.empty()) {
    request.measured = readStepLog(parsed.step_log, error);
    if (!request.measured) {
      err << "sightline report: --step-log " << error << "\n";
      return 2;
    }
  }
  // Each rank's summary: of the reports loaded below (joined together), else of each report
  // read one at a time (a summary, or more reports than are joined).
  if (parsed.format == "summary" || parsed.profile_paths.size() > kMaxJoinedReports) {
    auto got = summarizeReports(parsed, sources, request, err);
    if (!got) return 2;
    return writeJobOnly(parsed, *got, out, err);
  }
  auto main = cli::loadJoinedProfile(parsed.profile_paths, parsed.mapper, sources, request, error);
  if (!main) {
    err << "sightline report: " << error << "\n";
    return 2;
  }
  std::unique_ptr<join::ProfileJoin> compare;
  if (!joinOthers(parsed, sources, request, *main, compare, err)) return 2;
  ReportData data{parsed, *main, compare.get(), sources, {}, {}, {}, {}, {}, {}, {}};
  data.verdict = loadVerdict(main.get());
  markPhase("verdict: steps story and verdict");
  data.summaries = join::summarizeRanks(*main, fs::path(parsed.profile_paths.front()).filename().string());
  addLineTexts(data.summaries, parsed.mapper);  // as --format summary writes them
  markPhase("rank summaries");
  if (data.summaries.size() > 1) data.job = features::buildJob(data.summaries);
  markPhase("job");
  joinNamedFiles(data);
  markPhase("named files: costs");
  if (parsed.format == "html" && stepViewScript().empty()) return writeHtmlReport(data, out, err);  // says why
  ReportSink sink(parsed, out, err);
  if (!sink.ok()) return 2;
  std::ostream& to = sink.stream();
  int status = unreadable ? 2 : 0;
  if (parsed.format == "json") {
    auto doc = reportJson(data);
    markPhase("json: build");
    to << protocol::dumpJson(doc) << "\n";
    markPhase("json: write");
    status = 0;
  } else if (parsed.format == "html") {
    if (int code = writeHtmlReport(data, to, err); code != 0) return code;  // nothing kept
    status = 0;
  } else {
    // The profile's GPU names, file and kernel names, the scripts' text: escaped for the terminal.
    TerminalSafeStream text(to);
    writeHeader(data, text);
    for (const auto& local : sources) writeAnnotatedFile(data, local, text);
    markPhase("text");
  }
  if (!sink.finish()) return 2;
  err << phaseReport();
  return status;
}

}  // namespace sightline::server
