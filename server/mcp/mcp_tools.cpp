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
                  " (*.nsys-rep, *.sqlite, *.pt.trace.json[.gz], memory snapshots). Capture one with `sightline "
                  "capture -- python train.py` (the capture_command tool gives the command), or name it in the "
                  "sightline.profiles setting"};
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
    std::string s = text.substr(begin, end - begin);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    size_t first = s.find_first_not_of(" \t");
    s = first == std::string::npos ? "" : s.substr(first);
    if (s.size() > kMaxLineText) s = s.substr(0, kMaxLineText) + "...";
    return diff::inert(s);
  }
  return "";
}

// A place the report names (`path` a local path or a profile path), as the agent reads it.
json place(ToolContext& context, const report::LoadedReport& r, const json& from) {
  std::string path = from.value("path", std::string());
  int64_t line = from.value("line", int64_t{0});
  json out = {{"path", context.shown(path)}, {"line", line}};
  if (std::string text = lineText(r, path, line); !text.empty()) out["text"] = text;
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

// --- the tools ----------------------------------------------------------------------------------

CallToolResult stepVerdict(ToolContext& context, const Args& args) {
  int n = args.count("lines", 3, 1, 50);
  auto& r = needReport(context);
  const json& rj = r.json();
  const LoadedProfile* loaded = context.workspace().profile();
  if (rj.value("total_gpu_ns", int64_t{0}) == 0 && rj.contains("memory"))
    throw ToolError{
        "no step verdict: the profile is a memory snapshot, with no GPU times; the memory_at_peak and "
        "oom tools read it"};
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
  std::string text = terminalSafe(terminalText(story));
  if (!lines_text.empty()) text += "Lines\n" + lines_text;
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
  LineKey key = lineKey(by, pass);
  struct Row {
    const json* file;
    const json* line;
    int64_t value;
  };
  std::vector<Row> rows;
  for (const auto& f : rj["files"]) {
    if (!only.empty() && f.value("local_path", json()).is_string() && f["local_path"] != only) continue;
    if (!only.empty() && !f["local_path"].is_string()) continue;
    for (const auto& l : f["lines"])
      if (int64_t v = l.value(key.field, int64_t{0}); v > 0) rows.push_back({&f, &l, v});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.value > b.value; });
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
    std::string path = (*rows[i].file)["local_path"].is_string() ? (*rows[i].file)["local_path"].get<std::string>()
                                                                 : (*rows[i].file)["path"].get<std::string>();
    json p = place(context, r, {{"path", path}, {"line", l["line"]}});
    copyFields(l, p,
               {"gpu_ns", "forward_ns", "backward_ns", "inclusive_ns", "share", "inclusive_share", "syncs", "sync_ns",
                "idle_ns", "comm_exposed_ns", "slowest_rank", "rank_ns"});
    text += "  " + where(p) + "  " + ms(static_cast<double>(rows[i].value) / divisor) + "  " +
            features::formatShare(l.value(by == "self" ? "share" : "inclusive_share", 0.0)) +
            (p.contains("text") ? "  " + p["text"].get<std::string>() : "") + "\n";
    lines.push_back(std::move(p));
  }
  sayMore(out, "lines", rows.size(), lines.size());
  if (rows.size() > lines.size()) text += "  (" + std::to_string(rows.size() - lines.size()) + " more lines)\n";
  if (rows.empty()) text += "  none: the profile puts no such time on the workspace's lines\n";
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

// The document of `absolute` in the workspace as it is on disk (opened, or opened again when the
// file changed), for the editor's findings and fixes.
Document& documentOf(ToolContext& context, const std::string& absolute) {
  std::string uri = pathToUri(absolute);
  auto text = readTextFile(absolute, kMaxScriptBytes);
  if (!text) throw ToolError{"cannot read " + context.shown(absolute)};
  Workspace& ws = context.workspace();
  if (Document* doc = ws.find(uri); doc && doc->file().text() == *text) return *doc;
  ws.close(uri);
  return ws.open(uri, 0, std::move(*text));
}

json editJson(const source::SourceFile& file, const features::TextEdit& e) {
  auto at = file.lines().pointAt(e.range.begin);
  auto end = file.lines().pointAt(e.range.end);
  return {{"line", at.line + 1},
          {"end_line", end.line + 1},
          {"old_text", file.text().substr(e.range.begin, e.range.end - e.range.begin)},
          {"new_text", e.new_text}};
}

