#include "server/mcp/mcp_tools.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "analysis/features/code_actions.h"
#include "analysis/features/profile_commands.h"
#include "analysis/features/rules.h"
#include "analysis/features/step_headline.h"
#include "analysis/features/story_verdict.h"
#include "analysis/features/units.h"
#include "protocol/json_in.h"
#include "server/lsp/uri.h"
#include "server/mcp/mcp_schemas.h"
#include "server/platform/output_file.h"
#include "server/platform/terminal_text.h"
#include "server/render/diff_render.h"
#include "server/render/profile_text.h"
#include "server/render/story_render.h"
#include "server/workspace/baseline.h"
#include "server/workspace/local_files.h"
#include "server/workspace/profile_files.h"

namespace sightline::server::mcp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using protocol::mcp::CallToolResult;

constexpr size_t kMaxLineText = 160;  // a line's source, as the answers quote it

// --- arguments: checked against the tool's schema here, so a wrong type is a tool error ---------

class Args {
 public:
  Args(const json& args, const json& schema) : args_(args) {
    const json& properties = schema.at("properties");
    for (const auto& [key, value] : args_.items())
      if (!properties.contains(key)) throw ToolError{"unknown argument \"" + diff::inert(key) + "\""};
    for (const auto& key : schema.value("required", json::array()))
      if (!args_.contains(key.get<std::string>()))
        throw ToolError{"missing argument \"" + key.get<std::string>() + "\""};
  }
  int count(const char* key, int fallback, int lo, int hi) const {
    if (!args_.contains(key)) return fallback;
    const json& v = args_[key];
    if (!v.is_number_integer() && !v.is_number_unsigned())
      throw ToolError{std::string("\"") + key + "\" must be a whole number from " + std::to_string(lo) + " to " +
                      std::to_string(hi)};
    bool outside = v.is_number_unsigned()
                       ? v.get<uint64_t>() > static_cast<uint64_t>(hi) || v.get<uint64_t>() < static_cast<uint64_t>(lo)
                       : v.get<int64_t>() < lo || v.get<int64_t>() > hi;
    if (outside)
      throw ToolError{std::string("\"") + key + "\" must be from " + std::to_string(lo) + " to " + std::to_string(hi) +
                      ", got " + v.dump()};
    return static_cast<int>(v.get<int64_t>());
  }
  std::string text(const char* key, const std::string& fallback = "") const {
    if (!args_.contains(key)) return fallback;
    const json& v = args_[key];
    if (!v.is_string()) throw ToolError{std::string("\"") + key + "\" must be a string"};
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > 4096) throw ToolError{std::string("\"") + key + "\" is longer than 4096 bytes"};
    if (s.find('\0') != std::string::npos) throw ToolError{std::string("\"") + key + "\" holds a NUL byte"};
    return s;
  }
  std::string choice(const char* key, const std::string& fallback, const std::vector<std::string>& allowed) const {
    std::string v = text(key, fallback);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ToolError{std::string("\"") + key + "\" must be one of " + list + ", got \"" + diff::inert(v) + "\""};
    }
    return v;
  }
  bool has(const char* key) const { return args_.contains(key); }

 private:
  const json& args_;
};

// --- what every answer shares --------------------------------------------------------------------

report::LoadedReport& needReport(ToolContext& context) {
  if (auto* r = context.report()) return *r;
  const auto& error = context.workspace().profileError();
  // A load that failed says why; none found is said below, with what to do here.
  if (!error.empty() && error.rfind("no profile found", 0) != 0) throw ToolError{"no profile is loaded: " + error};
  throw ToolError{"no profile is loaded: none was found in the workspace " + context.workspace().root() +
                  " (*.nsys-rep, *.sqlite, *.pt.trace.json[.gz], and *.pickle memory snapshots named with "
                  "\"snapshot\", \"memory\" or \"oom\"). Capture one with `sightline capture -- python train.py` (the "
                  "capture_command tool gives the command; the next call loads it), or start the server with "
                  "--profile FILE"};
}

// A memory snapshot has no GPU times: the tools of time say which tools read it.
void needTimes(const json& rj) {
  if (rj.value("total_gpu_ns", int64_t{0}) == 0 && rj.contains("memory"))
    throw ToolError{"the profile is a memory snapshot, with no GPU times: the memory_at_peak and oom tools read it"};
}

// A line of source as the answers quote it: trimmed, cut at kMaxLineText, inert.
std::string quotedSource(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t first = s.find_first_not_of(" \t");
  s = first == std::string::npos ? "" : s.substr(first);
  if (s.size() > kMaxLineText) s = s.substr(0, kMaxLineText) + "...";
  return diff::inert(s);
}

// Line `line` (1-based) of `file`, as it is.
std::string_view lineSource(const source::SourceFile& file, int64_t line) {
  const auto& lines = file.lines();
  if (line < 1 || line > static_cast<int64_t>(lines.lineCount())) return {};
  uint32_t begin = lines.lineStart(static_cast<uint32_t>(line - 1));
  uint32_t end = line < static_cast<int64_t>(lines.lineCount()) ? lines.lineStart(static_cast<uint32_t>(line))
                                                                : static_cast<uint32_t>(file.text().size());
  return std::string_view(file.text()).substr(begin, end - begin);
}

