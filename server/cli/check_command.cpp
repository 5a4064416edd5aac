// The check verb. Columns are 1-based UTF-16 code units in every format (SARIF's default
// columnKind), so text, JSON and SARIF agree with what editors show.
#include "server/cli/check_command.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/features/source_match.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/lsp/position_conversion.h"
#include "server/platform/terminal_text.h"
#include "server/render/profile_text.h"
#include "server/workspace/profiles.h"
#include "server/workspace/settings.h"
#include "server/workspace/steps_file.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace sightline::server {
namespace {

using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline check [options] FILE...\n"
    "\n"
    "Prints the GPU-performance diagnostics of Python training scripts.\n"
    "\n"
    "options:\n"
    "  --format text|json|sarif   output format (default text: path:line:col: severity: message [code])\n"
    "  --disable CODE             turn a rule off (repeatable)\n"
    "  --severity CODE=LEVEL      error, warning, information or hint (repeatable)\n"
    "  --profile PATH             add what a profile measured (nsys .sqlite/.nsys-rep, or a PyTorch\n"
    "                             profiler trace .json/.json.gz): evidence on\n"
    "                             findings, and the rules that need a profile (pageable-memcpy, ...);\n"
    "                             repeat it for the reports of one run's ranks (one profile)\n"
    "  --map FROM=TO              map profile paths starting with FROM onto TO (repeatable)\n"
    "  --compiled-code DIR        torch.compile's generated code (an Inductor cache, a TORCH_TRACE or\n"
    "                             TORCH_COMPILE_DEBUG folder, repeatable), for compiled kernels on\n"
    "                             the model's lines\n"
    "  --timing LIGHT             a light capture of the same script (nsys -t cuda,nvtx): the step\n"
    "                             verdict's figures come from it, the lines from --profile\n"
    "  --step-log FILE            the script's own log of a run without the profiler: its step time\n"
    "                             measures what the capture added (docs/capture-overhead.md)\n"
    "  --threshold NAME=NUMBER    a profile rule's threshold (repeatable): gpuIdleGapMs (1),\n"
    "                             gpuIdleMsPerStep (0.5), pageableKiBPerStep (64), syncApiMsPerStep\n"
    "                             (0.1), launchBoundKernelsPerStep (50), launchBoundMeanUs (10),\n"
    "                             rankImbalancePercent (20), rankImbalanceMsPerStep (0.5),\n"
    "                             exposedCommMsPerStep (1)\n"
    "  -h, --help                 this help\n"
    "\n"
    "exit code: 0 no warning or error, 1 warnings or errors found, 2 usage error or unreadable file\n";

struct FileResult {
  std::string path;
  std::shared_ptr<const source::SourceFile> file;
  std::vector<features::Finding> findings;
};

struct Located {
  uint32_t line, column, end_line, end_column;  // 1-based
};

Located locate(const source::SourceFile& file, source::ByteRange r) {
  auto start = toPosition(file.text(), file.lines(), r.begin, PositionEncoding::Utf16);
  auto end = toPosition(file.text(), file.lines(), r.end, PositionEncoding::Utf16);
  return {start.line + 1, start.character + 1, end.line + 1, end.character + 1};
}

const char* sarifLevel(features::Severity s) {
  switch (s) {
    case features::Severity::Error:
      return "error";
    case features::Severity::Warning:
      return "warning";
    default:
      return "note";
  }
}

json sarifReport(const std::vector<FileResult>& results, const Settings& settings) {
  json rules = json::array();
  for (const auto& r : features::allRules()) {
    rules.push_back({{"id", std::string(r.code)},
                     {"shortDescription", {{"text", std::string(r.summary)}}},
                     {"helpUri", ruleDocumentationUrl(settings, r.code)},
                     {"defaultConfiguration", {{"level", sarifLevel(r.default_severity)}}}});
  }
  json out_results = json::array();
  for (const auto& fr : results) {
    for (const auto& f : fr.findings) {
      Located at = locate(*fr.file, f.range);
      out_results.push_back({{"ruleId", f.code},
                             {"level", sarifLevel(f.severity)},
                             {"message", {{"text", f.message}}},
                             {"locations",
                              {{{"physicalLocation",
                                 {{"artifactLocation", {{"uri", fr.path}}},
                                  {"region",
                                   {{"startLine", at.line},
                                    {"startColumn", at.column},
                                    {"endLine", at.end_line},
                                    {"endColumn", at.end_column}}}}}}}}});
    }
  }
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs",
           {{{"tool", {{"driver", {{"name", "sightline"}, {"version", SIGHTLINE_VERSION}, {"rules", rules}}}}},
             {"columnKind", "utf16CodeUnits"},
             {"results", out_results}}}}};
}

