// Field names in camelCase (an LSP extension's); spans and gaps as arrays, names interned
// into one table: a timeline holds up to 20,000 spans.
#include "server/render/step_view_json.h"

#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analysis/features/profile_view.h"
#include "analysis/features/step_headline.h"
#include "protocol/json_in.h"

namespace sightline::server {

using nlohmann::json;

namespace {

json idleJson(const std::array<int64_t, attribution::kWaitCount>& idle) {
  json out = json::object();
  for (size_t w = 0; w < attribution::kWaitCount; ++w)
    out[attribution::waitName(static_cast<attribution::Wait>(w))] = idle[w];
  return out;
}

json linesJson(const std::vector<features::ViewLine>& lines) {
  json out = json::array();
  for (const auto& l : lines) {
    json kinds = json::array();
    for (const auto& w : l.kinds)
      kinds.push_back({{"kind", w.kind}, {"ns", w.ns}, {"count", w.count}, {"share", w.share}});
    out.push_back({{"path", l.path},
                   {"line", l.line},
                   {"selfNs", l.self_ns},
                   {"forwardNs", l.forward_ns},
                   {"backwardNs", l.backward_ns},
                   {"inclusiveNs", l.inclusive_ns},
                   {"inclusiveForwardNs", l.inclusive_forward_ns},
                   {"inclusiveBackwardNs", l.inclusive_backward_ns},
                   {"idleNs", l.idle_ns},
                   {"memoryPeakBytes", l.memory_peak_bytes},
                   {"share", l.share},
                   {"inclusiveShare", l.inclusive_share},
                   {"inclusiveShown", l.inclusive_shown},
                   {"oneoffNs", l.oneoff_ns},
                   {"oneoffMarked", l.oneoff_marked},
                   {"kinds", std::move(kinds)}});
  }
  return out;
}

json ranksJson(const std::vector<features::RankBars>& ranks) {
  json out = json::array();
  for (const auto& r : ranks) {
    json steps = json::array();
    for (const auto& s : r.steps)
      steps.push_back({{"index", s.index},
                       {"kind", attribution::stepKindName(s.kind)},
                       {"startNs", s.start_ns},
                       {"wallNs", s.wall_ns},
                       {"computeNs", s.compute_ns},
                       {"commNs", s.comm_ns},
                       {"commWaitNs", s.comm_wait_ns},
                       {"copyNs", s.copy_ns},
                       {"idleNs", idleJson(s.idle_ns)},
                       {"topLine", s.top_line},
                       {"captureNs", s.capture_ns}});
    out.push_back({{"label", r.label},
                   {"pid", r.pid},
                   {"straggler", r.straggler},
                   {"medianWallNs", r.median_wall_ns},
                   {"steps", std::move(steps)}});
  }
  return out;
}

json timelineJson(const features::Timeline& t) {
  std::vector<std::string> names{""};
  std::unordered_map<std::string, size_t> name_ids{{"", 0}};
  auto name = [&](const std::string& s) {
    auto [it, added] = name_ids.try_emplace(s, names.size());
    if (added) names.push_back(s);
    return it->second;
  };
  json lanes = json::array();
  for (const auto& lane : t.lanes) {
    json spans = json::array();
    for (const auto& s : lane.spans) spans.push_back({s.start_ns, s.end_ns, s.line, name(s.name)});
    lanes.push_back({{"kind", lane.kind == features::LaneKind::Host ? "host" : "stream"},
                     {"name", lane.name},
                     {"merged", lane.merged},
                     {"spans", std::move(spans)}});
  }
  json gaps = json::array();
  for (const auto& g : t.gaps) gaps.push_back({g.start_ns, g.end_ns, attribution::waitName(g.wait), g.line});
  return {{"rank", t.rank},
          {"step", t.step},
          {"originNs", t.origin_ns},
          {"wallNs", t.wall_ns},
          {"gpuStartNs", t.gpu_start_ns},
          {"endNs", t.end_ns},
          {"lanes", std::move(lanes)},
          {"gaps", std::move(gaps)},
          {"names", names}};
}

json timelinesJson(const std::vector<features::Timeline>& timelines) {
  json out = json::array();
  for (const auto& t : timelines) out.push_back(timelineJson(t));
  return out;
}

json memorySeriesJson(const std::vector<features::MemoryView::Sample>& samples) {
  json series = json::array();
  for (const auto& s : samples)
    series.push_back({{"t", s.time_ns}, {"allocated", s.allocated}, {"reserved", s.reserved}, {"bands", s.bands}});
  return series;
}

json memoryJson(const features::MemoryView& m) {
  json series = memorySeriesJson(m.series);
  json top = json::array();
  for (const auto& [line, bytes] : m.top) top.push_back({{"line", line}, {"bytes", bytes}});
  json oom = nullptr;
  if (m.oom)
    oom = {{"timeNs", m.oom->time_ns},
           {"requestedBytes", m.oom->requested_bytes},
           {"freeBytes", m.oom->free_bytes},
           {"line", m.oom->line},
           {"chain", m.oom->chain}};
  return {{"peakAllocatedBytes", m.peak_allocated_bytes},
          {"peakReservedBytes", m.peak_reserved_bytes},
          {"peakTimeNs", m.peak_time_ns},
          {"series", std::move(series)},
          {"bands", m.bands},
          {"stepSeries", memorySeriesJson(m.step_series)},
          {"steps", m.step_starts_ns},
          {"top", std::move(top)},
          {"oom", std::move(oom)}};
}

json causeLinesJson(const features::StepView& view) {
  json out = json::object();
  for (size_t w = 0; w < attribution::kWaitCount; ++w)
    out[attribution::waitName(static_cast<attribution::Wait>(w))] = view.cause_lines[w];
  return out;
}

// The lines of `text` (1-based), for the listing.
std::vector<std::string_view> splitLines(const std::string& text) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    out.emplace_back(text.data() + at, end - at);
    if (end == text.size()) break;
    at = end + 1;
  }
  return out;
}

}  // namespace