// The source text of `line` of a named file ("" when not named or out of range).
std::string lineText(const report::LoadedReport& r, const std::string& absolute, int64_t line) {
  for (const auto& src : r.sources()) {
    if (src.absolute != absolute) continue;
    const auto& lines = src.file->lines();
    if (line < 1 || line > static_cast<int64_t>(lines.lineCount())) return "";
    const std::string& text = src.file->text();
    uint32_t begin = lines.lineStart(static_cast<uint32_t>(line - 1));
    uint32_t end = line < static_cast<int64_t>(lines.lineCount()) ? lines.lineStart(static_cast<uint32_t>(line))
                                                                  : static_cast<uint32_t>(text.size());
    return quotedSource(text.substr(begin, end - begin));
  }
  return "";
}

// A place the report names (`path` a local path or a profile path), as the agent reads it.
json place(ToolContext& context, const report::LoadedReport& r, const json& from) {
  std::string path = from.value("path", std::string());
  int64_t profiled = from.value("line", int64_t{0});
  int64_t line = context.currentLine(path, profiled);
  json out = {{"path", context.shown(path)}, {"line", line > 0 ? line : profiled}};
  // The file changed since the profile's report read it: the line where it is now, or marked
  // as one the edit changed.
  if (line != profiled) out["profiled_line"] = profiled;
  if (line == 0) out["changed"] = true;
  std::string text;
  if (auto now = context.currentText(path, line > 0 ? line : profiled)) {
    if (line > 0) text = quotedSource(*now);
  } else {
    text = lineText(r, path, profiled);
  }
  if (!text.empty()) out["text"] = text;
  return out;
}

std::string where(const json& place) {
  return diff::inert(place.value("path", std::string())) + ":" + std::to_string(place.value("line", 0));
}

void copyFields(const json& from, json& to, std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    if (from.contains(key)) to[key] = from[key];
}

std::string ms(double ns) { return features::formatMilliseconds(ns) + " ms"; }

// The rows of the load's story (the report's header) under `labels`, with the rows that continue
// them: the words every other surface uses.
std::string storyText(ToolContext& context, std::initializer_list<const char*> labels) {
  const LoadedProfile* loaded = context.workspace().profile();
  if (!loaded) return "";
  features::Story rows;
  bool keep = false;
  for (const auto& row : loaded->story) {
    if (!row.label.empty())
      keep = std::any_of(labels.begin(), labels.end(), [&](const char* l) { return row.label == l; });
    if (keep) rows.push_back(row);
  }
  return terminalSafe(terminalText(rows));
}

// "N more" for a list cut to `shown` of `total`.
void sayMore(json& out, const char* key, size_t total, size_t shown) {
  out[std::string(key) + "_total"] = total;
  out[std::string(key) + "_more"] = total > shown ? total - shown : 0;
}

// A line of the report, with the figure lines are ranked by.
struct RankedLine {
  const json* file;
  const json* line;
  int64_t value;
};
// The report's lines with `field` above 0, most first; only those of `only` (a local path) when
// given.
std::vector<RankedLine> linesBy(const json& rj, const char* field, const std::string& only = "") {
  std::vector<RankedLine> rows;
  for (const auto& f : rj["files"]) {
    if (!only.empty() && (!f["local_path"].is_string() || f["local_path"] != only)) continue;
    for (const auto& l : f["lines"])
      if (int64_t v = l.value(field, int64_t{0}); v > 0) rows.push_back({&f, &l, v});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.value > y.value; });
  return rows;
}

// The local path of a report's file, else the profile's.
std::string pathOf(const json& file) {
  return file["local_path"].is_string() ? file["local_path"].get<std::string>() : file["path"].get<std::string>();
}

// The `n` lines with the most GPU time of their own, per step, as top_lines lists them.
std::string costliestLines(ToolContext& context, report::LoadedReport& r, size_t n) {
  const json& rj = r.json();
  auto rows = linesBy(rj, "gpu_ns");
  int64_t steps = rj.value("steps", int64_t{0});
  double divisor = steps > 0 ? static_cast<double>(steps) : 1.0;
  std::string text;
  for (size_t i = 0; i < rows.size() && i < n; ++i) {
    const json& l = *rows[i].line;
    json p = place(context, r, {{"path", pathOf(*rows[i].file)}, {"line", l["line"]}});
    text += "  " + where(p) + "  " + ms(static_cast<double>(rows[i].value) / divisor) + (steps > 0 ? "/step" : "") +
            "  " + features::formatShare(l.value("share", 0.0)) +
            (p.contains("text") ? "  " + p["text"].get<std::string>() : "") + "\n";
  }
  return text;
}

// --- the tools ----------------------------------------------------------------------------------