CallToolResult lineCost(ToolContext& context, const Args& args) {
  std::string path = args.text("path");
  int64_t line = args.count("line", 0, 1, 10'000'000);
  if (auto colon = path.rfind(':'); !args.has("line") && colon != std::string::npos) {
    std::string digits = path.substr(colon + 1);
    if (!digits.empty() && digits.size() < 9 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      line = std::stoll(digits);
      path = path.substr(0, colon);
    }
  }
  if (line < 1) throw ToolError{"give the line: \"line\": N, or \"path\": \"train.py:N\""};
  std::string absolute = context.workspaceFile(path);
  Document& doc = documentOf(context, absolute);
  if (line > static_cast<int64_t>(doc.file().lines().lineCount()))
    throw ToolError{context.shown(absolute) + " has " + std::to_string(doc.file().lines().lineCount()) + " lines"};
  json out = {{"path", context.shown(absolute)}, {"line", line}};
  std::string text = context.shown(absolute) + ":" + std::to_string(line);
  auto* r = context.report();
  if (r) {
    if (std::string t = lineText(*r, absolute, line); !t.empty()) out["text"] = t;
    const json* l = reportLine(r->json(), absolute, line);
    out["cost"] = l ? *l : json(nullptr);
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
    } else {
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
  // The rules that fire on the line, and their fixes, as the editor's diagnostics and quick fixes.
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
  json out = {{"ranks", json::array()}};
  std::string text;
  for (size_t i = 0; i < rj["ranks"].size() && static_cast<int>(i) < n; ++i) {
    const json& k = rj["ranks"][i];
    json row;
    copyFields(k, row,
               {"label", "rank", "host", "gpu_ns", "busy_ns", "comm_ns", "comm_exposed_ns", "steps", "median_step_ns"});
    text += "  " + diff::inert(k.value("label", "")) + "  step " + ms(k.value("median_step_ns", 0.0)) + ", busy " +
            ms(k.value("busy_ns", 0.0)) + ", communication exposed " + ms(k.value("comm_exposed_ns", 0.0)) + "\n";
    out["ranks"].push_back(std::move(row));
  }
  sayMore(out, "ranks", rj["ranks"].size(), out["ranks"].size());
  text = std::to_string(rj["ranks"].size()) + (rj["ranks"].size() == 1 ? " rank" : " ranks") + "\n" + text;
  if (rj.contains("verdict") && !rj["verdict"]["late_rank"].is_null()) {
    out["late_rank"] = rj["verdict"]["late_rank"];
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
  page.lines = static_cast<size_t>(n);
  page.more = "call compare with a larger n (at most 200)";
  std::ostringstream text;
  diff::writeDiffText(reg->diff, page, text);
  return {terminalSafe(text.str()), diff::diffJson(reg->diff, page), false};
}

CallToolResult captureCommand(ToolContext& context, const Args& args) {
  std::string profiler = args.choice("profiler", "nsys", {"nsys", "torch"});
  int nproc = args.count("nproc", 0, 0, 1024);
  const LoadedProfile* loaded = context.workspace().profile();
  std::vector<std::string> argv = {"sightline", "capture"};
  if (profiler == "torch") argv.insert(argv.end(), {"--profiler", "torch"});
  argv.push_back("--");
  std::string script, from;
  if (args.has("script")) {
    script = context.shown(context.workspaceFile(args.text("script")));
  } else if (loaded && loaded->join->measured() && !loaded->join->measured()->command.empty() && nproc == 0) {
    // The command the loaded capture ran, run again.
    for (const auto& word : loaded->join->measured()->command) argv.push_back(word);
    from = "the command the loaded capture ran (" + loaded->join->measured()->from + ")";
  } else if (loaded && loaded->verdict && !loaded->verdict->script.empty()) {
    script = loaded->verdict->script;
  } else {
    throw ToolError{"name the training script: \"script\": \"train.py\" (no loaded capture names one)"};
  }
  if (from.empty()) {
    int ranks = nproc > 0 ? nproc : loaded ? std::max(1, loaded->verdict ? loaded->verdict->ranks : 1) : 1;
    if (ranks > 1)
      argv.insert(argv.end(), {"torchrun", "--nproc_per_node=" + std::to_string(ranks), script});
    else
      argv.insert(argv.end(), {"python", script});
    from = args.has("script") ? "the script named" : "the loaded profile's training script";
  }
  std::string command;
  for (const auto& word : argv) command += (command.empty() ? "" : " ") + features::shellWord(word);
  json out = {{"command", command}, {"argv", argv}, {"cwd", context.workspace().root()}, {"from", from}};
  std::string why =
      "it times the steps with no profiler recording, then profiles a few in the same run, and writes "
      "the profile and its steps file where the editor and this server find them (docs/capture.md)";
  out["why"] = why;
  return {terminalSafe(command) + "\n(run in " + terminalSafe(context.workspace().root()) + "; from " +
              terminalSafe(from) + ": " + why + ")",
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

report::LoadedReport* ToolContext::report() {
  const LoadedProfile* loaded = workspace_.profile();
  if (!loaded) return nullptr;
  const LoadedProfile* compare = workspace_.compareProfile();
  if (report_ && (report_loaded_ != loaded || report_compare_ != compare)) report_.reset();
  if (!report_) {
    report_loaded_ = loaded, report_compare_ = compare;
    // The workspace's files the profile maps onto: the report's named files.
    std::vector<std::string> paths;
    for (const auto& [file, lines] : loaded->attr().files)
      if (auto local = loaded->join->localPathOf(file)) {
        std::string absolute = normalPath(*local);
        if (std::find(paths.begin(), paths.end(), absolute) == paths.end()) paths.push_back(absolute);
      }
    std::ostringstream ignored;
    bool unreadable = false;
    auto sources = cli::readNamedFiles(paths, "mcp", ignored, unreadable);
    report_ = std::make_unique<report::LoadedReport>(*loaded, compare, std::move(sources));
  }
  return report_.get();
}

std::string ToolContext::workspaceFile(const std::string& path) const {
  if (path.empty()) throw ToolError{"the path is empty"};
  const std::string& root = workspace_.root();
  if (root.empty()) throw ToolError{"the server has no workspace folder (--root)"};
  fs::path p(path);
  std::string absolute = normalPath(p.is_absolute() ? path : (fs::path(root) / p).string());
  LocalScope scope{{normalPath(root)}, {}};
  if (!scope.allows(absolute))
    throw ToolError{"\"" + diff::inert(path) + "\" is outside the workspace " + root + ": only its files are read"};
  std::error_code ec;
  if (!fs::is_regular_file(absolute, ec)) throw ToolError{"no such file in the workspace: " + diff::inert(path)};
  return absolute;
}

std::string ToolContext::shown(const std::string& absolute) const {
  const std::string& root = workspace_.root();
  if (!root.empty() && absolute.size() > root.size() + 1 && absolute.compare(0, root.size(), root) == 0 &&
      absolute[root.size()] == '/')
    return absolute.substr(root.size() + 1);
  return absolute;
}

const std::vector<protocol::mcp::Tool>& tools() { return toolDefinitions(); }

CallToolResult callTool(ToolContext& context, const std::string& name, const json& arguments) {
  const auto& defs = toolDefinitions();
  for (size_t i = 0; i < defs.size(); ++i) {
    if (defs[i].name != name) continue;
    try {
      for (const auto& e : kHandlers)
        if (name == e.name) return e.handler(context, Args(arguments, defs[i].input_schema));
    } catch (const ToolError& e) {
      return {e.message, nullptr, true};
    }
  }
  return {"unknown tool \"" + diff::inert(name) + "\"", nullptr, true};
}

std::vector<protocol::mcp::Resource> resources(ToolContext& context) {
  std::vector<protocol::mcp::Resource> out;
  auto* r = context.report();
  if (!r) return out;
  for (const auto& src : r->sources()) {
    std::string shown = context.shown(src.absolute);
    out.push_back({"sightline://annotated/" + percentEncoded(shown), shown + " (annotated)",
                   "GPU time on the lines of " + shown,
                   "The text report of one file: each line's GPU time per step, forward and backward, as `sightline "
                   "report` prints it",
                   "text/plain", -1});
  }
  out.push_back(
      {"sightline://page", "report.html", "The report's page",
       "Where the report's self-contained HTML page is written (in the cache): its path, to open in a browser",
       "text/plain", -1});
  return out;
}

std::optional<ResourceText> readResource(ToolContext& context, const std::string& uri, std::string& error) {
  auto* r = context.report();
  if (!r) {
    error = "no profile is loaded";
    return std::nullopt;
  }
  const std::string prefix = "sightline://annotated/";
  if (uri.rfind(prefix, 0) == 0) {
    for (const auto& src : r->sources()) {
      if (prefix + percentEncoded(context.shown(src.absolute)) != uri) continue;
      std::ostringstream text;
      report::writeAnnotatedFile(r->data(), src, text);
      return ResourceText{terminalSafe(text.str()), "text/plain"};
    }
    error = "no such annotated file: " + diff::inert(uri);
    return std::nullopt;
  }
  if (uri == "sightline://page") {
    std::string folder = privateCacheFolder("pages", error);
    if (folder.empty()) return std::nullopt;
    std::ostringstream page, problems;
    if (report::writeHtmlReport(r->data(), page, problems) != 0) {
      error = problems.str();
      return std::nullopt;
    }
    std::string name = fs::path(context.workspace().profile()->path).filename().string() + ".html";
    std::string path = folder + "/" + name;
    if (!writeOutputFile(path, page.str(), context.workspace().profile()->parts, error)) return std::nullopt;
    return ResourceText{path, "text/plain"};
  }
  error = "no such resource: " + diff::inert(uri);
  return std::nullopt;
}

}  // namespace sightline::server::mcp
