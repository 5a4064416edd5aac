// Compilations per compiled function, and their windows on the profile's clock.
#include "analysis/join/compile_summary.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

namespace sightline::join {

namespace {

constexpr std::string_view kResume = "torch_dynamo_resume_in_";

// "torch_dynamo_resume_in_forward_at_22" -> ("forward", 22); ("", 0) for any other name.
std::pair<std::string, int32_t> resumeOf(const std::string& name) {
  if (!name.starts_with(kResume)) return {"", 0};
  size_t at = name.rfind("_at_");
  if (at == std::string::npos || at < kResume.size()) return {"", 0};
  int32_t line = 0;
  auto [p, ec] = std::from_chars(name.data() + at + 4, name.data() + name.size(), line);
  if (ec != std::errc() || p != name.data() + name.size()) return {"", 0};
  return {name.substr(kResume.size(), at - kResume.size()), line};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A failed guard without its compile id, comment and numbers: reasons that differ only in a
// value or a size group together.
CompiledFunctionSummary::Reason normalizeReason(std::string_view text) {
  CompiledFunctionSummary::Reason r;
  if (size_t colon = text.find(": "); colon != std::string_view::npos && colon < 12 &&
                                      text.substr(0, colon).find_first_not_of("0123456789/") == std::string_view::npos)
    text.remove_prefix(colon + 2);
  text = text.substr(0, text.find('\n'));
  text = text.substr(0, text.find("  #"));
  text = text.substr(0, text.find(". expected"));
  text = trim(text);
  size_t eq = text.rfind(" == ");
  if (eq != std::string_view::npos) {
    std::string_view value = trim(text.substr(eq + 4));
    r.value = !value.empty() && value.find_first_not_of("0123456789.-+eE") == std::string_view::npos;
  }
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool number_start = (std::isdigit(static_cast<unsigned char>(text[i])) != 0) &&
                        (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'));
    if (number_start) {
      size_t j = i;
      while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
      out += text.substr(i, j - i).find('.') != std::string_view::npos ? "…" : std::string(text.substr(i, j - i));
      i = j;
      continue;
    }
    out.push_back(text[i++]);
  }
  r.text = std::move(out);
  return r;
}

// Dynamo's reason text: its first line of substance and its hints.
void splitReason(std::string_view text, std::string& reason, std::string& hint) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = trim(text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos));
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    if (line.empty() || line.starts_with("Encountered graph break") || line.starts_with("Graph Break Reason")) continue;
    if (line.starts_with("Hint: ")) {
      if (!hint.empty()) hint += " ";
      hint += std::string(line.substr(6));
    } else if (reason.empty()) {
      reason = std::string(line);
    }
  }
}

// The user's line that called the compiled function: the innermost frame of its own code
// above the function's frame (the last one).
std::optional<model::SourceLine> callLine(const model::CompileRecord& c) {
  for (size_t i = c.stack.size(); i-- > 0;) {
    if (i + 1 == c.stack.size()) continue;
    const auto& f = c.stack[i];
    if (attribution::isDefaultUserFile(f.file)) return f;
  }
  return std::nullopt;
}

int recompileLimit(const std::string& fail_reason) {
  if (fail_reason.find("recompile limit") == std::string::npos &&
      fail_reason.find("recompile_limit") == std::string::npos &&
      fail_reason.find("cache_size_limit") == std::string::npos)
    return 0;
  constexpr std::string_view kSet = "currently set to ";
  size_t at = fail_reason.find(kSet);
  int limit = -1;
  if (at != std::string::npos)
    std::from_chars(fail_reason.data() + at + kSet.size(), fail_reason.data() + fail_reason.size(), limit);
  return limit > 0 ? limit : -1;
}

// The frame of a compile id ("1/3" -> "1").
std::string frameOf(const std::string& id) { return id.substr(0, id.find('/')); }

// The summary's break at `line`, added when it has none there.
CompiledFunctionSummary::Break& breakAt(CompiledFunctionSummary& s, int32_t line) {
  auto it = std::find_if(s.breaks.begin(), s.breaks.end(), [&](const auto& b) { return b.line == line; });
  if (it != s.breaks.end()) return *it;
  s.breaks.push_back({line, "", "", 0});
  return s.breaks.back();
}

}  // namespace