CallToolResult stepVerdict(ToolContext& context, const Args& args) {
  int n = args.count("lines", 3, 1, 50);
  auto& r = needReport(context);
  const json& rj = r.json();
  const LoadedProfile* loaded = context.workspace().profile();
  needTimes(rj);
  if (!loaded->verdict || !rj.contains("verdict"))
    throw ToolError{"no step verdict: the profile has no training steps (" +
                    diff::inert(rj.value("steps_source", std::string("no steps found"))) +
                    "); the top_lines tool still gives each line's GPU time"};
  const json& v = rj["verdict"];
  json out = {{"profile", context.shown(rj["profile"]["path"].get<std::string>())}, {"steps", rj["steps"]}};
  if (rj["profile"]["parts"].size() > 1) out["parts"] = rj["profile"]["parts"].size();
  copyFields(v, out,
             {"bound", "captured_bound", "wall_ns", "unprofiled_wall_ns", "unprofiled_busy_share", "confidence",
              "capture_overhead_ns"});
  if (!v.value("confidence_reason", std::string()).empty()) out["confidence_reason"] = v["confidence_reason"];
  if (!v["late_rank"].is_null()) out["late_rank"] = v["late_rank"];
  if (out.contains("late_rank") && out["late_rank"].contains("line"))
    out["late_rank"]["line"]["path"] = context.shown(out["late_rank"]["line"].value("path", std::string()));
  if (v.contains("unprofiled")) copyFields(v["unprofiled"], out["unprofiled"], {"source", "range_ns", "steps"});
  std::string lines_text;
  std::set<std::string> listed;  // a line is listed once, under its first cause
  json causes = json::array();
  for (const auto& c : v["causes"]) {
    json jc;
    copyFields(c, jc, {"cause", "bound", "ns_per_step", "captured_ns_per_step", "measured"});
    json lines = json::array();
    size_t total = c.contains("lines") ? c["lines"].size() : 0;
    for (size_t i = 0; i < total && static_cast<int>(i) < n; ++i) {
      const json& l = c["lines"][i];
      json p = place(context, r, l);
      copyFields(l, p, {"ns", "count"});
      std::string source = p.value("text", std::string());
      p.erase("text");  // in the answer's text, under Lines
      if (listed.insert(where(p)).second)
        lines_text += "  " + where(p) + " (" + diff::inert(c.value("cause", "")) + ")" +
                      (source.empty() ? "" : "  " + source) + "\n";
      lines.push_back(std::move(p));
    }
    jc["lines"] = std::move(lines);
    sayMore(jc, "lines", total, std::min<size_t>(total, n));
    causes.push_back(std::move(jc));
  }
  out["causes"] = std::move(causes);
  out["changes"] = json::array();
  for (const auto& c : v["changes"]) {
    json jc;
    copyFields(c, jc, {"change", "ns_per_step"});  // its text is the story's "Try" row
    out["changes"].push_back(std::move(jc));
  }
  bool keep = true;
  // The verdict's story without the rows of the profiler's cost and the one-off work (the step
  // report tells them): what bounds the step, why, and what to try.
  features::Story story;
  for (auto& row : features::verdictStory(*loaded->verdict)) {
    if (!row.label.empty()) keep = row.label != "Profiler" && row.label != "One-off";
    if (keep) story.push_back(std::move(row));
  }
  std::string text = "Profile   " + terminalSafe(context.shown(rj["profile"]["path"].get<std::string>())) + "\n" +
                     terminalSafe(terminalText(story));
  if (!lines_text.empty()) {
    text += "Lines\n" + lines_text;
  } else if (!rj["files"].empty()) {
    // No cause names a line (a GPU-bound step): its costliest lines are where to look.
    text += "Costliest lines (top_lines)\n" + costliestLines(context, r, 3);
  }
  text += storyText(context, {"Warning"});
  if (!rj["warnings"].empty()) out["warnings"] = rj["warnings"];
  if (rj.contains("advice")) out["advice"] = rj["advice"];
  return {text, out, false};
}

struct LineKey {
  const char* field;
  const char* label;
};
LineKey lineKey(const std::string& by, const std::string& pass) {
  if (by == "self")
    return pass == "forward"    ? LineKey{"forward_ns", "forward"}
           : pass == "backward" ? LineKey{"backward_ns", "backward"}
                                : LineKey{"gpu_ns", "GPU"};
  return pass == "forward"    ? LineKey{"inclusive_forward_ns", "forward, inclusive"}
         : pass == "backward" ? LineKey{"inclusive_backward_ns", "backward, inclusive"}
                              : LineKey{"inclusive_ns", "GPU, inclusive"};
}