struct CheckArgs {
  std::string format = "text";
  std::vector<std::string> paths;
  Settings settings;
  std::string profile_path;                // the first; all of them in profile_paths
  std::vector<std::string> profile_paths;  // one, or one report per rank of a run
  attribution::PathMapper mapper;
  std::vector<std::string> compiled_code;  // --compiled-code folders
  std::string step_log;                    // --step-log
  std::string timing_path;                 // --timing
};

std::string disableRule(Settings& settings, const std::string& code) {
  if (!features::findRule(code)) return "unknown rule \"" + code + "\"";
  settings.rules.rules[code].enabled = false;
  return "";
}

std::string setSeverity(Settings& settings, const std::string& v) {
  auto eq = v.find('=');
  auto severity = eq == std::string::npos ? std::nullopt : features::parseSeverity(v.substr(eq + 1));
  if (!severity || !features::findRule(v.substr(0, eq)))
    return "expected --severity CODE=error|warning|information|hint, got \"" + v + "\"";
  settings.rules.rules[v.substr(0, eq)].severity = severity;
  return "";
}

std::string setThreshold(Settings& settings, const std::string& v) {
  auto eq = v.find('=');
  std::vector<std::string> warnings;
  if (eq != std::string::npos) {
    char* end = nullptr;
    std::string number = v.substr(eq + 1);
    double x = std::strtod(number.c_str(), &end);
    if (!number.empty() && end && *end == 0)
      parseThresholds({{v.substr(0, eq), x}}, settings.thresholds, warnings);
    else
      warnings.push_back("expected a number after =");
  } else {
    warnings.push_back("expected NAME=NUMBER");
  }
  return warnings.empty() ? "" : "--threshold " + v + ": " + warnings.front();
}

std::optional<int> parseCheckArgs(const std::vector<std::string>& args, CheckArgs& into, std::ostream& out,
                                  std::ostream& err) {
  cli::CommandLine command_line("check", kUsage);
  Settings& settings = into.settings;
  command_line.option("--format", cli::choiceInto(into.format, {"text", "json", "sarif"}, "format"))
      .option("--disable", [&settings](const std::string& v) { return disableRule(settings, v); })
      .option("--severity", [&settings](const std::string& v) { return setSeverity(settings, v); })
      .option("--profile",
              [&into](const std::string& v) {
                if (into.profile_path.empty()) into.profile_path = v;
                into.profile_paths.push_back(v);
                return std::string();
              })
      .option("--map", cli::mapRuleInto(into.mapper))
      .option("--compiled-code",
              [&into](const std::string& v) {
                into.compiled_code.push_back(v);
                return std::string();
              })
      .option("--step-log", cli::valueInto(into.step_log))
      .option("--timing", cli::valueInto(into.timing_path))
      .option("--threshold", [&settings](const std::string& v) { return setThreshold(settings, v); })
      .positional(&into.paths);
  if (auto code = command_line.parse(args, out, err)) return code;
  if (into.paths.empty()) {
    err << "sightline check: no file given\n" << kUsage;
    return 2;
  }
  return std::nullopt;
}

// The findings of one file, with the profile's evidence and rules when one is loaded.
FileResult checkFile(const cli::NamedFile& named, const join::ProfileJoin* profile,
                     const features::StepVerdict* verdict, const Settings& settings, std::ostream& err) {
  FileResult r{named.path, named.file, {}};
  const source::SourceIndex& index = *named.index;
  if (index.has_syntax_errors)
    err << "sightline check: " << named.path << " has syntax errors; results may be partial\n";
  r.findings = features::computeDiagnostics(*named.file, index, settings.rules);
  if (!profile) return r;
  auto joined = join::joinFile(*profile, nullptr, named.absolute, *named.file, index);
  r.findings = features::confirmWithProfile(std::move(r.findings), *named.file, index, joined.measured,
                                            profile->profile(), verdict, settings.rules, settings.thresholds);
  if (auto f = features::sourceMismatchFinding(*named.file, index, joined.anchors, profile->profile(), settings.rules,
                                               std::filesystem::path(named.path).filename().string(), nullptr,
                                               &joined.measured))
    r.findings.insert(r.findings.begin(), std::move(*f));
  return r;
}

