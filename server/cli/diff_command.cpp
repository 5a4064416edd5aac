// `sightline diff`: reads the runs, compares them (features::diffRuns), renders the one result
// (server/render/diff_render.h, SARIF here: it places lines on the checkout's files) and gates.
#include "server/cli/diff_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "analysis/features/regression.h"
#include "analysis/features/units.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/report_data.h"
#include "server/lsp/uri.h"
#include "server/platform/output_file.h"
#include "server/platform/terminal_text.h"
#include "server/render/diff_render.h"
#include "server/render/step_view_html.h"
#include "server/workspace/local_files.h"
#include "server/workspace/steps_file.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;
using diff::interval;
using diff::kernelNote;
using diff::signedMs;
using diff::signedPercent;
using diff::syncNote;
using features::LineChange;
using features::RunDiff;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline diff [options] BASE... NEW\n"
    "\n"
    "Compares runs of a training script, step by step and line by line: NEW against one or\n"
    "more BASE runs. Each run is a rank summary (sightline report --format summary --profile P\n"
    "-o S.json), a folder of one run's per-rank summaries, or a profile (a steps file of\n"
    "sightline capture beside it is read). Every change comes with a 95% interval: a bootstrap\n"
    "of the median over the per-step samples (2000 resamples, fixed seed); with several BASE\n"
    "runs the runs are drawn again first, so their spread from run to run is in the interval\n"
    "(one run's steps alone hide it: give the main branch's last few runs). The step is\n"
    "compared on the steps sightline capture timed without the profiler recording when every\n"
    "run has them, else on the profiled steps. Lines are matched by their source text (a line\n"
    "moved by an edit keeps its match).\n"
    "\n"
    "options:\n"
    "  --fail-on RULES     thresholds, comma-separated: step:+5% (the step), line:+1ms or\n"
    "                      line:+20% (any line, per step); exceeded only when the whole\n"
    "                      interval lies past the threshold. memory:+10% or memory:+512MiB:\n"
    "                      the peak sightline capture measured (the allocator's, without\n"
    "                      the profiler) against the largest base run's; not checked where\n"
    "                      a run has none\n"
    "  --format text|json|markdown|sarif|html\n"
    "                      sarif: the lines that grew, on the lines of the files here (code\n"
    "                      scanning shows them in a pull request's diff); html: one page, the\n"
    "                      runs' step bars side by side, then the parts and lines\n"
    "  --lines N           lines shown (default 10; 0: all)\n"
    "  -o, --output FILE   write there instead of standard output\n"
    "  -h, --help          this help\n"
    "\n"
    "Exit code: 0 within the thresholds (or none given), 1 a threshold exceeded with\n"
    "confidence, 2 bad input, 4 runs that cannot be compared (different GPUs, numbers of\n"
    "ranks, profilers or scripts): the reason is printed.\n";

struct DiffArgs : diff::DiffPage {
  std::vector<features::GateRule> rules;
  std::string output;
};

std::string sourceOfRun(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "folder";
  std::string name = fs::path(path).filename().string();
  auto ends = [&](std::string_view e) { return name.size() > e.size() && name.ends_with(e); };
  if (ends(".json") && !ends(".pt.trace.json") && !ends(".trace.json")) return "summary";
  return "profile";
}

// One run's summaries: a summary document, a folder of one run's per-rank summaries, or a
// profile summarized here. `read` gets every file read (an output must not replace one).
std::optional<std::vector<join::RankSummary>> readRun(const std::string& path, std::vector<std::string>& read,
                                                      std::ostream& err) {
  std::string error;
  std::string kind = sourceOfRun(path);
  read.push_back(path);
  if (kind == "profile") {
    read.push_back(stepsFileFor(path));  // read beside it: an output must not replace it either
    report::ReportArgs args;
    args.profile_paths = {path};
    args.profile_path = path;
    args.jobs = 1;
    cli::mapOntoFiles(args.mapper, {});
    std::vector<cli::NamedFile> none;
    return report::summarizeReports(args, none, cli::JoinRequest{}, err);
  }
  std::vector<std::string> files{path};
  if (kind == "folder") {
    files.clear();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      std::string name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && name.size() > 5 && name.ends_with(".json"))
        files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (ec || files.empty()) {
      err << "sightline diff: " << path << ": "
          << (ec ? ec.message() : "no summaries (*.json) in the folder: a run's folder holds its ranks' summaries")
          << "\n";
      return std::nullopt;
    }
  }
  std::vector<join::RankSummary> out;
  for (const auto& f : files) {
    read.push_back(f);
    auto got = report::readSummaries(f, error);
    if (got && got->empty()) error = "holds no rank summary";
    if (!got || got->empty()) {
      err << "sightline diff: " << f << ": " << error << "\n";
      return std::nullopt;
    }
    for (auto& s : *got) out.push_back(std::move(s));
  }
  // One run holds each rank once: a folder of two runs' summaries is not a run of two ranks.
  std::set<int32_t> ranks;
  for (const auto& s : out)
    if (s.rank >= 0 && !ranks.insert(s.rank).second) {
      err << "sightline diff: " << path << " holds rank " << s.rank
          << " twice: a run is one summary, or one folder of its ranks' summaries; give each run apart\n";
      return std::nullopt;
    }
  return out;
}