CallToolResult topLines(ToolContext& context, const Args& args) {
  std::string by = args.choice("by", "self", {"self", "inclusive"});
  std::string per = args.choice("per", "step", {"step", "total"});
  std::string pass = args.choice("pass", "all", {"all", "forward", "backward"});
  int n = args.count("n", 10, 1, 200);
  std::string only = args.has("path") ? context.workspaceFile(args.text("path")) : "";
  auto& r = needReport(context);
  const json& rj = r.json();
  needTimes(rj);
  LineKey key = lineKey(by, pass);
  auto rows = linesBy(rj, key.field, only);
  int64_t steps = rj.value("steps", int64_t{0});
  double divisor = per == "step" && steps > 0 ? static_cast<double>(steps) : 1.0;
  json out = {{"by", by},
              {"per", per},
              {"pass", pass},
              {"field", key.field},
              {"steps", steps},
              {"per_step_divisor", divisor},
              {"steady_gpu_ns", rj["steady_gpu_ns"]},
              {"total_gpu_ns", rj["total_gpu_ns"]}};
  json lines = json::array();
  std::string text = std::string("Lines by ") + key.label + " time" + (divisor > 1 ? " per step" : " in total") +
                     (divisor > 1 ? " (over " + std::to_string(steps) + " steps)" : "") + "\n";
  for (size_t i = 0; i < rows.size() && static_cast<int>(i) < n; ++i) {
    const json& l = *rows[i].line;
    json p = place(context, r, {{"path", pathOf(*rows[i].file)}, {"line", l["line"]}});
    copyFields(l, p,
               {"gpu_ns", "forward_ns", "backward_ns", "inclusive_ns", "share", "inclusive_share", "syncs", "sync_ns",
                "idle_ns", "comm_exposed_ns", "slowest_rank", "rank_ns"});
    p[key.field] = l[key.field];  // the figure the list is ordered by
    // A share of the step only for both passes: the report gives no share of one pass.
    std::string share =
        pass == "all" ? "  " + features::formatShare(l.value(by == "self" ? "share" : "inclusive_share", 0.0)) : "";
    std::string slowest;
    if (l.contains("slowest_rank") && l["slowest_rank"].value("shown", false))
      slowest = "  (slowest: " + diff::inert(l["slowest_rank"].value("rank", "")) + ", " +
                features::formatFixed(l["slowest_rank"].value("ratio", 1.0), 1) + "x the others)";
    text += "  " + where(p) + "  " + ms(static_cast<double>(rows[i].value) / divisor) + share + slowest +
            (p.contains("text") ? "  " + p["text"].get<std::string>() : "") + "\n";
    lines.push_back(std::move(p));
  }
  sayMore(out, "lines", rows.size(), lines.size());
  if (size_t more = rows.size() - lines.size(); more > 0)
    text += "  (" + std::to_string(more) + (more == 1 ? " more line)\n" : " more lines)\n");
  if (rows.empty()) {
    text += "  none: the profile puts no such time on the workspace's lines\n" + storyText(context, {"Warning"});
    out["warnings"] = rj["warnings"];
    if (rj.contains("advice")) out["advice"] = rj["advice"];
  }
  out["lines"] = std::move(lines);
  return {text, out, false};
}

// The line's entry in the report's files (null when it has none).
const json* reportLine(const json& rj, const std::string& absolute, int64_t line) {
  for (const auto& f : rj["files"]) {
    if (!f["local_path"].is_string() || f["local_path"] != absolute) continue;
    for (const auto& l : f["lines"])
      if (l.value("line", int64_t{0}) == line) return &l;
  }
  return nullptr;
}

// An edit as whole lines: `old_text` the lines it touches as they are (never empty, unless the
// file is), `new_text` the same lines after it, so an agent's find-and-replace applies it.
json editJson(const source::SourceFile& file, const features::TextEdit& e) {
  const std::string& text = file.text();
  const auto& lines = file.lines();
  auto at = lines.pointAt(e.range.begin), last = lines.pointAt(e.range.end);
  uint32_t begin = lines.lineStart(at.line);
  // Through the end of the line the edit ends on (the line after an insertion at a line's start).
  uint32_t end_line = last.line + (e.range.end > e.range.begin && last.column == 0 && last.line > at.line ? 0 : 1);
  uint32_t end = end_line < lines.lineCount() ? lines.lineStart(end_line) : static_cast<uint32_t>(text.size());
  if (end < e.range.end) end = static_cast<uint32_t>(text.size());
  // An insertion among blank lines: the next line with text anchors it (a blank line is no place).
  while (end < text.size() && text.substr(begin, end - begin).find_first_not_of(" \t\r\n") == std::string::npos) {
    size_t next = text.find('\n', end);
    end = next == std::string::npos ? static_cast<uint32_t>(text.size()) : static_cast<uint32_t>(next + 1);
    end_line = lines.pointAt(end > 0 ? end - 1 : 0).line + 1;
  }
  std::string old_text = text.substr(begin, end - begin);
  std::string new_text =
      text.substr(begin, e.range.begin - begin) + e.new_text + text.substr(e.range.end, end - e.range.end);
  return {{"line", at.line + 1},
          {"end_line", std::max(at.line + 1, end_line)},
          {"old_text", old_text},
          {"new_text", new_text}};
}

// The rules that fire on a line and their quick fixes, as the editor's diagnostics and code
// actions give them: into `out` ("rules", "fixes") and `text`.
void rulesAndFixes(ToolContext& context, Document& doc, int64_t line, json& out, std::string& text) {
  const auto& findings = context.workspace().findingsFor(doc);
  uint32_t begin = doc.file().lines().lineStart(static_cast<uint32_t>(line - 1));
  uint32_t end = line < static_cast<int64_t>(doc.file().lines().lineCount())
                     ? doc.file().lines().lineStart(static_cast<uint32_t>(line))
                     : static_cast<uint32_t>(doc.file().text().size());
  source::ByteRange selection{begin, end > begin ? end - 1 : begin};
  json rules = json::array(), fixes = json::array();
  for (const auto& f : findings) {
    if (f.range.end < begin || f.range.begin >= end) continue;
    rules.push_back({{"code", f.code},
                     {"severity", std::string(features::severityName(f.severity))},
                     {"message", f.message},
                     {"docs", ruleDocumentationUrl(context.workspace().settings(), f.code)}});
    text += "  [" + f.code + "] " + diff::inert(f.message) + "\n";
  }
  for (const auto& action : features::computeCodeActions(doc.file(), doc.index(), selection, findings,
                                                         context.workspace().settings().actions)) {
    if (action.kind != "quickfix") continue;
    json edits = json::array();
    for (const auto& e : action.edits) edits.push_back(editJson(doc.file(), e));
    fixes.push_back({{"title", action.title},
                     {"rule", action.finding >= 0 ? json(findings[action.finding].code) : json(nullptr)},
                     {"edits", edits}});
    text += "  fix: " + diff::inert(action.title) + "\n";
  }
  out["rules"] = std::move(rules);
  out["fixes"] = std::move(fixes);
}

