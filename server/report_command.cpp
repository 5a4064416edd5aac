// The report verb: load -> attribute -> map profile paths to local files -> print.
// Text output prints every line of each file with a left margin: time per step (or total),
// share of all GPU time, forward/backward split, a bar; def and loop header lines also show
// the roll-up of their bodies.
#include "server/report_command.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/nvtx_sites.h"
#include "analysis/attribution/path_mapping.h"
#include "analysis/features/compare_alignment.h"
#include "analysis/features/profile_view.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/source/source_index.h"
#include "protocol/json_in.h"
#include "server/call_site_source.h"
#include "server/cli_args.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;
using attribution::Attribution;
using attribution::LineCost;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline report --profile PROFILE [options] [FILE...]\n"
    "\n"
    "Puts the GPU time of a profile on the lines of Python files. PROFILE is an nsys SQLite\n"
    "export (nsys export --type sqlite --include-blobs=true) or a .nsys-rep (needs nsys on PATH).\n"
    "\n"
    "options:\n"
    "  --profile PATH      the profile to read (required)\n"
    "  --format text|json  annotated source (default) or JSON for every file (docs/report-json.md)\n"
    "  --total             times over the whole profile instead of per step\n"
    "  --compare PATH      a second profile (before a change): adds each line's change from it\n"
    "  --map FROM=TO       map profile paths starting with FROM onto TO (repeatable)\n"
    "  -h, --help          this help\n"
    "\n"
    "Profile paths are mapped onto FILEs by longest common path suffix, then onto files under\n"
    "the current directory. NVTX ranges that a FILE opens (torch.cuda.nvtx.range(\"fwd\"), ...)\n"
    "charge the GPU work inside them to the opening line when nothing finer is known.\n";

std::string readFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

struct LocalFile {
  std::string path;
  std::string absolute;
  source::SourceFile source;
  source::SourceIndex index;
};

struct MappedFile {
  model::StringId profile_file;
  std::optional<std::string> local_path;
};

}  // namespace

int runReportCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string profile_path, compare_path, format = "text";
  bool total = false;
  std::vector<std::string> files;
  attribution::PathMapper mapper;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&] { return optionValue(args, i, "report", err); };
    if (a == "-h" || a == "--help") {
      out << kUsage;
      return 0;
    } else if (a == "--profile") {
      auto v = value();
      if (!v) return 2;
      profile_path = *v;
    } else if (a == "--format") {
      auto v = value();
      if (!v) return 2;
      format = *v;
      if (format != "text" && format != "json") {
        err << "sightline report: unknown format \"" << format << "\" (text or json)\n";
        return 2;
      }
    } else if (a == "--compare") {
      auto v = value();
      if (!v) return 2;
      compare_path = *v;
    } else if (a == "--total") {
      total = true;
    } else if (a == "--map") {
      if (!addMapOption(args, i, "report", err, mapper)) return 2;
    } else if (!a.empty() && a[0] == '-') {
      err << "sightline report: unknown option " << a << "\n" << kUsage;
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (profile_path.empty()) {
    err << "sightline report: --profile is required\n" << kUsage;
    return 2;
  }
  if (format == "text" && files.empty()) {
    err << "sightline report: name the Python file(s) to annotate, or use --format json\n";
    return 2;
  }

  auto loaded = ingest::loadProfile(profile_path);
  if (!loaded.profile) {
    err << "sightline report: " << loaded.error << "\n";
    return 2;
  }
  ingest::LoadResult compare;
  if (!compare_path.empty()) {
    compare = ingest::loadProfile(compare_path);
    if (!compare.profile) {
      err << "sightline report: --compare: " << compare.error << "\n";
      return 2;
    }
  }
  // The named files, parsed once: their NVTX range sites feed attribution, their lines the output.
  std::error_code ec;
  std::vector<LocalFile> sources;
  attribution::Options options, compare_options;
  int exit_code = 0;
  for (const auto& file : files) {
    bool ok = false;
    std::string text = readFile(file, ok);
    if (!ok) {
      err << "sightline report: cannot read " << file << "\n";
      exit_code = 2;
      continue;
    }
    auto& src = sources.emplace_back(LocalFile{file, fs::absolute(file, ec).string(), source::SourceFile(text), {}});
    src.index = source::buildSourceIndex(src.source);
    auto sites = attribution::findNvtxSites(src.source, src.index, loaded.profile->strings.intern(src.absolute));
    options.nvtx_sites.insert(options.nvtx_sites.end(), sites.begin(), sites.end());
    if (compare.profile) {
      auto before = attribution::findNvtxSites(src.source, src.index, compare.profile->strings.intern(src.absolute));
      compare_options.nvtx_sites.insert(compare_options.nvtx_sites.end(), before.begin(), before.end());
    }
  }
  mapOntoFiles(mapper, files);
  // Traces of Python calls name frames by callee: call sites come from the mapped files.
  CallSiteSource call_sites(mapper);
  for (const auto& src : sources) call_sites.add(src.absolute, src.source, src.index);
  options.call_sites = std::ref(call_sites);
  const model::Profile& profile = *loaded.profile;
  Attribution attr = attribution::attribute(profile, options);
  // The compare profile's costs per local file (absolute path -> 1-based line -> ns).
  Attribution compare_attr;
  std::map<std::string, std::map<int32_t, int64_t>> compare_lines;
  // Per local file whose lines the compare profile measured in another version of the script:
  // how its lines were matched ("" when the versions agree).
  std::map<std::string, std::string> compare_aligned;
  if (compare.profile) {
    compare_options.call_sites = std::ref(call_sites);
    compare_attr = attribution::attribute(*compare.profile, compare_options);
    auto before_anchors = features::collectFunctionAnchors(*compare.profile);
    auto after_anchors = features::collectFunctionAnchors(profile);
    for (const auto& src : sources) {
      auto mapsHere = [&](const std::string& profile_path) {
        auto local = mapper.map(profile_path);
        return local && fs::absolute(*local, ec).string() == src.absolute;
      };
      auto anchorsHere = [&](const model::Profile& p, const auto& anchors) {
        std::vector<features::FunctionAnchor> out;
        for (const auto& [file, list] : anchors)
          if (mapsHere(p.strings[file])) out.insert(out.end(), list.begin(), list.end());
        return out;
      };
      auto before = features::fileCosts(*compare.profile, compare_attr, mapsHere);
      auto before_here = anchorsHere(*compare.profile, before_anchors);
      if (before.lines.empty()) continue;
      if (features::matchSource(src.source, src.index, before_here, *compare.profile).differs()) {
        // The script changed between the runs: its lines are matched by the work they ran.
        auto after = features::fileCosts(profile, attr, mapsHere);
        auto alignment = features::alignProfiledLines(before.lines, *compare.profile, before_here, after.lines, profile,
                                                      anchorsHere(profile, after_anchors));
        compare_aligned[src.absolute] = features::describe(alignment);
        before = features::moveLines(before, alignment);
      }
      auto& into = compare_lines[src.absolute];
      for (const auto& [line, c] : before.lines) into[line] += c.gpu_ns;
    }
  }
  // Each profile per its own steps, when both know them (and --total is not given).
  bool compare_per_step = !total && attr.steps > 0 && compare_attr.steps > 0;
  double compare_steps = compare_per_step ? compare_attr.steps : 1;

  std::vector<MappedFile> mapped;
  for (const auto& [file, lines] : attr.files) mapped.push_back({file, mapper.map(profile.strings[file])});

  int steps = total || attr.steps <= 0 ? 1 : attr.steps;
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.total_gpu_ns));

  if (format == "json") {
    json jfiles = json::array();
    for (const auto& m : mapped) {
      json jlines = json::array();
      int64_t file_ns = 0;
      for (const auto& [line, c] : attr.files.at(m.profile_file)) {
        file_ns += c.gpu_ns;
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
                          {"top_kernels", topKernels(profile, c, 5)}});
        if (compare.profile && m.local_path) {
          const auto& before = compare_lines[fs::absolute(*m.local_path, ec).string()];
          auto b = before.find(line);
          jlines.back()["compare_gpu_ns"] = b == before.end() ? 0 : b->second;
        }
      }
      jfiles.push_back({{"path", profile.strings[m.profile_file]},
                        {"local_path", m.local_path ? json(*m.local_path) : json(nullptr)},
                        {"gpu_ns", file_ns},
                        {"lines", jlines}});
    }
    json doc = {{"profile",
                 {{"path", profile_path},
                  {"format", profile.info.format},
                  {"tool_version", profile.info.tool_version},
                  {"schema_version", profile.info.schema_version},
                  {"gpus", profile.info.gpus},
                  {"capabilities", profile.info.capabilities},
                  {"warnings", profile.info.warnings}}},
                {"total_gpu_ns", attr.total_gpu_ns},
                {"attributed_gpu_ns", attr.attributed_gpu_ns},
                {"unattributed_gpu_ns", attr.unattributed_gpu_ns},
                {"steps", attr.steps},
                {"steps_source", attr.steps_source},
                {"by_method", methodsJson(attr.by_method)},
                {"files", jfiles}};
    if (attr.attributed_gpu_ns == 0) doc["advice"] = ingest::captureAdvice();
    if (compare.profile) {
      json files_before = json::array();
      for (const auto& [local, lines] : compare_lines) {
        json jl = json::array();
        for (const auto& [line, ns] : lines) jl.push_back({{"line", line}, {"gpu_ns", ns}});
        files_before.push_back({{"local_path", local}, {"lines", jl}});
      }
      json aligned = json::object();
      for (const auto& [local, how] : compare_aligned) aligned[local] = how;
      doc["compare"] = {{"path", compare_path},
                        {"total_gpu_ns", compare_attr.total_gpu_ns},
                        {"steps", compare_attr.steps},
                        {"files", files_before},
                        {"aligned", aligned}};
    }
    out << protocol::dumpJson(doc) << "\n";
    return 0;
  }

  // Header.
  out << "Profile   " << profile_path << " (" << (profile.info.format == "nsys-sqlite" ? "Nsight Systems " : "")
      << profile.info.tool_version << ")";
  if (!profile.info.gpus.empty()) out << ", GPU: " << profile.info.gpus.front();
  out << "\n";
  out << "Steps     ";
  if (attr.steps > 0)
    out << attr.steps << " (" << attr.steps_source << ")";
  else
    out << "not detected";
  out << "\nGPU time  " << features::formatMilliseconds(static_cast<double>(attr.total_gpu_ns)) << " ms total";
  if (attr.steps > 0)
    out << ", " << features::formatMilliseconds(static_cast<double>(attr.total_gpu_ns) / attr.steps) << " ms/step";
  out << "\n";
  if (!attr.files.empty()) {
    out << "Methods  ";
    for (size_t m = 0; m < attribution::kMethodCount; ++m)
      if (attr.by_method[m] > 0)
        out << " " << attribution::methodName(static_cast<attribution::Method>(m)) << " "
            << formatPercent(static_cast<double>(attr.by_method[m]) / total_ns);
    out << "\n";
  }
  if (compare.profile) {
    double before = static_cast<double>(compare_attr.total_gpu_ns) / compare_steps;
    double now = static_cast<double>(attr.total_gpu_ns) / (compare_per_step ? attr.steps : 1);
    out << "Compare   " << compare_path << ": " << features::formatMilliseconds(before) << " -> "
        << features::formatMilliseconds(now) << (compare_per_step ? " ms/step" : " ms in total") << ", "
        << features::formatDelta(now - before) << "\n";
    for (const auto& [local, how] : compare_aligned)
      out << "          " << fs::path(local).filename().string() << " changed since the compared run: " << how << "\n";
  }
  for (const auto& w : profile.info.warnings) out << "Warning   " << w << "\n";
  if (attr.attributed_gpu_ns == 0)
    out << "No GPU time could be put on source lines: " << ingest::captureAdvice() << "\n";

  for (const auto& local : sources) {
    const std::string& file = local.path;
    const std::string& text = local.source.text();
    std::map<int32_t, LineCost> lines;
    int64_t this_file = 0;
    for (const auto& m : mapped) {
      if (!m.local_path || fs::absolute(*m.local_path, ec).string() != local.absolute) continue;
      for (const auto& [line, c] : attr.files.at(m.profile_file)) {
        attribution::addCost(lines[line], c);
        this_file += c.gpu_ns;
      }
    }
    int64_t other = attr.attributed_gpu_ns - this_file;
    out << "\n"
        << file << ": " << formatPercent(static_cast<double>(this_file) / total_ns) << " of GPU time on its lines, "
        << formatPercent(static_cast<double>(other) / total_ns) << " on other files, "
        << formatPercent(static_cast<double>(attr.unattributed_gpu_ns) / total_ns) << " unattributed\n";

    // Roll-ups on def and loop header lines (1-based).
    const source::SourceFile& src = local.source;
    const source::SourceIndex& index = local.index;
    std::map<int32_t, int64_t> rollup;
    auto addRange = [&](uint32_t first0, uint32_t last0) {
      int64_t sum = 0;
      for (auto it = lines.lower_bound(static_cast<int32_t>(first0 + 1));
           it != lines.end() && it->first <= static_cast<int32_t>(last0 + 1); ++it)
        sum += it->second.gpu_ns;
      if (sum > 0) rollup[static_cast<int32_t>(first0 + 1)] = sum;
    };
    for (const auto& f : index.functions) addRange(f.def_line, f.end_line);
    for (const auto& l : index.loops)
      addRange(src.lines().pointAt(l.range.begin).line, src.lines().pointAt(l.range.end).line);

    std::string unit = total ? "ms" : "ms/step";
    const std::map<int32_t, int64_t>* before_lines = nullptr;
    if (compare.profile) {
      auto it = compare_lines.find(local.absolute);
      static const std::map<int32_t, int64_t> kNone;
      before_lines = it == compare_lines.end() ? &kNone : &it->second;
    }
    // The change column: this profile minus the compare profile, on the line.
    auto deltaColumn = [&](int32_t line) -> std::string {
      if (!before_lines) return "";
      auto b = before_lines->find(line);
      auto n = lines.find(line);
      double before = b == before_lines->end() ? 0 : static_cast<double>(b->second) / compare_steps;
      double now = n == lines.end() ? 0 : static_cast<double>(n->second.gpu_ns) / (compare_per_step ? attr.steps : 1);
      if (std::abs(now - before) < 5e3) return pad("", 13);
      return "  " + pad(features::formatDelta(now - before), 11, true);
    };
    out << pad(unit, 9) << "  " << pad("share", 6) << "  " << pad("fwd + bwd", 15, true) << "  " << pad("", 10);
    if (before_lines) out << "  " << pad(compare_per_step ? "Δ per step" : "Δ total", 11, true);
    out << " │\n";
    for (uint32_t l = 0; l < src.lines().lineCount(); ++l) {
      auto r = src.lines().lineRange(l);
      if (l + 1 == src.lines().lineCount() && r.begin == r.end) break;
      std::string code = text.substr(r.begin, r.end - r.begin);
      int32_t line = static_cast<int32_t>(l + 1);
      std::string margin;
      auto it = lines.find(line);
      auto roll = rollup.find(line);
      if (it != lines.end() && it->second.gpu_ns > 0) {
        const auto& c = it->second;
        double share = static_cast<double>(c.gpu_ns) / total_ns;
        std::string split = c.backward_ns > 0
                                ? features::formatMilliseconds(static_cast<double>(c.forward_ns) / steps) + " + " +
                                      features::formatMilliseconds(static_cast<double>(c.backward_ns) / steps)
                                : "";
        margin = pad(features::formatMilliseconds(static_cast<double>(c.gpu_ns) / steps), 9) + "  " +
                 pad(formatPercent(share), 6) + "  " + pad(split, 15, true) + "  " + pad(bar(share), 10, true);
      } else if (roll != rollup.end()) {
        double share = static_cast<double>(roll->second) / total_ns;
        margin = pad("Σ " + features::formatMilliseconds(static_cast<double>(roll->second) / steps), 9) + "  " +
                 pad(formatPercent(share), 6) + "  " + pad("", 15) + "  " + pad("", 10);
      } else {
        margin = std::string(9 + 2 + 6 + 2 + 15 + 2 + 10, ' ');
      }
      out << margin << deltaColumn(line) << " │" << pad(std::to_string(line), 5) << "  " << code << "\n";
    }
  }
  return exit_code;
}

}  // namespace sightline::server