std::vector<CompiledFunctionSummary> summarizeCompiles(const model::CompiledCode& code) {
  std::vector<CompiledFunctionSummary> out;
  std::map<std::pair<std::string, std::string>, size_t> by_name;  // (file, function) -> summary
  std::map<std::string, size_t> by_frame;                         // "0" (frame id) -> summary
  std::set<std::pair<size_t, std::string>> frames;
  auto summaryFor = [&](const model::CompileRecord& c) -> size_t {
    std::string frame = frameOf(c.id);
    if (auto f = by_frame.find(frame); f != by_frame.end() && !frame.empty()) return f->second;
    auto resume = resumeOf(c.function.function);
    const std::string parent = resume.first;
    const int32_t line = resume.second;
    std::string name = parent.empty() ? c.function.function : parent;
    if (name.empty() || c.function.file.empty()) return SIZE_MAX;
    auto [it, added] = by_name.try_emplace({c.function.file, name}, out.size());
    if (added) {
      out.emplace_back();
      out.back().function = parent.empty() ? c.function : model::SourceLine{c.function.file, 0, parent};
    }
    if (!parent.empty() && line > 0) breakAt(out[it->second], line);
    if (!frame.empty()) by_frame[frame] = it->second;
    return it->second;
  };
  for (const auto& c : code.compiles) {
    size_t at = summaryFor(c);
    if (at == SIZE_MAX) continue;
    auto& s = out[at];
    if (s.function.line == 0 && resumeOf(c.function.function).first.empty()) s.function = c.function;
    if (int limit = recompileLimit(c.fail_reason)) {
      s.recompile_limit = limit > 0 ? limit : std::max(1, s.recompile_limit);
      continue;  // the attempt that gave up compiled nothing
    }
    ++s.compiles;
    s.seconds += c.seconds;
    if (frames.insert({at, frameOf(c.id)}).second) ++s.graphs;
    if (!c.recompile_reason.empty()) {
      ++s.recompiles;
      auto r = normalizeReason(c.recompile_reason);
      auto same = std::find_if(s.recompile_reasons.begin(), s.recompile_reasons.end(),
                               [&](const auto& x) { return x.text == r.text; });
      if (same == s.recompile_reasons.end()) same = s.recompile_reasons.insert(same, std::move(r));
      ++same->count;
    }
    if (auto call = callLine(c); call && std::find(s.calls.begin(), s.calls.end(), *call) == s.calls.end())
      s.calls.push_back(*call);
  }
  for (auto& f : out)
    std::stable_sort(f.recompile_reasons.begin(), f.recompile_reasons.end(),
                     [](const auto& a, const auto& b) { return a.count > b.count; });
  // The breaks' reasons: Dynamo's graph break records, at their lines.
  for (const auto& b : code.graph_breaks) {
    size_t at = SIZE_MAX;
    if (auto f = by_frame.find(frameOf(b.compile_id)); f != by_frame.end()) at = f->second;
    for (size_t i = 0; i < out.size() && at == SIZE_MAX; ++i)
      if (out[i].function.file == b.at.file && out[i].function.line <= b.at.line) at = i;
    if (at == SIZE_MAX) continue;
    auto& at_line = breakAt(out[at], b.at.line);
    ++at_line.count;
    if (at_line.reason.empty()) splitReason(b.reason, at_line.reason, at_line.hint);
  }
  // Breaks known only from a resume function: the reason that restarted its parent's trace.
  for (const auto& c : code.compiles) {
    if (c.restart_reasons.empty()) continue;
    auto f = by_frame.find(frameOf(c.id));
    if (f == by_frame.end()) continue;
    for (auto& b : out[f->second].breaks)
      if (b.reason.empty()) splitReason(c.restart_reasons.front(), b.reason, b.hint);
  }
  for (auto& s : out) {
    for (auto& b : s.breaks) b.count = std::max(b.count, 1);
    std::sort(s.breaks.begin(), s.breaks.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
  }
  return out;
}

void addProfileGraphBreaks(const model::Profile& profile, std::vector<CompiledFunctionSummary>& summaries) {
  std::set<std::pair<model::StringId, model::StringId>> seen;  // (file, function)
  for (const auto& f : profile.frames) seen.insert({f.file, f.function});
  for (const auto& c : profile.calls)
    if (c.kind == model::CallKind::Function) seen.insert({c.file, c.function});
  for (const auto& [file, function] : seen) {
    auto resume = resumeOf(profile.strings[function]);
    const std::string parent = resume.first;
    const int32_t line = resume.second;
    if (parent.empty() || line <= 0) continue;
    const std::string& path = profile.strings[file];
    auto it = std::find_if(summaries.begin(), summaries.end(), [&](const CompiledFunctionSummary& s) {
      return s.function.function == parent && s.function.file == path;
    });
    if (it == summaries.end()) {
      CompiledFunctionSummary s;
      s.function = {path, 0, parent};
      s.profile_only = true;
      summaries.push_back(std::move(s));
      it = std::prev(summaries.end());
    }
    auto& at_line = breakAt(*it, line);
    at_line.count = std::max(at_line.count, 1);
    std::sort(it->breaks.begin(), it->breaks.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
    if (it->profile_only) it->graphs = static_cast<int>(it->breaks.size()) + 1;
  }
}

std::vector<attribution::CompileWindow> compileWindows(const model::CompiledCode& code, model::Profile& profile) {
  std::vector<attribution::CompileWindow> out;
  if (profile.info.utc_start_ns <= 0 || code.compiles.empty()) return out;
  std::set<uint32_t> pids;
  for (const auto& a : profile.api_calls) pids.insert(a.pid);
  for (const auto& c : code.compiles) {
    // Epoch seconds before 2286 and compiles under a day: anything else is not a clock reading.
    if (!(c.start_s > 0 && c.start_s < 1e10 && c.seconds > 0 && c.seconds < 86400)) continue;
    attribution::CompileWindow w;
    w.start_ns = std::llround(c.start_s * 1e9) - profile.info.utc_start_ns;
    w.end_ns = w.start_ns + std::llround(c.seconds * 1e9);
    w.pid = pids.count(c.pid) ? c.pid : 0;  // a process the profile does not know: any process
    if (auto call = callLine(c)) {
      w.file = profile.strings.intern(call->file);
      w.line = call->line;
    } else {
      w.file = profile.strings.intern(c.function.file);
      w.line = c.function.line;
    }
    out.push_back(w);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace sightline::join