CallToolResult lineCost(ToolContext& context, const Args& args) {
  std::string path = args.text("path");
  int64_t line = args.count("line", 0, 1, 10'000'000);
  // "train.py:42" or "train.py:42:5" (a column, as compilers print places), unless a file of the
  // workspace has that very name.
  auto numberAfter = [](const std::string& p, size_t colon) {
    std::string d = colon == std::string::npos ? "" : p.substr(colon + 1);
    return !d.empty() && d.size() < 9 && std::all_of(d.begin(), d.end(), ::isdigit) ? std::stoll(d) : int64_t{-1};
  };
  std::error_code ec;
  if (int64_t last = numberAfter(path, path.rfind(':'));
      last >= 0 && !fs::exists(fs::path(context.workspace().root()) / path, ec)) {
    std::string rest = path.substr(0, path.rfind(':'));
    int64_t before = numberAfter(rest, rest.rfind(':'));
    path = before >= 0 ? rest.substr(0, rest.rfind(':')) : rest;
    if (!args.has("line")) line = before >= 0 ? before : last;
  }
  if (line < 1) throw ToolError{"give the line: \"line\": N, or \"path\": \"train.py:N\""};
  std::string absolute = context.workspaceFile(path);
  Document& doc = context.document(absolute);
  // Lines as an editor counts them: a final newline ends the last line, it starts none.
  const std::string& body = doc.file().text();
  auto lines = static_cast<int64_t>(doc.file().lines().lineCount()) - (!body.empty() && body.back() == '\n' ? 1 : 0);
  if (line > std::max<int64_t>(lines, 1))
    throw ToolError{context.shown(absolute) + " has " + std::to_string(lines) + " lines"};
  json out = {{"path", context.shown(absolute)}, {"line", line}};
  std::string text = context.shown(absolute) + ":" + std::to_string(line);
  auto* r = context.report();
  if (r) {
    out["text"] = quotedSource(std::string(lineSource(doc.file(), line)));
    // The figures of the line the profile measured where this one is now (none for a line the
    // agent's edit changed since).
    int64_t profiled = context.profiledLine(absolute, line);
    const json* l = profiled > 0 ? reportLine(r->json(), absolute, profiled) : nullptr;
    out["cost"] = l ? *l : json(nullptr);
    if (profiled != line) out["profiled_line"] = profiled > 0 ? json(profiled) : json(nullptr);
    if (profiled == 0) text += "  changed since the profile: it has no figure of its own yet\n";
    out["steps"] = r->json()["steps"];
    if (l && (l->value("gpu_ns", int64_t{0}) > 0 || l->value("inclusive_ns", int64_t{0}) > 0)) {
      int64_t steps = r->json().value("steps", int64_t{0});
      double divisor = steps > 0 ? static_cast<double>(steps) : 1.0;
      text += "  " + ms(l->value("gpu_ns", 0.0) / divisor) + (steps > 0 ? "/step" : "") + " GPU (" +
              features::formatShare(l->value("share", 0.0)) + "), forward " +
              ms(l->value("forward_ns", 0.0) / divisor) + ", backward " + ms(l->value("backward_ns", 0.0) / divisor);
      if (l->value("inclusive_shown", false))
        text += "; with what it calls " + ms(l->value("inclusive_ns", 0.0) / divisor);
      text += "\n";
      std::vector<features::WorkKind> kinds;
      for (const auto& k : l->value("work_by_kind", json::array()))
        kinds.push_back({k.value("kind", ""), k.value("ns", int64_t{0}), k.value("count", 0u), k.value("share", 0.0)});
      if (!kinds.empty()) text += "  by kind: " + terminalSafe(workKindsText(kinds)) + "\n";
    } else if (profiled != 0) {
      text += "  no GPU time measured on this line\n";
    }
    if (l && l->value("memory_at_peak_bytes", int64_t{0}) > 0)
      text +=
          "  holds " + features::formatBytes(l->value("memory_at_peak_bytes", int64_t{0})) + " at the memory peak\n";
    if (l && l->value("memory_per_step_bytes", int64_t{0}) > 0)
      text += "  allocates " + features::formatBytes(l->value("memory_per_step_bytes", int64_t{0})) + " per step in " +
              std::to_string(l->value("memory_per_step_allocations", int64_t{0})) + " allocations\n";
  } else {
    out["cost"] = nullptr;
    text += "  (no profile loaded: the rules that read the source alone)\n";
  }
  rulesAndFixes(context, doc, line, out, text);
  return {text, out, false};
}

json memoryLines(ToolContext& context, const report::LoadedReport& r, const json& from, int n, std::string& text) {
  json out = json::array();
  for (size_t i = 0; i < from.size() && static_cast<int>(i) < n; ++i) {
    json p = place(context, r, from[i]);
    copyFields(from[i], p, {"function", "bytes"});
    text += "  " + where(p) +
            (from[i].contains("bytes") ? "  " + features::formatBytes(from[i]["bytes"].get<int64_t>()) : "") +
            (p.contains("text") ? "  " + p["text"].get<std::string>() : "") + "\n";
    out.push_back(std::move(p));
  }
  return out;
}

