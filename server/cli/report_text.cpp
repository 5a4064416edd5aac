// The report as text: every line of each file (or its hot lines) with a left margin: time per
// step (or total), share of all GPU time, forward/backward split, a bar; def and loop header
// lines also show the roll-up of their bodies.
#include "server/cli/report_data.h"

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
#include "server/cli/report_data.h"
#include "server/render/profile_text.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using attribution::LineCost;
using features::formatBytes;
using nlohmann::json;

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

// Files longer than this print their lines with costs only, unless --all-lines.
constexpr uint32_t kWholeFileLines = 150;

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
  bool named =
      std::any_of(attr.ranks.begin(), attr.ranks.end(), [](const auto& r) { return r.rank_source == "file name"; });
  out << "Ranks     " << attr.ranks.size() << " (" << attr.processes << " processes, " << attr.ranks.size()
      << " with GPU work"
      << (!recorded ? "; no distributed rank recorded, named by GPU"
          : named   ? "; ranks from the reports' file names"
                    : "")
      << ")\n";
  size_t width = 10;
  for (const auto& r : attr.ranks) width = std::max(width, r.label.size() + 2);
  auto rows = features::rankRows(attr.ranks);
  bool per_step = std::all_of(rows.begin(), rows.end(), [](const auto& r) { return r.per_step; });
  std::string unit = per_step ? " ms/step" : " ms";
  bool paired = std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.paired; });
  out << "          " << pad("rank", width, true) << pad("GPU" + unit, 13) << pad("busy", 8) << pad("comm" + unit, 14)
      << pad("exposed", 10) << (paired ? pad("waiting", 9) + pad("moving", 8) + pad("last in", 9) : "")
      << pad("steps", 7) << pad("median step", 13) << "\n";
  for (const auto& row : rows) {
    const auto& r = *row.rank;
    out << "          " << pad(r.label, width, true) << pad(features::formatMilliseconds(row.gpu_ns), 13)
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
  if (per_step)
    out << "          (per rank over its steady steps: GPU and comm the mean per step, busy its GPU busy time over "
           "their wall, the step their median)\n";
}

std::string fileLine(const join::MemoryPlace& p) {
  return fs::path(p.path).filename().string() + ":" + std::to_string(p.line);
}

// The memory header: the peak, what holds it, and an out-of-memory error with its call chain.
void writeMemory(const join::MemoryStory& m, std::ostream& out) {
  if (m.pool_growth_bytes > 0) {
    out << "Reserved  the caching allocator's pool grew by " << formatBytes(m.pool_growth_bytes)
        << " (cudaMalloc), at most " << formatBytes(m.peak_reserved_bytes) << " reserved at once";
    for (size_t i = 0; i < m.growth.size() && i < 3; ++i)
      out << (i ? ", " : "; grown by ") << fileLine(m.growth[i]) << " " << formatBytes(m.growth[i].bytes);
    out << "\n";
  }
  if (!m.allocated_known) return;
  out << "Memory    peak " << formatBytes(m.peak_allocated_bytes) << " allocated, "
      << formatBytes(m.peak_reserved_bytes) << " reserved";
  if (m.peak_reserved_bytes > m.peak_allocated_bytes)
    out << " (" << formatBytes(m.peak_reserved_bytes - m.peak_allocated_bytes) << " cached, not allocated)";
  if (std::string when = memoryPeakWhen(m); !when.empty()) out << ", " << when;
  if (m.devices > 1) out << ", on device " << m.device << " of " << m.devices;
  out << "\n";
  if (m.allocated_before_trace_bytes > 0)
    out << "          " << formatBytes(m.allocated_before_trace_bytes)
        << (m.source == "memory-snapshot"
                ? " was allocated before the oldest event the recorded history kept (a full ring buffer keeps the "
                  "last; their lines are unknown unless still alive at the dump)\n"
                : " was allocated before the trace began (the model, optimizer state, ...: on no line)\n");
  if (!m.top.empty()) {
    out << "          held at the peak by";
    for (size_t i = 0; i < m.top.size() && i < 5; ++i)
      out << (i ? ", " : " ") << fileLine(m.top[i]) << " " << formatBytes(m.top[i].bytes);
    if (m.unattributed_bytes > 0) out << "; " << formatBytes(m.unattributed_bytes) << " on no line of the user's";
    out << "\n";
  }
  if (!m.oom) return;
  out << "Out of memory  " << (m.oom->where.path.empty() ? "on no line of the user's" : fileLine(m.oom->where))
      << (m.oom->where.function.empty() ? "" : " (" + m.oom->where.function + ")") << " asked "
      << formatBytes(m.oom->requested_bytes) << " with " << formatBytes(m.oom->free_bytes) << " free\n";
  if (m.oom->chain.size() > 1) {
    out << "          called from";
    for (size_t i = 0; i < m.oom->chain.size(); ++i)
      out << (i ? " → " : " ") << fileLine(m.oom->chain[i])
          << (m.oom->chain[i].function.empty() ? "" : " (" + m.oom->chain[i].function + ")");
    out << "\n";
  }
}

