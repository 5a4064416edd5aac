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

#include "analysis/features/line_figures.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/story_report.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/cli/report_data.h"
#include "server/render/profile_text.h"
#include "server/render/story_render.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using attribution::LineCost;
using features::formatBytes;
using features::formatDelta;
using nlohmann::json;

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

// What --compare shows beside the profile: the totals where both tell GPU time, the memory
// where both tell it.
std::optional<features::CompareFacts> compareFacts(const ReportData& d) {
  if (!d.compare) return std::nullopt;
  features::CompareFacts c;
  c.path = d.args.compare_path;
  bool memory = comparesMemory(d);
  if (comparesTimes(d)) {
    c.time = true;
    c.per_step = comparePerStep(d);
    c.before_ns =
        static_cast<double>(d.compare->attribution().steady_gpu_ns) / (c.per_step ? d.compare->attribution().steps : 1);
    c.now_ns = static_cast<double>(d.main.attribution().steady_gpu_ns) / (c.per_step ? d.main.attribution().steps : 1);
    for (const auto& [local, how] : d.compare_aligned) c.aligned.emplace_back(local, how);
  }
  if (memory) {
    const auto& now = *d.main.memory().story;
    const auto& before = *d.compare->memory().story;
    c.memory = true;
    c.peak_before_bytes = before.peak_allocated_bytes;
    c.peak_now_bytes = now.peak_allocated_bytes;
    c.memory_steps = now.steady_steps > 0 && before.steady_steps > 0;
    for (const auto& m : memoryChanges(d)) c.lines.push_back({m.path, m.line, m.peakChange(), m.stepChange()});
  }
  return c;
}

}  // namespace

features::Story headerStory(const ReportData& d) {
  const model::Profile& profile = d.main.profile();
  features::ReportFacts facts;
  facts.profile_path = d.args.profile_path;
  facts.job_source = d.sources.empty() ? features::JobSource::Reports : features::JobSource::ReportsWithScripts;
  facts.profile = &profile;
  facts.attr = &d.main.attribution();
  facts.verdict = d.verdict ? &*d.verdict : nullptr;
  facts.job = d.job ? &*d.job : nullptr;
  facts.summaries = &d.summaries;
  facts.memory = d.main.memory().story.get();
  facts.warnings = profileWarnings(d.main.attribution(), profile.info);
  facts.no_memory_lines_advice = ingest::captureAdvice(profile.info);
  facts.compare = compareFacts(d);
  return features::reportStory(facts);
}

void writeHeader(const ReportData& d, std::ostream& out) { out << terminalText(headerStory(d)); }

namespace {

// The left margin of one line: time, share, fwd + bwd and a bar, or a def/loop's Σ; its figures
// are the line's (features::fileLineFigures), formatted here.
std::string marginFor(const features::LineFigures* f) {
  constexpr size_t kWidth = 9 + 2 + 6 + 2 + 15 + 2 + 10;
  if (!f) return std::string(kWidth, ' ');
  auto ms = [](double ns) { return features::formatMilliseconds(ns); };
  if (f->show_inclusive)
    // Inclusive: `incl` and the share of all it holds; its own time in the split column.
    return pad(ms(f->inclusive_ns), 9) + "  " + pad(features::formatShare(f->inclusive_share), 6) + "  " +
           pad("incl, self " + ms(f->self_ns), 15, true) + "  " + pad(bar(f->inclusive_share), 10, true);
  if (f->self_ns > 0) {
    std::string split = f->backward_ns > 0 ? ms(f->forward_ns) + " + " + ms(f->backward_ns) : "";
    return pad(ms(f->self_ns), 9) + "  " + pad(features::formatShare(f->share), 6) + "  " + pad(split, 15, true) +
           "  " + pad(bar(f->share), 10, true);
  }
  if (f->rollup_ns > 0)
    return pad("Σ " + ms(f->rollup_ns), 9) + "  " + pad(features::formatShare(f->rollup_share), 6) + "  " +
           pad("", 15) + "  " + pad("", 10);
  return std::string(kWidth, ' ');
}

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
        << local.path << ": " << features::formatShare(static_cast<double>(this_file) / total_ns)
        << " of GPU time on its lines, " << features::formatShare(static_cast<double>(other) / total_ns)
        << " on other files, " << features::formatShare(static_cast<double>(attr.unattributed_gpu_ns) / total_ns)
        << " unattributed\n";
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
        << features::formatShare(static_cast<double>(top->second) / total_ns)
        << "). Name that script (a copy of it in this workspace), or map its path with --map "
           "PROFILE_PREFIX=LOCAL_PREFIX\n";
  }
}

}  // namespace