const json& needMemory(ToolContext& context) {
  const json& rj = needReport(context).json();
  if (!rj.contains("memory"))
    throw ToolError{
        "the profile records no GPU memory: a memory snapshot "
        "(torch.cuda.memory._record_memory_history, then _dump_snapshot), a PyTorch profiler trace with "
        "profile_memory=True, or nsys with --cuda-memory-usage=true records it"};
  return rj["memory"];
}

CallToolResult memoryAtPeak(ToolContext& context, const Args& args) {
  int n = args.count("n", 10, 1, 200);
  const json& m = needMemory(context);
  auto& r = *context.report();
  json out;
  copyFields(m, out,
             {"source", "device", "devices", "peak_allocated_bytes", "peak_reserved_bytes", "peak_phase", "peak_step",
              "unattributed_at_peak_bytes", "allocated_before_trace_bytes", "pool_growth_bytes"});
  std::string text = storyText(context, {"Memory"}) + "Lines holding memory at the peak\n";
  out["top_lines"] = memoryLines(context, r, m["top_lines"], n, text);
  sayMore(out, "top_lines", m["top_lines"].size(), out["top_lines"].size());
  if (!m["pool_growth_lines"].empty()) {
    text += "Pool growth\n";
    out["pool_growth_lines"] = memoryLines(context, r, m["pool_growth_lines"], n, text);
    sayMore(out, "pool_growth_lines", m["pool_growth_lines"].size(), out["pool_growth_lines"].size());
  }
  out["oom"] = !m["oom"].is_null();
  return {text, out, false};
}

CallToolResult outOfMemory(ToolContext& context, const Args& args) {
  int n = args.count("n", 10, 1, 200);
  const json& m = needMemory(context);
  auto& r = *context.report();
  if (m["oom"].is_null()) return {"No out-of-memory error in this profile.", {{"oom", nullptr}}, false};
  const json& o = m["oom"];
  json out = {{"oom", json::object()}};
  json& jo = out["oom"];
  std::string text = storyText(context, {"Out of memory"});
  if (o["path"].is_string()) {
    jo = place(context, r, o);
    if (jo.contains("text")) text += "  " + where(jo) + "  " + jo["text"].get<std::string>() + "\n";
  }
  copyFields(o, jo, {"requested_bytes", "free_bytes"});
  text += "Called from\n";
  jo["stack"] = memoryLines(context, r, o["stack"], n, text);
  sayMore(jo, "stack", o["stack"].size(), jo["stack"].size());
  text += "Holding memory\n";
  out["holders"] = memoryLines(context, r, m["top_lines"], n, text);
  sayMore(out, "holders", m["top_lines"].size(), out["holders"].size());
  return {text, out, false};
}

CallToolResult ranks(ToolContext& context, const Args& args) {
  int n = args.count("n", 8, 1, 1000);
  auto& r = needReport(context);
  const json& rj = r.json();
  needTimes(rj);
  json out = {{"ranks", json::array()}};
  for (size_t i = 0; i < rj["ranks"].size() && static_cast<int>(i) < n; ++i) {
    json row;
    copyFields(rj["ranks"][i], row,
               {"label", "rank", "host", "gpu_ns", "busy_ns", "comm_ns", "comm_exposed_ns", "steps", "median_step_ns"});
    out["ranks"].push_back(std::move(row));
  }
  sayMore(out, "ranks", rj["ranks"].size(), out["ranks"].size());
  // The rank table as the report words it (per step); one rank has none.
  std::string text = rj["ranks"].size() == 1
                         ? "1 rank: " + diff::inert(rj["ranks"][0].value("label", "")) + ", its median step " +
                               ms(rj["ranks"][0].value("median_step_ns", 0.0)) + "\n"
                         : std::to_string(rj["ranks"].size()) + " ranks\n";
  if (rj.contains("verdict") && !rj["verdict"]["late_rank"].is_null()) {
    out["late_rank"] = rj["verdict"]["late_rank"];
    if (out["late_rank"].contains("line"))
      out["late_rank"]["line"]["path"] = context.shown(out["late_rank"]["line"].value("path", std::string()));
    text += "The others wait for " + diff::inert(out["late_rank"].value("label", "")) + "\n";
  }
  if (rj.contains("job")) {
    const json& job = rj["job"];
    json j;
    for (const auto& [key, value] : job.items())
      if (!value.is_array() || value.size() <= static_cast<size_t>(n))
        j[key] = value;
      else {
        j[key] = json(value.begin(), value.begin() + n);
        j[key + "_more"] = value.size() - n;
      }
    // The lines' paths as the workspace has them (a summary keeps the profile's).
    if (j.contains("lines"))
      for (auto& l : j["lines"])
        if (l.contains("path") && l["path"].is_string()) l["path"] = context.localShown(l["path"].get<std::string>());
    if (j.contains("late_ranks"))
      for (auto& late : j["late_ranks"])
        if (late.contains("only_lines"))
          for (auto& l : late["only_lines"])
            if (l.contains("path") && l["path"].is_string())
              l["path"] = context.localShown(l["path"].get<std::string>());
    out["job"] = std::move(j);
  }
  if (rj.contains("job")) text += storyText(context, {"Ranks", "Job", "Straggler", "Spread", "Comm"});
  return {text, out, false};
}