std::string signedBytes(int64_t n) { return (n > 0 ? "+" : "") + formatBytes(n); }

// --compare of two profiles that tell memory: the peak's change, and the lines that changed most.
void writeMemoryChange(const ReportData& d, std::ostream& out) {
  if (!comparesMemory(d)) return;
  const auto& now = *d.main.memory().story;
  const auto& before = *d.compare->memory().story;
  out << "Change    against " << d.args.compare_path << ": peak " << formatBytes(before.peak_allocated_bytes) << " → "
      << formatBytes(now.peak_allocated_bytes) << " ("
      << signedBytes(now.peak_allocated_bytes - before.peak_allocated_bytes) << ")\n";
  auto changes = memoryChanges(d);
  size_t shown = 0;
  for (const auto& c : changes) {
    if (c.peakChange() == 0 || shown == 5) continue;
    out << (shown++ == 0 ? "          at the peak: " : ", ") << fs::path(c.path).filename().string() << ":" << c.line
        << " " << signedBytes(c.peakChange());
  }
  if (shown > 0) out << "\n";
  std::stable_sort(changes.begin(), changes.end(), [](const MemoryChange& a, const MemoryChange& b) {
    return std::llabs(a.stepChange()) > std::llabs(b.stepChange());
  });
  shown = 0;
  if (now.steady_steps > 0 && before.steady_steps > 0)
    for (const auto& c : changes) {
      if (c.stepChange() == 0 || shown == 5) continue;
      out << (shown++ == 0 ? "          allocated per step: " : ", ") << fs::path(c.path).filename().string() << ":"
          << c.line << " " << signedBytes(c.stepChange());
    }
  if (shown > 0) out << "\n";
}

}  // namespace