namespace {

// The columns beside each line of an annotated file: the margin (time, share, split, bar), the
// change from a compared profile, the slowest rank, GPU memory at the peak and its change; and
// the notes after the code (one-off time) and under it (work by kind). Every figure is the
// line's (features::fileLineFigures) or the profile's, formatted here.
class AnnotatedColumns {
 public:
  AnnotatedColumns(const ReportData& d, const cli::NamedFile& local)
      : d_(d),
        attr_(d.main.attribution()),
        costs_(d.measured.at(local.absolute)),
        lines_(costs_.lines),
        memory_(d.main.memory().story.get()),
        memory_only_(memory_ && d.main.profile().activities.empty()),
        memory_compare_(comparesMemory(d)),
        per_step_(comparePerStep(d)) {
    features::Scale scale{d.args.total || attr_.steps <= 0 ? 1.0 : static_cast<double>(attr_.steps),
                          !d.args.total && attr_.steps > 0};
    figures_ = features::fileLineFigures(costs_, *local.file, *local.index, scale);
    if (comparesTimes(d)) {
      static const std::map<int32_t, int64_t> kNone;
      auto it = d.compare_lines.find(local.absolute);
      before_lines_ = it == d.compare_lines.end() ? &kNone : &it->second;
    }
    for (const auto& r : attr_.ranks) rank_width_ = std::max(rank_width_, r.label.size() + 5);
    if (memory_compare_)
      for (const auto& c : memoryChanges(d))
        if (c.path == local.absolute) memory_delta_[c.line] = c.peakChange();
  }

  bool memoryOnly() const { return memory_only_; }

  std::string heading() const {
    std::string out;
    if (!memory_only_)
      out += pad(d_.args.total ? "ms" : "ms/step", 9) + "  " + pad("share", 6) + "  " + pad("fwd + bwd", 15, true) +
             "  " + pad("", 10);
    if (before_lines_) out += "  " + pad(per_step_ ? "Δ per step" : "Δ total", 11, true);
    if (ranked()) out += "  " + pad("slowest rank", rank_width_, true);
    if (memory_) out += "  " + pad(memory_->allocated_known ? "at peak" : "reserved", 10);
    if (memory_compare_) out += "  " + pad("Δ at peak", 11);
    return out;
  }

  std::string cells(int32_t line) const {
    return (memory_only_ ? "" : marginFor(figuresAt(line))) + deltaCell(line) + rankCell(line) + memoryCell(line) +
           memoryDeltaCell(line);
  }

  // One-off GPU time beneath a line (an evaluation, a checkpoint, building the model): a marker
  // after its code, a total never divided by the steps.
  std::string oneoffNote(int32_t line) const {
    const auto* f = figuresAt(line);
    if (memory_only_ || !f || !f->oneoff_marked || d_.args.all_steps) return "";
    return "   ◂ one-off " + features::formatMilliseconds(static_cast<double>(f->oneoff_ns)) + " ms" +
           (f->oneoff_beneath ? " beneath" : "");
  }

