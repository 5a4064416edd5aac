// `sightline diff`'s result (features::RunDiff) as text, Markdown (a pull-request comment), one
// HTML page and JSON. Every text a summary carried is made inert here (inert(), render/markdown.h,
// htmlEscape).
#include "server/render/diff_render.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "analysis/features/units.h"
#include "server/render/markdown.h"
#include "server/render/step_view_html.h"

namespace sightline::server::diff {

namespace fs = std::filesystem;
using features::LineChange;
using features::MedianChange;
using features::RunDiff;
using nlohmann::json;

// Text a summary gave (a line's source, a path, a kernel's name) made inert on one line: line
// breaks and tabs as spaces, other control characters as U+FFFD, and the bidirectional
// controls that would reorder what a reader sees dropped.
std::string inert(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += "\xEF\xBF\xBD";
    } else if (c == 0xE2 && i + 2 < s.size()) {
      auto b = static_cast<unsigned char>(s[i + 1]), d = static_cast<unsigned char>(s[i + 2]);
      bool bidi =
          (b == 0x80 && ((d >= 0xAA && d <= 0xAE) || d == 0x8E || d == 0x8F)) || (b == 0x81 && d >= 0xA6 && d <= 0xA9);
      if (bidi) {
        i += 2;
        continue;
      }
      out += static_cast<char>(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// "+0.79 ms", "−1.20 ms": a signed change in ms.
std::string signedMs(double ns) {
  std::string digits = features::formatMilliseconds(std::abs(ns));
  bool zero = digits.find_first_not_of("0.") == std::string::npos;  // rounds to nothing: no sign
  return (zero ? "" : ns > 0 ? "+" : ns < 0 ? "-" : "") + digits + " ms";
}

std::string signedPercent(double share) {
  return (share > 0 ? "+" : share < 0 ? "-" : "") + features::formatFixed(std::abs(share) * 100, 1) + "%";
}

std::string interval(const MedianChange& c) {
  if (!c.sampled) return "no per-step samples";
  return signedMs(c.low_ns) + " .. " + signedMs(c.high_ns);
}

std::string lineLabel(const LineChange& l) {
  std::string file = inert(fs::path(l.path).filename().string());
  if (l.kind == LineChange::Kind::Removed) return file + ":" + std::to_string(l.base_line) + " (removed)";
  std::string label = file + ":" + std::to_string(l.new_line);
  if (l.kind == LineChange::Kind::New) return label + " (new)";
  if (l.kind == LineChange::Kind::Edited) return label + " (edited)";
  if (l.base_line != l.new_line) label += " (was " + std::to_string(l.base_line) + ")";
  return label;
}

// "memory peak 5.20 GiB -> 7.80 GiB (+50.0%)", or why there is none.
std::string memoryLine(const features::MemoryChange& m) {
  if (!m.known)
    return "not every run has a measured peak (sightline capture records the allocator's; profiles alone have none)";
  std::string base = features::formatBytes(m.base_max_bytes);
  if (m.base_min_bytes != m.base_max_bytes) base = features::formatBytes(m.base_min_bytes) + " .. " + base;
  return "peak " + base + " -> " + features::formatBytes(m.new_bytes) + ": " +
         features::formatSignedBytes(m.deltaBytes()) + " (" + signedPercent(m.relative()) +
         ") against the largest base peak, as the allocator counted it without the profiler (max_memory_allocated)";
}

// "its costliest kernel was sm90_xmma_gemm_bf16..., now sm80_xmma_gemm_f32...", where the line's
// change is past its spread and its costliest kernel is another.
std::string kernelNote(const LineChange& l) {
  if (!l.kernels_changed() || !l.change.certain()) return "";
  return "its costliest kernel was " + inert(l.base_kernels.front()) + ", now " + inert(l.new_kernels.front());
}

// "torch 2.10.0 (base) and 2.11.0 (new): the changes below include the upgrade"
std::string versionsLine(const RunDiff& d) {
  std::string out;
  for (const auto& v : d.version_changes) out += (out.empty() ? "" : "; ") + inert(v);
  return out + ": the changes below include that";
}

// "synchronizes 1.0x a step (was 0): the host waits here for the GPU"
std::string syncNote(const LineChange& l) {
  if (!l.sync_added) return "";
  return "synchronizes " + features::formatFixed(l.new_syncs, 1) + "x a step (was " +
         features::formatFixed(l.base_syncs, 1) + "): the host waits here for the GPU, then the GPU for the host";
}

std::string gateLine(const features::GateResult& g) {
  if (g.rule.scope == features::GateRule::Scope::Memory) {
    if (!g.checked) return g.rule.text + ": not checked: a run has no measured memory peak";
    std::string change =
        g.rule.percent ? signedPercent(g.lower / 100) : features::formatSignedBytes(static_cast<int64_t>(g.lower));
    return g.rule.text + ": " + (g.exceeded ? "EXCEEDED" : "within") + " (the memory peak: " + change + ")";
  }
  std::string lower =
      g.rule.percent ? (std::isinf(g.lower) ? "a new line" : signedPercent(g.lower / 100)) : signedMs(g.lower);
  if (g.subject.empty()) return g.rule.text + ": no line with per-step samples to check";
  return g.rule.text + ": " + (g.exceeded ? "EXCEEDED" : "within") + " (" + g.subject + ": at least " + lower +
         " with 95% confidence)";
}

std::string verdictLine(const RunDiff& d, const DiffPage& page) {
  if (d.gate.empty()) return "no thresholds: " + page.gate_hint;
  if (d.failed()) return "FAIL: a threshold is exceeded with confidence";
  std::string noise = d.step.certain() ? "" : ", the step's change within the spread";
  return "PASS: every threshold holds" + noise;
}

// Lines below 10 µs per step in both runs are left for --lines 0, unless they now synchronize.
bool negligible(const LineChange& l) { return !l.sync_added && std::max(l.change.base_ns, l.change.new_ns) < 10'000; }

// The lines shown: up to --lines of them past 10 µs, in order (the step's direction first, then
// the other), and every line a threshold names.
std::vector<const LineChange*> shownLines(const RunDiff& d, const DiffPage& args) {
  std::set<std::string> named;
  for (const auto& g : d.gate)
    if (g.rule.scope == features::GateRule::Scope::Line) named.insert(g.subject);
  std::vector<const LineChange*> out;
  for (const auto& l : d.lines) {
    std::string label =
        fs::path(l.path).filename().string() + ":" + std::to_string(l.new_line ? l.new_line : l.base_line);
    bool wanted = args.lines == SIZE_MAX || (out.size() < args.lines && !negligible(l));
    if (wanted || named.count(label)) out.push_back(&l);
  }
  return out;
}

// The parts that moved: a change the samples tell from noise, or 2% of the step.
std::vector<const features::PartChange*> movedParts(const RunDiff& d) {
  std::vector<const features::PartChange*> out;
  for (const auto& p : d.parts)
    if (p.change.certain() || std::abs(p.change.delta_ns) >= 0.02 * d.step.base_ns) out.push_back(&p);
  return out;
}

// "within the spread": the interval holds no change; the sentence says how wide it is.
std::string spreadLine(const RunDiff& d, const DiffPage& page) {
  std::string of = d.base_runs > 1 ? "the runs and their steps" : "the runs' steps";
  std::string width = features::formatFixed(d.detectable * 100, 1);
  std::string one = d.base_runs > 1 ? "" : "; one base run hides the spread from run to run: " + page.several_hint;
  if (!d.step.sampled) return "no interval: too few step samples (at least 3 a side)";
  if (d.step.certain())
    return "past the spread of " + of + ": the 95% interval holds no change (it is ±" + width + "% of the step wide)" +
           one;
  return "within the spread of " + of + ": the 95% interval is ±" + width +
         "% of the step wide, so smaller changes cannot be told apart" + one;
}

// The parts come from the profiled steps (the loop's wait from the timed ones): say so when the
// step itself is measured, whose change they need not add up to.
std::string partsTitle(const RunDiff& d) {
  return d.step_basis.rfind("measured", 0) == 0
             ? "of the profiled steps, per step (the loop's wait: of the timed steps; the profiler's cost is in the "
               "others, so they need not add up to the step's change)"
             : "of the step, per step";
}

std::string partLabel(const features::PartChange& p) {
  return (p.rank >= 0 ? "rank " + std::to_string(p.rank) + ": " : "") + p.part +
         (p.line > 0 ? " at " + inert(fs::path(p.path).filename().string()) + ":" + std::to_string(p.line) : "");
}

void writeDiffText(const RunDiff& d, const DiffPage& args, std::ostream& out) {
  for (size_t i = 0; i + 1 < args.inputs.size(); ++i) out << "Base      " << args.inputs[i] << "\n";
  out << "New       " << args.inputs.back() << "\n";
  out << "Steps     " << d.step_basis << ": " << d.step.base_samples << " and " << d.step.new_samples << " samples"
      << (d.base_runs > 1 ? ", the base's over " + std::to_string(d.base_runs) + " runs" : "") << "\n";
  if (!d.step_basis_note.empty()) out << "          " << d.step_basis_note << "\n";
  if (!d.version_changes.empty()) out << "Versions  " << versionsLine(d) << "\n";
  out << "Step      " << features::formatMilliseconds(d.step.base_ns) << " ms -> "
      << features::formatMilliseconds(d.step.new_ns) << " ms: " << signedMs(d.step.delta_ns) << " ("
      << signedPercent(d.step.relative()) << "), 95% interval " << interval(d.step) << "\n";
  out << "          " << spreadLine(d, args) << "\n";
  auto parts = movedParts(d);
  out << "Parts     " << (parts.empty() ? "no part of the step moved past 2% of it" : partsTitle(d) + ":") << "\n";
  for (const auto* p : parts)
    out << "  " << partLabel(*p) << "  " << signedMs(p->change.delta_ns) << " (" << interval(p->change) << ")  "
        << features::formatMilliseconds(p->change.base_ns) << " -> " << features::formatMilliseconds(p->change.new_ns)
        << " ms" << (p->change.certain() ? "" : ", within noise") << "\n";
  auto lines = shownLines(d, args);
  out << "Lines     " << (d.step.delta_ns >= 0 ? "the largest increase first" : "the largest decrease first") << " ("
      << lines.size() << " of " << d.lines_total << "), per step, with their 95% interval:\n";
  for (const auto* l : lines) {
    out << "  " << lineLabel(*l) << "  " << signedMs(l->change.delta_ns) << " (" << interval(l->change) << ")  "
        << features::formatMilliseconds(l->change.base_ns) << " -> " << features::formatMilliseconds(l->change.new_ns)
        << " ms" << (l->change.certain() ? "" : ", within noise") << (l->text.empty() ? "" : "   " + inert(l->text))
        << "\n";
    if (l->sync_added) out << "      " << syncNote(*l) << "\n";
    if (std::string k = kernelNote(*l); !k.empty()) out << "      " << k << "\n";
  }
  if (d.lines_total > lines.size()) out << "  (" << d.lines_total - lines.size() << " more: " << args.more << ")\n";
  if (!d.matched_by_number.empty())
    out << "          matched by line number, not text (a summary has no text for them): "
        << d.matched_by_number.front() << (d.matched_by_number.size() > 1 ? ", ..." : "")
        << "; make summaries where the script is\n";
  out << "Memory    " << memoryLine(d.memory) << "\n";
  for (const auto& g : d.gate) out << "Gate      " << gateLine(g) << "\n";
  out << "Verdict   " << verdictLine(d, args) << "\n";
}

// Text a profile or a summary gave, made inert in a Markdown table cell (render/markdown.h).
std::string markdownCell(const std::string& raw) { return md::text(inert(raw)); }

// Source text as a code span in a table cell: no backtick can close it, no pipe split the row.
std::string codeCell(const std::string& raw) { return md::cell(inert(raw)); }

void writeDiffMarkdown(const RunDiff& d, const DiffPage& args, std::ostream& out) {
  out << "### Sightline: " << markdownCell(verdictLine(d, args)) << "\n\n";
  std::string bases;
  for (size_t i = 0; i + 1 < args.inputs.size(); ++i) bases += (i ? ", " : "") + codeCell(args.inputs[i]);
  out << "New " << codeCell(args.inputs.back()) << " against " << bases << ".\n\n";
  out << "**Step** "
      << markdownCell(features::formatMilliseconds(d.step.base_ns) + " ms → " +
                      features::formatMilliseconds(d.step.new_ns) + " ms: " + signedMs(d.step.delta_ns) + " (" +
                      signedPercent(d.step.relative()) + "), 95% interval " + interval(d.step))
      << ".\n\n"
      << markdownCell("Step samples: " + d.step_basis + ": " + std::to_string(d.step.base_samples) + " and " +
                      std::to_string(d.step.new_samples) + " samples. The step's change is " + spreadLine(d, args))
      << ".\n\n";
  if (!d.step_basis_note.empty()) out << markdownCell(d.step_basis_note) << "\n\n";
  if (!d.version_changes.empty()) out << "**Versions** " << markdownCell(versionsLine(d)) << ".\n\n";
  if (auto parts = movedParts(d); !parts.empty()) {
    out << markdownCell("Parts " + partsTitle(d)) << ":\n\n";
    out << "| part of the step | change per step | 95% interval | base → new (ms) |\n|---|---|---|---|\n";
    for (const auto* p : parts)
      out << "| " << markdownCell(partLabel(*p)) << " | " << markdownCell(signedMs(p->change.delta_ns))
          << (p->change.certain() ? "" : " (noise)") << " | " << markdownCell(interval(p->change)) << " | "
          << markdownCell(features::formatMilliseconds(p->change.base_ns) + " → " +
                          features::formatMilliseconds(p->change.new_ns))
          << " |\n";
    out << "\n";
  }
  auto lines = shownLines(d, args);
  out << "| line | change per step | 95% interval | base → new (ms) | source |\n|---|---|---|---|---|\n";
  for (const auto* l : lines)
    out << "| " << markdownCell(lineLabel(*l)) << " | " << markdownCell(signedMs(l->change.delta_ns))
        << (l->change.certain() ? "" : " (noise)") << " | " << markdownCell(interval(l->change)) << " | "
        << markdownCell(features::formatMilliseconds(l->change.base_ns) + " → " +
                        features::formatMilliseconds(l->change.new_ns))
        << " | " << (l->text.empty() ? "" : codeCell(l->text))
        << (l->sync_added ? " " + markdownCell(syncNote(*l)) : "")
        << (kernelNote(*l).empty() ? "" : " " + markdownCell(kernelNote(*l))) << " |\n";
  if (d.lines_total > lines.size())
    out << "\n" << d.lines_total - lines.size() << " more lines: `sightline diff --lines 0` lists them.\n";
  out << "\n**Memory** " << markdownCell(memoryLine(d.memory)) << ".\n";
  for (const auto& g : d.gate) out << "\n- " << markdownCell(gateLine(g));
  out << "\n";
}

// The step bars side by side: each run's steps in the order they ran, one bar a step (a run of
// more than kMaxBars steps through an even kMaxBars of them), its median dashed across its group;
// the new run's bars red where the step grew past the spread.
std::string stepBarsSvg(const RunDiff& d) {
  constexpr size_t kMaxBars = 1500;
  std::vector<std::vector<int64_t>> drawn;  // each run's bars; the new run's last
  std::vector<double> medians;              // of all its steps
  for (const auto* all : [&] {
         std::vector<const std::vector<int64_t>*> v;
         for (const auto& b : d.base_steps) v.push_back(&b);
         v.push_back(&d.new_steps);
         return v;
       }()) {
    std::vector<int64_t> sorted = *all, bars;
    std::sort(sorted.begin(), sorted.end());
    size_t half = sorted.size() / 2;
    medians.push_back(sorted.empty() ? 0
                      : sorted.size() % 2
                          ? static_cast<double>(sorted[half])
                          : (static_cast<double>(sorted[half - 1]) + static_cast<double>(sorted[half])) / 2);
    size_t n = std::min(all->size(), kMaxBars);
    for (size_t k = 0; k < n; ++k) bars.push_back((*all)[k * all->size() / n]);
    drawn.push_back(std::move(bars));
  }
  std::vector<std::pair<std::string, const std::vector<int64_t>*>> runs;
  for (size_t i = 0; i + 1 < drawn.size(); ++i)
    runs.emplace_back(d.base_steps.size() > 1 ? "base " + std::to_string(i + 1) : "base", &drawn[i]);
  runs.emplace_back("new", &drawn.back());
  int64_t top = 1;
  for (const auto& [name, steps] : runs)
    for (int64_t v : *steps) top = std::max(top, v);
  // A group is at least as wide as its labels; the axis on the left gives the scale.
  constexpr int kHeight = 160, kBar = 6, kGap = 1, kGroupGap = 28, kLabel = 34, kMinGroup = 110, kAxis = 64;
  auto groupWidth = [&](size_t steps) { return std::max(kMinGroup, static_cast<int>(steps) * (kBar + kGap)); };
  int width = kAxis + kGroupGap;
  for (const auto& [name, steps] : runs) width += groupWidth(steps->size()) + kGroupGap;
  std::ostringstream svg;
  svg << "<svg class=\"steps\" role=\"img\" aria-label=\"each run's steps\" width=\"" << width << "\" height=\""
      << kHeight + kLabel << "\" viewBox=\"0 0 " << width << " " << kHeight + kLabel << "\">";
  svg << "<line class=\"axis\" x1=\"" << kAxis << "\" x2=\"" << kAxis << "\" y1=\"0\" y2=\"" << kHeight << "\"/>"
      << "<text class=\"tick\" x=\"" << kAxis - 4 << "\" y=\"10\">"
      << features::formatMilliseconds(static_cast<double>(top)) << " ms</text><text class=\"tick\" x=\"" << kAxis - 4
      << "\" y=\"" << kHeight << "\">0</text>";
  int x = kAxis + kGroupGap;
  bool grew = d.step.certain() && d.step.delta_ns > 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const auto& [name, steps] = runs[r];
    bool is_new = steps == &drawn.back();
    int group_x = x;
    for (size_t k = 0; k < steps->size(); ++k) {
      double ms = static_cast<double>((*steps)[k]) / 1e6;
      int h = std::max(1, static_cast<int>(static_cast<double>((*steps)[k]) / static_cast<double>(top) * kHeight));
      svg << "<rect class=\"" << (is_new ? (grew ? "new grew" : "new") : "base") << "\" x=\"" << x << "\" y=\""
          << kHeight - h << "\" width=\"" << kBar << "\" height=\"" << h << "\"><title>" << htmlEscape(name)
          << ", step " << k + 1 << ": " << features::formatMilliseconds(ms * 1e6) << " ms</title></rect>";
      x += kBar + kGap;
    }
    double median = medians[r];
    int my = kHeight - static_cast<int>(median / static_cast<double>(top) * kHeight);
    svg << "<line class=\"median\" x1=\"" << group_x - 2 << "\" x2=\"" << x + 1 << "\" y1=\"" << my << "\" y2=\"" << my
        << "\"/>";
    svg << "<text x=\"" << group_x << "\" y=\"" << kHeight + 14 << "\">" << htmlEscape(name) << "</text>";
    svg << "<text x=\"" << group_x << "\" y=\"" << kHeight + 28 << "\">median " << features::formatMilliseconds(median)
        << " ms</text>";
    x = group_x + groupWidth(steps->size()) + kGroupGap;
  }
  svg << "</svg>";
  return svg.str();
}

void writeDiffHtml(const RunDiff& d, const DiffPage& args, std::ostream& out) {
  auto e = [](const std::string& t) { return htmlEscape(inert(t)); };
  out << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
      << "<title>Sightline diff: " << e(d.failed() ? "FAIL" : "PASS") << "</title><style>"
      << "body{font:14px system-ui,sans-serif;margin:24px;color:#1f2328}code{font:12px ui-monospace,monospace}"
      << "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left}"
      << "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.noise{color:#656d76}"
      << "svg.steps line.axis{stroke:#8c959f}svg.steps text.tick{text-anchor:end;fill:#656d76}"
      << "svg.steps rect.base{fill:#8c959f}svg.steps rect.new{fill:#0969da}svg.steps rect.grew{fill:#cf222e}"
      << "svg.steps line.median{stroke:#1f2328;stroke-dasharray:3 2}svg.steps text{font-size:11px;fill:#1f2328}"
      << ".fail{color:#cf222e}.pass{color:#1a7f37}</style></head><body>\n";
  out << "<h1 class=\"" << (d.failed() ? "fail" : "pass") << "\">Sightline: " << e(verdictLine(d, args)) << "</h1>\n";
  std::string bases;
  for (size_t i = 0; i + 1 < args.inputs.size(); ++i)
    bases += (i ? ", " : "") + ("<code>" + e(args.inputs[i]) + "</code>");
  out << "<p>New <code>" << e(args.inputs.back()) << "</code> against " << bases << ".</p>\n";
  out << "<p><b>Step</b> " << e(features::formatMilliseconds(d.step.base_ns)) << " ms → "
      << e(features::formatMilliseconds(d.step.new_ns)) << " ms: " << e(signedMs(d.step.delta_ns)) << " ("
      << e(signedPercent(d.step.relative())) << "), 95% interval " << e(interval(d.step)) << ". "
      << e("Step samples: " + d.step_basis + ". The step's change is " + spreadLine(d, args)) << ".</p>\n";
  if (!d.step_basis_note.empty()) out << "<p>" << e(d.step_basis_note) << "</p>\n";
  if (!d.version_changes.empty()) out << "<p><b>Versions</b> " << e(versionsLine(d)) << ".</p>\n";
  out << stepBarsSvg(d) << "\n";
  if (auto parts = movedParts(d); !parts.empty()) {
    out << "<p>Parts " << e(partsTitle(d)) << ":</p>\n";
    out << "<table class=\"parts\"><tr><th>part of the step</th><th>change per step</th><th>95% interval</th>"
        << "<th>base → new (ms)</th></tr>\n";
    for (const auto* p : parts)
      out << "<tr" << (p->change.certain() ? "" : " class=\"noise\"") << "><td>" << e(partLabel(*p))
          << "</td><td class=\"n\">" << e(signedMs(p->change.delta_ns)) << "</td><td class=\"n\">"
          << e(interval(p->change)) << "</td><td class=\"n\">"
          << e(features::formatMilliseconds(p->change.base_ns) + " → " + features::formatMilliseconds(p->change.new_ns))
          << "</td></tr>\n";
    out << "</table>\n";
  }
  auto lines = shownLines(d, args);
  out << "<table class=\"lines\"><tr><th>line</th><th>change per step</th><th>95% interval</th>"
      << "<th>base → new (ms)</th><th>source</th></tr>\n";
  for (const auto* l : lines)
    out << "<tr" << (l->change.certain() || l->sync_added ? "" : " class=\"noise\"") << "><td>" << e(lineLabel(*l))
        << "</td><td class=\"n\">" << e(signedMs(l->change.delta_ns)) << "</td><td class=\"n\">"
        << e(interval(l->change)) << "</td><td class=\"n\">"
        << e(features::formatMilliseconds(l->change.base_ns) + " → " + features::formatMilliseconds(l->change.new_ns))
        << "</td><td><code>" << e(l->text) << "</code>" << (l->sync_added ? "<br>" + e(syncNote(*l)) : "")
        << (kernelNote(*l).empty() ? "" : "<br>" + e(kernelNote(*l))) << "</td></tr>\n";
  out << "</table>\n";
  if (d.lines_total > lines.size())
    out << "<p>" << d.lines_total - lines.size() << " more lines: <code>sightline diff --lines 0</code>.</p>\n";
  out << "<p class=\"noise\">Grey rows: within the runs' spread (their 95% interval holds no change).</p>\n";
  out << "<p><b>Memory</b> " << e(memoryLine(d.memory)) << ".</p>\n<ul>";
  for (const auto& g : d.gate) out << "<li>" << e(gateLine(g)) << "</li>";
  out << "</ul>\n</body></html>\n";
}

json changeJson(const MedianChange& c) {
  json j = {{"base_ns", c.base_ns},           {"new_ns", c.new_ns},
            {"delta_ns", c.delta_ns},         {"relative", c.relative()},
            {"base_samples", c.base_samples}, {"new_samples", c.new_samples},
            {"certain", c.certain()}};
  if (c.sampled) j["interval_ns"] = {c.low_ns, c.high_ns};
  return j;
}

json diffJson(const RunDiff& d, const DiffPage& args) {
  json lines = json::array();
  for (const auto* shown : shownLines(d, args)) {
    const auto& l = *shown;
    const char* kind = l.kind == LineChange::Kind::New       ? "new"
                       : l.kind == LineChange::Kind::Removed ? "removed"
                       : l.kind == LineChange::Kind::Edited  ? "edited"
                                                             : "both";
    lines.push_back({{"path", l.path},
                     {"base_line", l.base_line ? json(l.base_line) : json(nullptr)},
                     {"new_line", l.new_line ? json(l.new_line) : json(nullptr)},
                     {"kind", kind},
                     {"text", l.text},
                     {"change", changeJson(l.change)},
                     {"syncs_per_step", {{"base", l.base_syncs}, {"new", l.new_syncs}}},
                     {"sync_added", l.sync_added},
                     {"kernels", {{"base", l.base_kernels}, {"new", l.new_kernels}}},
                     {"kernels_changed", l.kernels_changed()}});
  }
  json parts = json::array();
  for (const auto& p : d.parts) {
    json part = {{"part", p.part}, {"change", changeJson(p.change)}};
    if (p.line > 0) part["site"] = {{"path", p.path}, {"line", p.line}};
    if (p.rank >= 0) part["rank"] = p.rank;
    parts.push_back(std::move(part));
  }
  json gate = json::array();
  for (const auto& g : d.gate)
    gate.push_back({{"rule", g.rule.text},
                    {"exceeded", g.exceeded},
                    {"checked", g.checked},
                    {"subject", g.subject},
                    {"lower", std::isinf(g.lower) ? json(nullptr) : json(g.lower)},
                    {"unit", g.rule.percent                                      ? "percent"
                             : g.rule.scope == features::GateRule::Scope::Memory ? "bytes"
                                                                                 : "ns"}});
  json memory = {{"known", d.memory.known}};
  if (d.memory.known)
    memory.update({{"base_min_bytes", d.memory.base_min_bytes},
                   {"base_max_bytes", d.memory.base_max_bytes},
                   {"new_bytes", d.memory.new_bytes},
                   {"delta_bytes", d.memory.deltaBytes()},
                   {"relative", d.memory.relative()},
                   {"basis", "torch.cuda.max_memory_allocated by the end of the timed steps, without the profiler"}});
  return {{"sightline_diff", 1},
          {"base", std::vector<std::string>(args.inputs.begin(), args.inputs.end() - 1)},
          {"new", args.inputs.back()},
          {"method", "percentile bootstrap of the difference of medians, 2000 resamples, 95%"},
          {"step_basis", d.step_basis},
          {"base_runs", d.base_runs},
          {"step_basis_note", d.step_basis_note},
          {"step", changeJson(d.step)},
          {"detectable_relative", d.detectable},
          {"parts", parts},
          {"lines", lines},
          {"lines_total", d.lines_total},
          {"memory", memory},
          {"version_changes", d.version_changes},
          {"gate", gate},
          {"failed", d.failed()}};
}

}  // namespace sightline::server::diff