json annotatedSourcesJson(const features::StepView& view, const std::vector<ListedFile>& files) {
  json out = json::array();
  for (const auto& f : files) {
    std::map<int32_t, int32_t> costly;  // line -> index into view.lines
    for (size_t i = 0; i < view.lines.size(); ++i)
      if (view.lines[i].path == f.absolute || view.lines[i].path == f.named)
        costly[view.lines[i].line] = static_cast<int32_t>(i);
    if (costly.empty()) continue;
    auto text = splitLines(*f.text);
    std::set<int32_t> shown;
    for (const auto& [line, index] : costly)
      for (int32_t l = line - 1; l <= line + 1; ++l)
        if (l >= 1 && static_cast<size_t>(l) <= text.size()) shown.insert(l);
    json lines = json::array();
    for (int32_t l : shown) {
      auto it = costly.find(l);
      lines.push_back({{"line", l},
                       {"text", std::string(text[static_cast<size_t>(l - 1)])},
                       {"line_index", it != costly.end() ? it->second : -1}});
    }
    out.push_back({{"path", f.absolute}, {"lines", std::move(lines)}});
  }
  return out;
}

json unprofiledStepJson(const features::StepVerdict& v) {
  const auto& u = v.unprofiled;
  auto bound = [](const std::optional<features::Bound>& b) {
    return b ? json(features::boundName(*b)) : json(nullptr);
  };
  return {{"source", features::stepSourceName(u.source)},
          {"wall_ns", u.wall_ns ? json(*u.wall_ns) : json(nullptr)},
          {"range_ns", json::array({u.lo_ns, u.hi_ns})},
          {"bound", bound(u.bound)},
          {"busy_share", u.wall_ns && u.busy_known ? json(u.busy_share) : json(nullptr)},
          {"steps", u.steps},
          {"ranks", u.ranks},
          {"added_ns", u.wall_ns ? json(u.added_ns) : json(nullptr)},
          {"added_max_ns", u.added_max_ns},
          {"reason", features::unprofiledReason(v)},
          {"measure", features::measureAdvice(v)}};
}

json headlineJson(const features::StepView::Headline& h) {
  if (!h.verdict) return nullptr;
  return {{"capturedNs", h.captured_ns},
          {"captured", "Step " + features::formatMilliseconds(h.captured_ns) + " ms as captured"},
          {"unprofiled", unprofiledStepJson(*h.verdict)},
          {"text", h.unprofiled},
          {"summary", h.summary},
          {"measure", h.measure}};
}

json stepViewJson(const features::StepView& view, const StepViewSource& source) {
  return {{"version", 1},
          {"profile", {{"file", source.file}, {"format", source.format}, {"gpus", source.gpus}}},
          {"hasSteps", view.has_steps},
          {"stepsSource", view.steps_source},
          {"steadySteps", view.steady_steps},
          {"unprofiledWallNs", view.unprofiled_wall_ns},
          {"headline", headlineJson(view.headline)},
          {"captureOverheadNs", view.capture_overhead_ns},
          {"lines", linesJson(view.lines)},
          {"ranks", ranksJson(view.ranks)},
          {"timelines", timelinesJson(view.timelines)},
          {"topLines", view.top_lines},
          {"causeLines", causeLinesJson(view)},
          {"memory", view.has_memory ? memoryJson(view.memory) : json(nullptr)}};
}

std::string jsonForScript(const json& value) {
  std::string text = protocol::dumpJson(value);
  std::string out;
  out.reserve(text.size() + 64);
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

}  // namespace sightline::server