  // A line whose work is of three kinds or more and a tenth of the GPU's or more (a model from
  // an installed package called on one line: nothing beneath it is the user's) says what it is.
  std::string kindsRow(int32_t line, const std::string& columns) const {
    auto n = lines_.find(line);
    const auto* f = figuresAt(line);
    if (memory_only_ || n == lines_.end() || !f || f->share < 0.1) return "";
    auto kinds = features::workByKind(n->second, d_.main.profile().strings);
    if (kinds.size() < 3) return "";
    size_t width = 0;  // the columns' width on a terminal: one per UTF-8 character
    for (unsigned char ch : columns) width += (ch & 0xC0) != 0x80 ? 1 : 0;
    return std::string(width, ' ') + " │" + std::string(7, ' ') + "  ↳ by kind: " + workKindsText(kinds) + "\n";
  }

 private:
  bool ranked() const { return attr_.ranks.size() > 1; }
  const features::LineFigures* figuresAt(int32_t line) const {
    auto it = figures_.find(line);
    return it == figures_.end() ? nullptr : &it->second;
  }

  // The change column: this profile minus the compare profile, on the line.
  std::string deltaCell(int32_t line) const {
    if (!before_lines_) return "";
    auto b = before_lines_->find(line);
    auto n = lines_.find(line);
    double before = b == before_lines_->end()
                        ? 0
                        : static_cast<double>(b->second) / (per_step_ ? d_.compare->attribution().steps : 1);
    double now = n == lines_.end() ? 0 : static_cast<double>(n->second.gpu_ns) / (per_step_ ? attr_.steps : 1);
    if (std::abs(now - before) < 5e3) return pad("", 13);
    return "  " + pad(formatDelta(now - before), 11, true);
  }

  // Several ranks: the slowest rank on the line and how far above the median it is.
  std::string rankCell(int32_t line) const {
    if (!ranked()) return "";
    const auto* f = figuresAt(line);
    if (!f || !f->ranks.shown) return pad("", rank_width_ + 2);
    char ratio[24];
    std::snprintf(ratio, sizeof ratio, " ×%.1f", f->ranks.ratio);
    return "  " + pad(attr_.ranks[f->ranks.rank].label + ratio, rank_width_, true);
  }

  // GPU memory: what the line holds at the peak.
  std::string memoryCell(int32_t line) const {
    if (!memory_) return "";
    auto n = lines_.find(line);
    int64_t bytes = n == lines_.end()          ? 0
                    : memory_->allocated_known ? n->second.memory_peak_bytes
                                               : n->second.memory_reserved_bytes;
    if (bytes <= 0) return pad("", 12);
    return "  " + pad(formatBytes(bytes), 10);
  }

  // --compare of memory: each line's change at the peak.
  std::string memoryDeltaCell(int32_t line) const {
    if (!memory_compare_) return "";
    auto n = memory_delta_.find(line);
    if (n == memory_delta_.end() || n->second == 0) return pad("", 13);
    return "  " + pad(features::formatSignedBytes(n->second), 11);
  }

  const ReportData& d_;
  const attribution::Attribution& attr_;
  const join::FileCosts& costs_;
  const std::map<int32_t, LineCost>& lines_;
  const join::MemoryStory* memory_;
  bool memory_only_, memory_compare_, per_step_;
  std::map<int32_t, features::LineFigures> figures_;
  const std::map<int32_t, int64_t>* before_lines_ = nullptr;
  size_t rank_width_ = 12;  // the longest label and its ratio (" ×1.1")
  std::map<int32_t, int64_t> memory_delta_;
};

}  // namespace

void writeAnnotatedFile(const ReportData& d, const cli::NamedFile& local, std::ostream& out) {
  AnnotatedColumns columns(d, local);
  writeFileHeader(d, local, columns.memoryOnly(), out);
  out << columns.heading() << " │\n";
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
    std::string cells = columns.cells(line);
    std::string note = columns.oneoffNote(line);
    if (hot_only && cells.find_first_not_of(' ') == std::string::npos && note.empty()) {
      ++skipped;
      continue;
    }
    flushSkipped();
    out << cells << " │" << pad(std::to_string(line), 5) << "  " << src.text().substr(r.begin, r.end - r.begin) << note
        << "\n"
        << columns.kindsRow(line, cells);
  }
  flushSkipped();
  if (hot_only) out << "(lines with costs only; --all-lines prints the whole file)\n";
}

}  // namespace sightline::server::report