std::optional<int> parseArgs(const std::vector<std::string>& args, DiffArgs& into, std::ostream& out,
                             std::ostream& err) {
  cli::CommandLine command_line("diff", kUsage);
  command_line
      .option("--fail-on",
              [&into](const std::string& v) {
                if (v.empty()) return std::string("--fail-on takes thresholds: step:+5%,line:+1ms,memory:+10%");
                std::stringstream list(v);
                std::string one, error;
                while (std::getline(list, one, ',')) {
                  if (one.empty()) return std::string("--fail-on: an empty threshold (two commas, or one at an end)");
                  auto rule = features::parseGateRule(one, error);
                  if (!rule) return error;
                  into.rules.push_back(*rule);
                }
                return std::string();
              })
      .option("--format", cli::choiceInto(into.format, {"text", "json", "markdown", "sarif", "html"}, "format"))
      .option("--lines",
              [&into](const std::string& v) {
                char* end = nullptr;
                unsigned long n = std::strtoul(v.c_str(), &end, 10);
                if (v.empty() || *end != '\0' || n > 100000)
                  return std::string("--lines takes a count up to 100000, 0 for all");
                into.lines = n == 0 ? SIZE_MAX : n;
                return std::string();
              })
      .option("--output", cli::valueInto(into.output))
      .option("-o", cli::valueInto(into.output))
      .positional(&into.inputs);
  if (auto code = command_line.parse(args, out, err)) return code;
  if (into.inputs.size() < 2 || into.inputs.size() > 64) {
    err << "sightline diff: give two runs or more, BASE... NEW (see sightline diff --help)\n";
    return 2;
  }
  return std::nullopt;
}

// SARIF 2.1.0: each line that grew past its own spread, on the local file the profile's path
// maps onto (the checkout, as `report` maps it); an error where a line threshold is exceeded
// there, or where the step's threshold is and the line explains most of it.
json sarifDiff(const RunDiff& d) {
  attribution::PathMapper mapper;
  cli::mapOntoFiles(mapper, {});
  std::error_code ec;
  // Paths relative to the checkout's root (the folder holding .git above here), as code
  // scanning shows them; else to here.
  fs::path here = fs::current_path(ec), root = here;
  for (fs::path p = here; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / ".git", ec)) {
      root = p;
      break;
    }
    if (p == p.parent_path()) break;
  }
  double line_limit = -1;
  bool step_exceeded = false;
  for (const auto& g : d.gate) {
    if (g.rule.scope == features::GateRule::Scope::Line && !g.rule.percent)
      line_limit = line_limit < 0 ? g.rule.value : std::min(line_limit, g.rule.value);
    if (g.rule.scope == features::GateRule::Scope::Step && g.exceeded) step_exceeded = true;
  }
  json results = json::array();
  bool first = true;
  for (const auto& l : d.lines) {
    bool grew = l.change.certain() && l.change.delta_ns >= 10'000;  // 10 µs: not worth a mark
    if ((!grew && !l.sync_added) || l.new_line <= 0) continue;
    auto local = mapper.map(l.path);
    if (!local) local = uniqueFileNamed(root.string(), fs::path(l.path).filename().string());
    std::string uri = local ? fs::relative(*local, root, ec).generic_string() : fs::path(l.path).filename().string();
    if (ec || uri.empty()) uri = fs::path(l.path).filename().string();
    uri = percentEncoded(uri);
    bool past_line = line_limit >= 0 && l.change.low_ns > line_limit;
    bool error = past_line || (first && step_exceeded);
    std::string message =
        l.sync_added ? "This line " + syncNote(l)
                     : "GPU time on this line grew " + signedMs(l.change.delta_ns) + " per step (95% interval " +
                           interval(l.change) + "; " + features::formatMilliseconds(l.change.base_ns) + " -> " +
                           features::formatMilliseconds(l.change.new_ns) + " ms)" +
                           (l.kind == LineChange::Kind::New ? ", a line the base runs had no GPU time on" : "") +
                           (kernelNote(l).empty() ? "" : "; " + kernelNote(l));
    message += first && step_exceeded ? "; the step grew " + signedPercent(d.step.relative()) : "";
    std::string rule = l.sync_added ? "sync-added" : error ? "gpu-time-regressed" : "gpu-time-grew";
    results.push_back(
        {{"ruleId", rule},
         {"level", error ? "error" : "warning"},
         {"message", {{"text", message}}},
         {"locations",
          {{{"physicalLocation", {{"artifactLocation", {{"uri", uri}}}, {"region", {{"startLine", l.new_line}}}}}}}}});
    first = false;
    if (results.size() >= 50) break;
  }
  json rules = json::array(
      {{{"id", "gpu-time-regressed"},
        {"shortDescription", {{"text", "A line's GPU time per step grew past the gate's threshold"}}},
        {"defaultConfiguration", {{"level", "error"}}}},
       {{"id", "gpu-time-grew"},
        {"shortDescription", {{"text", "A line's GPU time per step grew past the runs' spread"}}},
        {"defaultConfiguration", {{"level", "warning"}}}},
       {{"id", "sync-added"},
        {"shortDescription", {{"text", "The step grew, and this line now makes the host wait for the GPU more often"}}},
        {"defaultConfiguration", {{"level", "warning"}}}}});
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool", {{"driver", {{"name", "sightline"}, {"version", SIGHTLINE_VERSION}, {"rules", rules}}}}},
             {"results", results}}}}};
}