CallToolResult compare(ToolContext& context, const Args& args) {
  int n = args.count("n", 10, 1, 200);
  std::vector<features::GateRule> rules;
  std::string fail_on = args.text("fail_on");
  for (size_t start = 0; !fail_on.empty() && start <= fail_on.size();) {
    size_t comma = fail_on.find(',', start);
    std::string one = fail_on.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string error;
    auto rule = features::parseGateRule(one, error);
    if (!rule) throw ToolError{"fail_on: " + error};
    rules.push_back(*rule);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto& r = needReport(context);
  const LoadedProfile* loaded = context.workspace().profile();
  std::vector<join::RankSummary> base;
  std::string base_path;
  if (args.has("baseline")) {
    base_path = context.workspaceFile(args.text("baseline"));
    std::string error;
    if (isSummaryFile(base_path)) {
      auto read = readSummaryFile(base_path, error);
      if (!read) throw ToolError{context.shown(base_path) + ": " + error};
      base = std::move(*read);
    } else {
      cli::JoinRequest request;
      request.all_steps = context.workspace().settings().all_steps;
      auto joined = cli::loadJoinedProfile({base_path}, context.workspace().mapper(), r.sources(), request, error);
      if (!joined) throw ToolError{context.shown(base_path) + ": " + error};
      base = join::summarizeRanks(*joined, fs::path(base_path).filename().string());
      // The lines' text, as `sightline diff` reads a profile: lines are matched by it.
      addLineTexts(base, context.workspace().mapper());
    }
  } else if (const Regression* reg = context.workspace().regression(); reg && rules.empty()) {
    base_path = context.workspace().comparePath();
  } else if (!context.workspace().comparePath().empty()) {
    base_path = context.workspace().comparePath();
    if (isSummaryFile(base_path)) {
      std::string error;
      auto read = readSummaryFile(base_path, error);
      if (!read) throw ToolError{context.shown(base_path) + ": " + error};
      base = std::move(*read);
    } else if (const LoadedProfile* c = context.workspace().compareProfile()) {
      base = c->summaries;
    }
  } else {
    throw ToolError{
        "no baseline: pass \"baseline\" (a rank summary that `sightline report --format summary` wrote, "
        "or a profile of the earlier run), or set sightline.compareWith"};
  }
  std::shared_ptr<const Regression> made;
  const Regression* reg = nullptr;
  if (!base.empty() || args.has("baseline")) {
    std::string why;
    made = regressionOf(base, loaded->summaries, context.workspace().mapper(), fs::path(base_path).filename().string(),
                        why, rules);
    if (!made) throw ToolError{"the runs cannot be compared: " + why};
    reg = made.get();
  } else {
    reg = context.workspace().regression();
  }
  if (!reg) throw ToolError{"the baseline " + context.shown(base_path) + " is not loaded yet"};
  diff::DiffPage page;
  page.inputs = {context.shown(base_path), context.shown(loaded->path)};
  page.format = "json";
  // n 200 lists every line; below it, lines under 10 µs per step in both runs are left out.
  page.lines = n >= 200 ? SIZE_MAX : static_cast<size_t>(n);
  page.more = "call compare with n 200 for every line (lines under 10 µs per step in both runs are left out)";
  page.gate_hint = "call compare with fail_on (\"step:+5%,line:+1ms\", say) to gate";
  page.several_hint = "`sightline diff BASE1.json BASE2.json ... NEW` takes several (docs/ci.md)";
  std::ostringstream text;
  diff::writeDiffText(reg->diff, page, text);
  json out = diff::diffJson(reg->diff, page);
  for (auto& l : out["lines"])
    if (l.contains("path") && l["path"].is_string()) l["path"] = context.localShown(l["path"].get<std::string>());
  return {terminalSafe(text.str()), out, false};
}

// The profiler of the loaded capture's window: its steps file's, else its format's.
std::string loadedProfiler(const LoadedProfile* loaded) {
  if (!loaded) return "nsys";
  if (const auto& m = loaded->join->measured(); m && (m->profiler == "torch" || m->profiler == "nsys"))
    return m->profiler;
  return loaded->profile().info.format == "kineto-json" ? "torch" : "nsys";
}

CallToolResult captureCommand(ToolContext& context, const Args& args) {
  const LoadedProfile* loaded = context.workspace().profile();
  std::string profiler = args.choice("profiler", loadedProfiler(loaded), {"nsys", "torch"});
  int nproc = args.count("nproc", 0, 0, 1024);
  std::vector<std::string> argv = {"sightline", "capture"};
  if (profiler == "torch") argv.insert(argv.end(), {"--profiler", "torch"});
  // A name no capture in the workspace has: the run it follows stays, to compare with.
  const std::string& root = context.workspace().root();
  std::string name = "sightline-capture";
  auto taken = [&](const std::string& n) {
    std::error_code ec;
    for (const char* ext : {".sqlite", ".nsys-rep", ".steps.json", ".rank0.pt.trace.json.gz"})
      if (fs::exists(fs::path(root) / (n + ext), ec)) return true;
    return false;
  };
  for (int i = 2; taken(name) && i < 1000; ++i) name = "sightline-capture-" + std::to_string(i);
  argv.insert(argv.end(), {"-o", name, "--"});
  const auto* measured = loaded && loaded->join->measured() ? &*loaded->join->measured() : nullptr;
  std::string script, from;
  if (args.has("script")) script = context.shown(context.workspaceFile(args.text("script")));
  bool same_script = measured && !measured->command.empty() &&
                     (script.empty() || std::any_of(measured->command.begin(), measured->command.end(),
                                                    [&](const std::string& w) { return w == script; }));
  if (same_script && nproc == 0) {
    // The command the loaded capture ran, run again: its arguments as they were.
    for (const auto& word : measured->command) argv.push_back(word);
    from = "the command the loaded capture ran (" + measured->from + ")";
  } else {
    if (script.empty() && loaded && loaded->verdict && !loaded->verdict->script.empty()) {
      // The training script by its name: where the workspace holds it.
      script = loaded->verdict->script;
      if (auto found = uniqueFileNamed(context.workspace().root(), script)) script = context.shown(*found);
    }
    if (script.empty())
      throw ToolError{"name the training script: \"script\": \"train.py\" (no loaded capture names one)"};
    int ranks = nproc > 0 ? nproc : loaded && loaded->verdict ? std::max(1, loaded->verdict->ranks) : 1;
    if (ranks > 1)
      argv.insert(argv.end(), {"torchrun", "--nproc_per_node=" + std::to_string(ranks), script});
    else
      argv.insert(argv.end(), {"python", script});
    from = std::string(args.has("script") ? "the script named" : "the loaded profile's training script") +
           "; add the arguments your run takes (the profile does not record them)";
  }
  std::string command;
  for (const auto& word : argv) command += (command.empty() ? "" : " ") + features::shellWord(word);
  json out = {{"command", command}, {"argv", argv}, {"cwd", context.workspace().root()}, {"from", from}};
  std::string why =
      "it times the steps with no profiler recording, then profiles a few in the same run "
      "(docs/capture.md)";
  std::string next = context.workspace().settings().profiles.empty()
                         ? "the next tool call here answers from " + name + " (the newest profile)"
                         : "name " + name + " in --profile (the server's profiles setting names another)";
  if (loaded) next += "; compare {\"baseline\": \"" + context.shown(loaded->path) + "\"} then gives the change";
  out["why"] = why;
  out["next"] = next;
  out["output"] = name;
  return {terminalSafe(command) + "\n(run in " + terminalSafe(root) + "; from " + terminalSafe(from) + ": " + why +
              ")\nAfterwards " + terminalSafe(next) + "\n",
          out, false};
}

using Handler = CallToolResult (*)(ToolContext&, const Args&);
struct Entry {
  const char* name;
  Handler handler;
};
constexpr Entry kHandlers[] = {{"step_verdict", stepVerdict}, {"top_lines", topLines},
                               {"line_cost", lineCost},       {"memory_at_peak", memoryAtPeak},
                               {"oom", outOfMemory},          {"ranks", ranks},
                               {"compare", compare},          {"capture_command", captureCommand}};

}  // namespace

