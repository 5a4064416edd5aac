// The check verb. Columns are 1-based UTF-16 code units in every format (SARIF's default
// columnKind), so text, JSON and SARIF agree with what editors show.
#include "server/check_command.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/attribution/path_mapping.h"
#include "analysis/features/diagnostics.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/features/source_match.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/call_site_source.h"
#include "server/cli_args.h"
#include "server/position_conversion.h"
#include "server/settings.h"
#include "server/uri.h"

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
    "  --profile PATH             add what a profile measured (nsys .sqlite/.nsys-rep): evidence on\n"
    "                             findings, and the rules that need a profile (pageable-memcpy, ...)\n"
    "  --map FROM=TO              map profile paths starting with FROM onto TO (repeatable)\n"
    "  --threshold NAME=NUMBER    a profile rule's threshold (repeatable): gpuIdleGapMs (1),\n"
    "                             gpuIdleMsPerStep (0.5), pageableKiBPerStep (64), syncApiMsPerStep\n"
    "                             (0.1), launchBoundKernelsPerStep (50), launchBoundMeanUs (10)\n"
    "  -h, --help                 this help\n"
    "\n"
    "exit code: 0 no warning or error, 1 warnings or errors found, 2 usage error or unreadable file\n";

struct FileResult {
  std::string path;
  std::unique_ptr<source::SourceFile> file;
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

}  // namespace

int runCheckCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string format = "text";
  std::vector<std::string> paths;
  Settings settings;
  std::string profile_path;
  attribution::PathMapper mapper;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&] { return optionValue(args, i, "check", err); };
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return 0;
    } else if (a == "--format") {
      auto v = value();
      if (!v) return 2;
      format = *v;
      if (format != "text" && format != "json" && format != "sarif") {
        err << "sightline check: unknown format \"" << format << "\" (text, json or sarif)\n";
        return 2;
      }
    } else if (a == "--disable") {
      auto v = value();
      if (!v) return 2;
      if (!features::findRule(*v)) {
        err << "sightline check: unknown rule \"" << *v << "\"\n";
        return 2;
      }
      settings.rules.rules[*v].enabled = false;
    } else if (a == "--severity") {
      auto v = value();
      if (!v) return 2;
      auto eq = v->find('=');
      auto severity = eq == std::string::npos ? std::nullopt : features::parseSeverity(v->substr(eq + 1));
      if (!severity || !features::findRule(v->substr(0, eq))) {
        err << "sightline check: expected --severity CODE=error|warning|information|hint, got \"" << *v << "\"\n";
        return 2;
      }
      settings.rules.rules[v->substr(0, eq)].severity = severity;
    } else if (a == "--profile") {
      auto v = value();
      if (!v) return 2;
      profile_path = *v;
    } else if (a == "--map") {
      if (!addMapOption(args, i, "check", err, mapper)) return 2;
    } else if (a == "--threshold") {
      auto v = value();
      if (!v) return 2;
      auto eq = v->find('=');
      std::vector<std::string> warnings;
      if (eq != std::string::npos) {
        char* end = nullptr;
        std::string number = v->substr(eq + 1);
        double x = std::strtod(number.c_str(), &end);
        if (!number.empty() && end && *end == 0)
          parseThresholds({{v->substr(0, eq), x}}, settings.thresholds, warnings);
        else
          warnings.push_back("expected a number after =");
      } else {
        warnings.push_back("expected NAME=NUMBER");
      }
      if (!warnings.empty()) {
        err << "sightline check: --threshold " << *v << ": " << warnings.front() << "\n";
        return 2;
      }
    } else if (!a.empty() && a[0] == '-') {
      err << "sightline check: unknown option " << a << "\n" << kUsage;
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    err << "sightline check: no file given\n" << kUsage;
    return 2;
  }

  std::optional<model::Profile> profile;
  attribution::Attribution attr;
  std::map<model::StringId, std::vector<features::FunctionAnchor>> all_anchors;
  if (!profile_path.empty()) {
    auto loaded = ingest::loadProfile(profile_path);
    if (!loaded.profile) {
      err << "sightline check: " << loaded.error << "\n";
      return 2;
    }
    profile = std::move(loaded.profile);
    mapOntoFiles(mapper, paths);
    CallSiteSource call_sites(mapper);
    attribution::Options options;
    options.call_sites = std::ref(call_sites);
    options.idle_gap_ns = settings.thresholds.gpu_idle_gap_ns;
    attr = attribution::attribute(*profile, options);
    all_anchors = features::collectFunctionAnchors(*profile);
  }

  std::vector<FileResult> results;
  bool unreadable = false;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    if (!in || std::filesystem::is_directory(path, ec)) {
      err << "sightline check: cannot read " << path << "\n";
      unreadable = true;
      continue;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    FileResult r;
    r.path = path;
    r.file = std::make_unique<source::SourceFile>(buffer.str());
    auto index = source::buildSourceIndex(*r.file);
    if (index.has_syntax_errors) err << "sightline check: " << path << " has syntax errors; results may be partial\n";
    r.findings = features::computeDiagnostics(*r.file, index, settings.rules);
    if (profile) {
      std::string here = std::filesystem::absolute(path, ec).lexically_normal().string();
      auto mapsHere = [&](const std::string& profile_file) {
        auto mapped = mapper.map(profile_file);
        return mapped && std::filesystem::absolute(*mapped, ec).lexically_normal().string() == here;
      };
      auto costs = features::fileCosts(*profile, attr, mapsHere);
      r.findings = features::confirmWithProfile(std::move(r.findings), *r.file, index, costs, *profile, settings.rules,
                                                settings.thresholds);
      std::vector<features::FunctionAnchor> anchors;
      for (const auto& [file, file_anchors] : all_anchors)
        if (mapsHere(profile->strings[file])) anchors.insert(anchors.end(), file_anchors.begin(), file_anchors.end());
      if (auto f = features::sourceMismatchFinding(*r.file, index, anchors, *profile, settings.rules,
                                                   std::filesystem::path(path).filename().string()))
        r.findings.insert(r.findings.begin(), std::move(*f));
    }
    results.push_back(std::move(r));
  }

  bool failing = false;
  for (const auto& r : results)
    for (const auto& f : r.findings)
      failing = failing || f.severity == features::Severity::Error || f.severity == features::Severity::Warning;

  if (format == "text") {
    for (const auto& r : results) {
      for (const auto& f : r.findings) {
        Located at = locate(*r.file, f.range);
        out << r.path << ":" << at.line << ":" << at.column << ": " << features::severityName(f.severity) << ": "
            << f.message << " [" << f.code << "]\n";
      }
    }
  } else if (format == "json") {
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
    out << protocol::dumpJson({{"files", files}}) << "\n";
  } else {
    out << sarifReport(results, settings).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
  if (unreadable) return 2;
  return failing ? 1 : 0;
}

}  // namespace sightline::server