// The profile's own warnings (lost records, a reader's): said as the report says them, before
// the findings, so no verdict reads as sure when the capture lost what it rests on.
void writeFindings(const std::vector<FileResult>& results, const std::vector<std::string>& profile_warnings,
                   const CheckArgs& args, std::ostream& out) {
  if (args.format == "text") {
    // Messages quote the script's and the profile's names (a Python function's, a kernel's).
    TerminalSafeStream safe(out);
    for (const auto& w : profile_warnings)
      safe << (args.profile_paths.empty() ? std::string("profile") : args.profile_paths.front()) << ": warning: " << w
           << " [profile-warning]\n";
    for (const auto& r : results) {
      for (const auto& f : r.findings) {
        Located at = locate(*r.file, f.range);
        safe << r.path << ":" << at.line << ":" << at.column << ": " << features::severityName(f.severity) << ": "
             << f.message << " [" << f.code << "]\n";
      }
    }
  } else if (args.format == "json") {
    json files = json::array();
    for (const auto& r : results) {
      json diags = json::array();
      for (const auto& f : r.findings) {
        Located at = locate(*r.file, f.range);
        diags.push_back({{"line", at.line},
                         {"column", at.column},
                         {"end_line", at.end_line},
                         {"end_column", at.end_column},
                         {"code", f.code},
                         {"severity", std::string(features::severityName(f.severity))},
                         {"message", f.message}});
      }
      files.push_back({{"path", r.path}, {"diagnostics", diags}});
    }
    out << protocol::dumpJson({{"files", files}, {"profile_warnings", profile_warnings}}) << "\n";
  } else {
    out << sarifReport(results, args.settings).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
}

}  // namespace

int runCheckCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CheckArgs parsed;
  if (auto code = parseCheckArgs(args, parsed, out, err)) return *code;
  bool unreadable = false;
  auto named = cli::readNamedFiles(parsed.paths, "check", err, unreadable);
  std::unique_ptr<join::ProfileJoin> profile;
  if (!parsed.profile_path.empty()) {
    cli::mapOntoFiles(parsed.mapper, parsed.paths);
    std::string error;
    cli::JoinRequest request;
    request.idle_gap_ns = parsed.settings.thresholds.gpu_idle_gap_ns;
    request.compiled_code = parsed.compiled_code;
    if (!parsed.step_log.empty()) {
      request.measured = readStepLog(parsed.step_log, error);
      if (!request.measured) {
        err << "sightline check: --step-log " << error << "\n";
        return 2;
      }
    }
    profile = cli::loadJoinedProfile(parsed.profile_paths, parsed.mapper, named, request, error);
    if (profile && !parsed.timing_path.empty()) {
      auto timing = cli::loadJoinedProfile({parsed.timing_path}, parsed.mapper, named, request, error);
      if (!timing) {
        err << "sightline check: --timing: " << error << "\n";
        return 2;
      }
      profile->setTiming(*timing, std::filesystem::path(parsed.timing_path).filename().string());
    }
    if (!profile) {
      err << "sightline check: " << error << "\n";
      return 2;
    }
  }
  std::vector<FileResult> results;
  results.reserve(named.size());
  // The verdict once, for every file checked.
  auto verdict = loadVerdict(profile.get());
  for (const auto& file : named)
    results.push_back(checkFile(file, profile.get(), verdict ? &*verdict : nullptr, parsed.settings, err));
  bool failing = false;
  for (const auto& r : results)
    for (const auto& f : r.findings)
      failing = failing || f.severity == features::Severity::Error || f.severity == features::Severity::Warning;
  std::vector<std::string> profile_warnings;
  if (profile) profile_warnings = profileWarnings(profile->attribution(), profile->profile().info);
  writeFindings(results, profile_warnings, parsed, out);
  if (unreadable) return 2;
  return failing ? 1 : 0;
}

}  // namespace sightline::server