const std::vector<protocol::mcp::Tool>& tools() { return toolDefinitions(); }

CallToolResult callTool(ToolContext& context, const std::string& name, const json& arguments) {
  const auto& defs = toolDefinitions();
  for (size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].name != name) continue;
    try {
      context.refresh();
      for (const auto& e : kHandlers) {
        if (name != e.name) continue;
        CallToolResult result = e.handler(context, Args(arguments, defs[i].input_schema));
        // Scripts that changed before the load, which the join realigned (as `report` says).
        if (auto* r = context.report(); r && result.structured.is_object())
          for (const auto& f : r->json()["files"]) {
            int64_t by = f.value("realigned_by", int64_t{0});
            if (by == 0 || !f["local_path"].is_string()) continue;
            std::string shown = context.shown(f["local_path"].get<std::string>());
            result.structured["realigned"].push_back({{"path", shown}, {"by", by}});
            result.text += "(" + diff::inert(shown) + " changed before the profile was loaded: its lines were moved " +
                           (by > 0 ? "down " : "up ") + std::to_string(by > 0 ? by : -by) +
                           " to match the text, as `sightline report` does; capture again for figures of this text)\n";
          }
        // Files the agent edited since the load: lines are given where they are now.
        std::vector<std::string> changed = context.changedFiles();
        if (!changed.empty() && result.structured.is_object()) {
          json shown = json::array();
          for (const auto& c : changed) shown.push_back(context.shown(c));
          result.structured["changed_since_profile"] = shown;
          std::string names;
          for (const auto& c : shown) names += (names.empty() ? "" : ", ") + diff::inert(c.get<std::string>());
          result.text += "(" + names + " changed since the profile: the lines listed are where they are now, " +
                         "`profiled_line` where the profile saw them; the story's rows name them as profiled. " +
                         "Capture again to measure the change.)\n";
        }
        return result;
      }
    } catch (const ToolError& e) {
      return {e.message, nullptr, true};
    }
  }
  return {"unknown tool \"" + diff::inert(name) + "\"", nullptr, true};
}

}  // namespace sightline::server::mcp