void writeHeader(const ReportData& d, std::ostream& out) {
  const model::Profile& profile = d.main.profile();
  const attribution::Attribution& attr = d.main.attribution();
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  out << "Profile   " << d.args.profile_path << " ("
      << (profile.info.format == "nsys-sqlite"       ? "Nsight Systems "
          : profile.info.format == "memory-snapshot" ? "PyTorch memory snapshot"
                                                     : "")
      << profile.info.tool_version << ")\n";
  const auto& memory = d.main.memory().story;
  if (profile.activities.empty() && memory) {
    // A memory snapshot alone: no time to tell.
    writeMemory(*memory, out);
    writeMemoryChange(d, out);
    for (const auto& w : profileWarnings(attr, profile.info)) out << "Warning   " << w << "\n";
    if (memory->top.empty())
      out << "No memory could be put on source lines: " << ingest::captureAdvice(profile.info) << "\n";
    return;
  }
  writeMachine(d, out);
  if (d.job && d.job->ranks.size() > 1) writeJobText(*d.job, d.summaries, out);
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
  if (comparesTimes(d)) {
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
  if (memory) writeMemory(*memory, out);
  writeMemoryChange(d, out);
  for (const auto& w : profileWarnings(attr, profile.info)) out << "Warning   " << w << "\n";
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

namespace {

// The file's first line: its share of the GPU time (or, for a snapshot alone, of the memory
// peak); and where the profile never ran the file, which file it did run.
void writeFileHeader(const ReportData& d, const cli::NamedFile& local, bool memory_only, std::ostream& out) {
  const attribution::Attribution& attr = d.main.attribution();
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  const auto& lines = d.measured.at(local.absolute).lines;
  int64_t this_file = 0;
  for (const auto& [line, c] : lines) this_file += c.gpu_ns;
  int64_t other = attr.attributed_gpu_ns - this_file;
  if (memory_only) {
    int64_t held = 0;
    for (const auto& [line, c] : lines) held += c.memory_peak_bytes;
    out << "\n"
        << local.path << ": " << formatBytes(held) << " of the "
        << formatBytes(d.main.memory().story->peak_allocated_bytes) << " peak held by its lines\n";
  } else {
    out << "\n"
        << local.path << ": " << formatPercent(static_cast<double>(this_file) / total_ns)
        << " of GPU time on its lines, " << formatPercent(static_cast<double>(other) / total_ns) << " on other files, "
        << formatPercent(static_cast<double>(attr.unattributed_gpu_ns) / total_ns) << " unattributed\n";
  }
  // A file edited since it was profiled: where its lines went, and costs left off non-code lines.
  const auto& joined = d.measured.at(local.absolute);
  if (joined.realigned_by != 0)
    out << "Notice    " << local.path << " changed since it was profiled: its code moved "
        << (joined.realigned_by > 0 ? "down " : "up ") << std::abs(joined.realigned_by)
        << (std::abs(joined.realigned_by) == 1 ? " line" : " lines")
        << " (the profile's function names and lines say so); its costs are shown where the code is now\n";
  if (joined.off_code_lines > 0)
    out << "Notice    " << joined.off_code_lines << " of the profile's lines fall on no code of " << local.path
        << " (blank, comment or past its end): the file changed since it was profiled; their costs are not shown\n";
  // A file the profile never ran: say so, and name the one it ran.
  bool seen = std::any_of(d.mapped.begin(), d.mapped.end(),
                          [&](const MappedFile& m) { return m.local_path && *m.local_path == local.absolute; });
  if (!seen && this_file == 0 && other > 0 && !memory_only) {
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
}

}  // namespace

void writeAnnotatedFile(const ReportData& d, const cli::NamedFile& local, std::ostream& out) {
  const attribution::Attribution& attr = d.main.attribution();
  double total_ns = static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns));
  const auto& lines = d.measured.at(local.absolute).lines;
  const auto& memory_story = d.main.memory().story;
  bool memory_only = memory_story && d.main.profile().activities.empty();
  writeFileHeader(d, local, memory_only, out);
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
  // Two profiles of memory alone: the change is memory's (its own column), no time to compare.
  bool memory_compare = comparesMemory(d);
  if (comparesTimes(d)) {
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
  if (!memory_only)
    out << pad(d.args.total ? "ms" : "ms/step", 9) << "  " << pad("share", 6) << "  " << pad("fwd + bwd", 15, true)
        << "  " << pad("", 10);
  if (before_lines) out << "  " << pad(per_step ? "Δ per step" : "Δ total", 11, true);
  // Several ranks: the slowest rank on the line and how far above the median it is.
  bool ranked = attr.ranks.size() > 1;
  size_t rank_width = 12;  // the longest label and its ratio (" ×1.1")
  for (const auto& r : attr.ranks) rank_width = std::max(rank_width, r.label.size() + 5);
  auto rankColumn = [&](int32_t line) -> std::string {
    if (!ranked) return "";
    auto n = lines.find(line);
    if (n == lines.end() || n->second.rank_ns.size() != attr.ranks.size() || n->second.gpu_ns == 0)
      return pad("", rank_width + 2);
    std::vector<int64_t> v;  // each rank's own work: waits for other ranks left out
    for (size_t r = 0; r < attr.ranks.size(); ++r) v.push_back(attribution::rankWorkNs(n->second, r));
    size_t slowest = static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
    int64_t max = v[slowest];
    std::sort(v.begin(), v.end());
    double median = v.size() % 2
                        ? static_cast<double>(v[v.size() / 2])
                        : (static_cast<double>(v[v.size() / 2 - 1]) + static_cast<double>(v[v.size() / 2])) / 2;
    if (static_cast<double>(max) < 1.1 * median) return pad("", rank_width + 2);
    char ratio[24];
    std::snprintf(ratio, sizeof ratio, " ×%.1f", static_cast<double>(max) / std::max(1.0, median));
    return "  " + pad(attr.ranks[slowest].label + ratio, rank_width, true);
  };
  if (ranked) out << "  " << pad("slowest rank", rank_width, true);
  // GPU memory: what the line holds at the peak.
  bool memory = memory_story != nullptr;
  auto memoryColumn = [&](int32_t line) -> std::string {
    if (!memory) return "";
    auto n = lines.find(line);
    int64_t bytes = n == lines.end()                ? 0
                    : memory_story->allocated_known ? n->second.memory_peak_bytes
                                                    : n->second.memory_reserved_bytes;
    if (bytes <= 0) return pad("", 12);
    return "  " + pad(formatBytes(bytes), 10);
  };
  if (memory) out << "  " << pad(memory_story->allocated_known ? "at peak" : "reserved", 10);
  // --compare of memory: each line's change at the peak.
  std::map<int32_t, int64_t> memory_delta;
  if (memory_compare)
    for (const auto& c : memoryChanges(d))
      if (c.path == local.absolute) memory_delta[c.line] = c.peakChange();
  auto memoryDeltaColumn = [&](int32_t line) -> std::string {
    if (!memory_compare) return "";
    auto n = memory_delta.find(line);
    if (n == memory_delta.end() || n->second == 0) return pad("", 13);
    return "  " + pad(signedBytes(n->second), 11);
  };
  if (memory_compare) out << "  " << pad("Δ at peak", 11);
  out << " │\n";
  // One-off GPU time beneath a line (an evaluation, a checkpoint, building the model): a marker
  // after its code, a total never divided by the steps; lines with a twentieth of it and 1 ms or
  // more.
  int64_t oneoff_total = attr.step_summary.oneoff_gpu_ns;
  auto oneoffNote = [&](int32_t line) -> std::string {
    auto n = lines.find(line);
    if (n == lines.end() || d.args.all_steps) return "";
    int64_t ns = n->second.oneoff_inclusive_ns;
    if (ns < std::max<int64_t>(1'000'000, oneoff_total / 20)) return "";
    return "   ◂ one-off " + features::formatMilliseconds(static_cast<double>(ns)) + " ms" +
           (10 * n->second.oneoff_ns < 9 * ns ? " beneath" : "");
  };
  // A line whose work is of three kinds or more and a tenth of the GPU's or more (a model from
  // an installed package called on one line: nothing beneath it is the user's) says what it is.
  auto kindsRow = [&](int32_t line, const std::string& columns) -> std::string {
    auto n = lines.find(line);
    if (n == lines.end() || 10 * static_cast<double>(n->second.gpu_ns) < total_ns) return "";
    auto kinds = features::workByKind(n->second, d.main.profile().strings);
    if (kinds.size() < 3) return "";
    size_t width = 0;  // the columns' width on a terminal: one per UTF-8 character
    for (unsigned char ch : columns) width += (ch & 0xC0) != 0x80 ? 1 : 0;
    return std::string(width, ' ') + " │" + std::string(7, ' ') + "  ↳ by kind: " + workKindsText(kinds) + "\n";
  };
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
    std::string columns = (memory_only ? "" : marginFor(lines, rollup, beneath, line, steps, total_ns)) +
                          deltaColumn(line) + rankColumn(line) + memoryColumn(line) + memoryDeltaColumn(line);
    std::string note = memory_only ? "" : oneoffNote(line);
    if (hot_only && columns.find_first_not_of(' ') == std::string::npos && note.empty()) {
      ++skipped;
      continue;
    }
    flushSkipped();
    out << columns << " │" << pad(std::to_string(line), 5) << "  " << src.text().substr(r.begin, r.end - r.begin)
        << note << "\n";
    if (!memory_only) out << kindsRow(line, columns);
  }
  flushSkipped();
  if (hot_only) out << "(lines with costs only; --all-lines prints the whole file)\n";
}

}  // namespace sightline::server::report
