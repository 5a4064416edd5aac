// The memory story: the replay of the device told, its lines charged and named.
#include "analysis/join/memory_story.h"

#include <algorithm>
#include <map>

namespace sightline::join {

const char* phaseName(attribution::MemoryPhase phase) {
  switch (phase) {
    case attribution::MemoryPhase::Forward:
      return "forward";
    case attribution::MemoryPhase::Backward:
      return "backward";
    case attribution::MemoryPhase::Optimizer:
      return "optimizer";
    case attribution::MemoryPhase::Unknown:
      break;
  }
  return "";
}

namespace {

// A user's Python file: with stacks="all" a snapshot's stacks also hold C++ frames ("??",
// "CUDACachingAllocator.cpp"), which are no one's line.
bool isUser(std::string_view path) {
  return !attribution::isNativeFrameFile(path) && attribution::isDefaultUserFile(path);
}

// Places told per list (the lines holding the peak, those growing the pool, the out-of-memory
// call chain): each is a path, and a crafted snapshot can hold a thousand lines of a long one.
// Every line's figures are on its LineCost all the same.
constexpr size_t kMemoryPlaces = 100;

// The device to tell: the one that ran out of memory, else the one with the highest peak.
const attribution::MemoryReplay& toldDevice(const std::vector<attribution::MemoryReplay>& replays) {
  const attribution::MemoryReplay* told = &replays.front();
  for (const auto& r : replays) {
    if (r.oom && !told->oom) told = &r;
    if (r.oom.has_value() == told->oom.has_value() && r.peak_allocated > told->peak_allocated) told = &r;
  }
  return *told;
}

// A trace's memory events by the steps found in it (attribution's, on the host clock): the
// step of the peak, and each line's allocations per steady step.
void tracePerStep(const model::Profile& profile, attribution::Attribution& attr, const attribution::MemoryReplay& r,
                  MemoryStory& story) {
  auto found = attr.process_steps.find(r.pid);
  if (found == attr.process_steps.end() || found->second.list.empty()) return;
  const auto& steps = found->second.list;
  auto stepAt = [&](int64_t t) -> int {  // 1-based; 0: in none
    auto it = std::upper_bound(steps.begin(), steps.end(), t,
                               [](int64_t v, const attribution::Step& s) { return v < s.start_ns; });
    if (it == steps.begin()) return 0;
    --it;
    return t < it->end_ns ? static_cast<int>(it - steps.begin()) + 1 : 0;
  };
  story.steps = static_cast<int>(steps.size());
  if (r.peak_event >= 0) story.peak_step = stepAt(profile.memory_uses[static_cast<size_t>(r.peak_event)].time_ns);
  story.steady_steps = static_cast<int>(std::count_if(
      steps.begin(), steps.end(), [](const attribution::Step& s) { return s.kind == attribution::StepKind::Steady; }));
  if (story.steady_steps == 0) return;
  std::map<std::pair<model::StringId, int32_t>, std::pair<int64_t, int64_t>> by_line;  // bytes, allocations
  for (size_t i = 0; i < profile.memory_uses.size() && i < attr.memory_use_lines.size(); ++i) {
    const auto& u = profile.memory_uses[i];
    const auto& at = attr.memory_use_lines[i];
    if (u.bytes <= 0 || u.segment || u.pid != r.pid || u.device != r.device || at.file == 0) continue;
    int step = stepAt(u.time_ns);
    if (step == 0 || steps[static_cast<size_t>(step - 1)].kind != attribution::StepKind::Steady) continue;
    auto& line = by_line[{at.file, at.line}];
    line.first += u.bytes;
    ++line.second;
  }
  for (const auto& [key, sums] : by_line) {
    auto& cost = attr.files[key.first][key.second];
    cost.memory_step_bytes += sums.first / story.steady_steps;
    cost.memory_step_allocations += sums.second / story.steady_steps;
  }
}

}  // namespace

JoinedMemory joinMemory(model::Profile& profile, attribution::Attribution& attr,
                        const std::function<std::string(model::StringId)>& place) {
  JoinedMemory out;
  const auto& snapshot = profile.memory;
  bool from_snapshot = !snapshot.empty();
  auto replays = from_snapshot ? attribution::replayMemory(snapshot, isUser)
                               : attribution::replayMemoryUses(profile, attr.memory_use_lines, attr.memory_use_ops);
  if (replays.empty()) return out;
  const auto& r = toldDevice(replays);
  auto story = std::make_shared<MemoryStory>();
  story->source = from_snapshot                          ? "memory-snapshot"
                  : profile.info.format == "nsys-sqlite" ? "nsys"
                                                         : "pytorch-profiler";
  story->device = r.device;
  story->devices = static_cast<int>(replays.size());
  story->peak_allocated_bytes = r.peak_allocated;
  story->peak_reserved_bytes = r.peak_reserved;
  story->allocated_before_trace_bytes = r.allocated_before_trace;
  story->unattributed_bytes = r.unattributed_at_peak;
  story->peak_phase = r.peak_phase;
  story->steps = r.steps;
  story->peak_step = r.peak_step;
  if (r.allocated_known) story->series = r.series, story->step_starts_us = r.step_starts_us;
  // A trace's steps are its ProfilerStep windows.
  if (auto steps = attr.process_steps.find(r.pid); story->step_starts_us.empty() && steps != attr.process_steps.end())
    for (size_t k = 1; k < steps->second.list.size(); ++k)
      story->step_starts_us.push_back(steps->second.list[k].start_ns / 1000);
  story->peak_time_us = r.peak_time_us;
  story->steady_steps = r.steady_steps;
  story->allocated_known = r.allocated_known;
  story->pool_growth_bytes = r.pool_growth;
  // A replayed file id as the profile's string: a snapshot's interned once each, however many
  // lines name it; a trace's is the profile's already.
  constexpr model::StringId kNotYet = UINT32_MAX;
  std::vector<model::StringId> interned(from_snapshot ? snapshot.strings.size() : 0, kNotYet);
  auto fileOf = [&](uint32_t id) -> model::StringId {
    if (!from_snapshot) return id;
    if (id >= interned.size()) return 0;
    if (interned[id] == kNotYet) interned[id] = profile.strings.intern(snapshot.strings[id]);
    return interned[id];
  };
  for (const auto& l : r.growth_lines) {
    model::StringId file = fileOf(l.file);
    attr.files[file][l.line].memory_reserved_bytes += l.bytes;
    if (story->growth.size() < kMemoryPlaces) story->growth.push_back({place(file), l.line, l.bytes, ""});
  }
  for (const auto& k : r.kept) {
    auto& cost = attr.files[fileOf(k.file)][k.line];
    cost.memory_kept_count += k.count;
    cost.memory_kept_bytes += k.bytes;
    cost.memory_kept_steps = std::max(cost.memory_kept_steps, k.steps);
  }
  for (const auto& l : r.lines) {
    model::StringId file = fileOf(l.file);
    auto& cost = attr.files[file][l.line];
    cost.memory_peak_bytes += l.bytes;
    for (size_t i = 0; i < l.by_phase.size(); ++i) cost.memory_peak_by_phase[i] += l.by_phase[i];
    for (const auto& [op, bytes] : l.ops) cost.memory_peak_ops.emplace_back(profile.strings.intern(op), bytes);
    if (story->top.size() < kMemoryPlaces) story->top.push_back({place(file), l.line, l.bytes, ""});
  }
  if (r.allocated_known) {
    // The first lines of `top`, placed once already.
    for (size_t i = 0; i < r.band_lines.size() && i < story->top.size(); ++i)
      story->band_lines.push_back({story->top[i].path, story->top[i].line, 0, ""});
    story->step_series = r.step_series;
  }
  if (!from_snapshot && r.allocated_known) tracePerStep(profile, attr, r, *story);
  for (const auto& l : r.per_step) {
    auto& cost = attr.files[fileOf(l.file)][l.line];
    cost.memory_step_bytes += l.bytes;
    cost.memory_step_allocations += l.allocations;
  }
  if (r.oom) {
    MemoryStory::Oom oom;
    oom.requested_bytes = r.oom->requested;
    oom.free_bytes = r.oom->free;
    oom.time_us = r.oom->time_us;
    if (r.oom->file != 0) {
      out.oom_file = fileOf(r.oom->file);
      out.oom_line = r.oom->line;
      oom.where = {place(out.oom_file), r.oom->line, r.oom->requested, ""};
    }
    if (from_snapshot && r.oom->stack < snapshot.stacks.size()) {
      // The innermost user frames, told outermost first.
      std::vector<int8_t> user(snapshot.strings.size(), -1);  // by file id: unknown, no, yes
      for (uint32_t f : snapshot.stacks[r.oom->stack]) {
        if (oom.chain.size() == kMemoryPlaces) break;
        const auto& frame = snapshot.frames[f];
        if (user[frame.file] < 0) user[frame.file] = isUser(snapshot.strings[frame.file]) ? 1 : 0;
        if (user[frame.file] == 0) continue;
        oom.chain.push_back({place(fileOf(frame.file)), frame.line, 0, snapshot.strings[frame.function]});
      }
      std::reverse(oom.chain.begin(), oom.chain.end());
    }
    if (!oom.chain.empty() && oom.chain.back().line == oom.where.line) oom.where.function = oom.chain.back().function;
    story->oom = std::move(oom);
  }
  out.story = std::move(story);
  return out;
}

}  // namespace sightline::join