// The runs cannot be compared: each format's document says why, with nothing to gate.
void writeIncomparable(const RunDiff& d, const DiffArgs& args, std::ostream& out) {
  std::string why = "the runs cannot be compared: " + d.incomparable;
  if (args.format == "json") {
    out << protocol::dumpJson({{"sightline_diff", 1},
                               {"base", std::vector<std::string>(args.inputs.begin(), args.inputs.end() - 1)},
                               {"new", args.inputs.back()},
                               {"incomparable", d.incomparable},
                               {"failed", false}})
        << "\n";
  } else if (args.format == "sarif") {
    json run = {{"tool", {{"driver", {{"name", "sightline"}, {"version", SIGHTLINE_VERSION}}}}},
                {"invocations",
                 {{{"executionSuccessful", false}, {"toolExecutionNotifications", {{{"message", {{"text", why}}}}}}}}},
                {"results", json::array()}};
    out << protocol::dumpJson({{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                               {"version", "2.1.0"},
                               {"runs", json::array({run})}})
        << "\n";
  } else if (args.format == "markdown") {
    out << "### Sightline: the runs cannot be compared\n\n" << diff::markdownCell(d.incomparable) << ".\n";
  } else {
    out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
        << "<title>Sightline diff: cannot compare</title></head><body><h1>Sightline: the runs cannot be "
           "compared</h1><p>"
        << htmlEscape(diff::inert(d.incomparable)) << ".</p></body></html>\n";
  }
}

}  // namespace

int runDiffCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  DiffArgs parsed;
  if (auto code = parseArgs(args, parsed, out, err)) return *code;
  std::vector<std::string> read;  // every file read: an output replaces none of them
  std::vector<std::vector<join::RankSummary>> bases;
  for (size_t i = 0; i + 1 < parsed.inputs.size(); ++i) {
    auto base = readRun(parsed.inputs[i], read, err);
    if (!base) return 2;
    bases.push_back(std::move(*base));
  }
  auto next = readRun(parsed.inputs.back(), read, err);
  if (!next) return 2;
  if (!parsed.output.empty())
    if (std::string why = checkOutputPath(parsed.output, read); !why.empty()) {
      err << "sightline diff: -o " << why << "\n";
      return 2;
    }
  RunDiff d = features::diffRuns(bases, *next, parsed.rules);
  std::ostringstream text;
  if (!d.incomparable.empty()) {
    err << "sightline diff: the runs cannot be compared: " << d.incomparable << "\n";
    // The documents a CI step reads say so too (text: standard error alone).
    if (parsed.format == "text") return kDiffIncomparable;
    writeIncomparable(d, parsed, text);
  } else if (parsed.format == "json") {
    text << protocol::dumpJson(diff::diffJson(d, parsed)) << "\n";
  } else if (parsed.format == "sarif") {
    text << protocol::dumpJson(sarifDiff(d)) << "\n";
  } else if (parsed.format == "markdown") {
    diff::writeDiffMarkdown(d, parsed, text);
  } else if (parsed.format == "html") {
    diff::writeDiffHtml(d, parsed, text);
  } else {
    diff::writeDiffText(d, parsed, text);
  }
  std::string error, body = parsed.format == "text" ? terminalSafe(text.str()) : text.str();
  bool ok = parsed.output.empty() ? writeOutputStream(out, body, error)
                                  : writeOutputFile(parsed.output, body, parsed.inputs, error);
  if (!ok) {
    err << "sightline diff: " << error << "\n";
    return 2;
  }
  if (!d.incomparable.empty()) return kDiffIncomparable;
  return d.failed() ? 1 : 0;
}

}  // namespace sightline::server
