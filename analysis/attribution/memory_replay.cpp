// The replay: two passes over each device's events (the first finds what predates the trace,
// the second walks allocated bytes up to the peak and keeps who holds them there).
#include "analysis/attribution/memory_replay.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis/attribution/autograd_ranges.h"

namespace sightline::attribution {
namespace {

using model::MemoryAction;

constexpr int32_t kNoLine = -1;

// Lines by (file id, line), their file and line filled in, most bytes first; ties by file (its
// text in `names` when given, else its id), then line.
std::vector<MemoryLine> mostFirst(const std::map<std::pair<uint32_t, int32_t>, MemoryLine>& by_line,
                                  const std::vector<std::string>* names = nullptr) {
  std::vector<MemoryLine> out;
  out.reserve(by_line.size());
  for (const auto& [key, held] : by_line) {
    out.push_back(held);
    out.back().file = key.first;
    out.back().line = key.second;
  }
  std::stable_sort(out.begin(), out.end(), [&](const MemoryLine& a, const MemoryLine& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return names && a.file != b.file && (*names)[a.file] < (*names)[b.file];
  });
  return out;
}

void addBytes(MemoryLine& into, int64_t bytes, MemoryPhase phase) {
  into.bytes += bytes;
  ++into.allocations;
  if (int i = phaseIndex(phase); i >= 0) into.by_phase[static_cast<size_t>(i)] += bytes;
}

// What the replay asks of a stack (its innermost user frame, whether it runs a backward pass or
// the optimizer), found once per stack for every device: a stack of 100k frames shared by 8000
// events was walked for each event, 17 s for a 455 KB snapshot. A name is tested once.
// With stacks="all" a stack also holds C++ frames ("??", "CUDACachingAllocator.cpp"): only a
// frame outside C/C++ files is Python, and one of the user's only if it is. A stack with no Python frame ran
// outside Python: the autograd engine's threads, known by their C++ frames.
class StackFacts {
 public:
  StackFacts(const model::MemorySnapshot& s, const std::function<bool(std::string_view)>& is_user)
      : s_(s), is_user_(is_user), stacks_(s.stacks.size()), files_(s.strings.size()), functions_(s.strings.size()) {}

  // The innermost user frame (a frame id), or kNoLine.
  int32_t userFrame(uint32_t stack) { return of(stack).user_frame; }
  // A frame of `backward()` (torch/_tensor.py, torch/autograd).
  bool runsBackward(uint32_t stack) { return of(stack).backward; }
  bool runsOptimizer(uint32_t stack) { return of(stack).optimizer; }  // a frame in torch/optim/
  bool runsZeroGrad(uint32_t stack) { return of(stack).zero_grad; }   // Optimizer.zero_grad
  // A Python frame in it (stack 0 has none).
  bool hasPython(uint32_t stack) { return stack != 0 && of(stack).python; }
  // The autograd engine's C++ frames (stacks="all"), with no Python frame.
  bool runsEngine(uint32_t stack) { return stack != 0 && of(stack).engine; }

 private:
  struct Facts {
    bool known = false, backward = false, optimizer = false, zero_grad = false, python = false, engine = false;
    int32_t user_frame = kNoLine;
  };
  enum FileFlag : uint8_t { kKnown = 1, kUser = 2, kAutograd = 4, kOptimizer = 8, kPython = 16 };
  uint8_t file(uint32_t id) {
    uint8_t& flags = files_[id];
    if (!flags) {
      const std::string& name = s_.strings[id];
      bool python = !name.empty() && !isNativeFrameFile(name);
      flags = kKnown | (python ? kPython : 0) | (python && is_user_(name) ? kUser : 0) |
              (name.find("torch/_tensor.py") != std::string::npos || name.find("torch/autograd") != std::string::npos
                   ? kAutograd
                   : 0) |
              (name.find("torch/optim/") != std::string::npos ? kOptimizer : 0);
    }
    return flags;
  }
  enum FunctionFlag : uint8_t { kEngine = 2 };
  uint8_t function(uint32_t id) {
    uint8_t& flags = functions_[id];
    if (!flags) flags = kKnown | (s_.strings[id].find("torch::autograd::Engine::") != std::string::npos ? kEngine : 0);
    return flags;
  }
  const Facts& of(uint32_t stack) {
    Facts& facts = stacks_[stack];
    if (facts.known) return facts;
    facts.known = true;
    bool engine = false;
    for (uint32_t f : s_.stacks[stack]) {
      const auto& frame = s_.frames[f];
      uint8_t flags = file(frame.file);
      if (facts.user_frame == kNoLine && (flags & kUser)) facts.user_frame = static_cast<int32_t>(f);
      if ((flags & kAutograd) && s_.strings[frame.function] == "backward") facts.backward = true;
      if (flags & kOptimizer) {
        facts.optimizer = true;
        if (s_.strings[frame.function] == "zero_grad") facts.zero_grad = true;
      }
      if (flags & kPython) facts.python = true;
      if (!(flags & kPython) && (function(frame.function) & kEngine)) engine = true;
    }
    facts.engine = engine && !facts.python;
    return facts;
  }

  const model::MemorySnapshot& s_;
  const std::function<bool(std::string_view)>& is_user_;
  std::vector<Facts> stacks_;       // by stack id
  std::vector<uint8_t> files_;      // FileFlags by string id; 0: not yet tested
  std::vector<uint8_t> functions_;  // FunctionFlags by string id; 0: not yet tested
};

// A device's events and blocks (indices into the snapshot's, in order).
struct DeviceInput {
  std::vector<size_t> events, blocks;
};

class DeviceReplay {
 public:
  DeviceReplay(const model::MemorySnapshot& s, StackFacts& stacks, int32_t device, DeviceInput input)
      : s_(s), stacks_(stacks), device_(device), events_(std::move(input.events)), blocks_(std::move(input.blocks)) {}

  MemoryReplay run() {
    owners();
    bool completed = std::any_of(events_.begin(), events_.end(),
                                 [&](size_t i) { return s_.events[i].action == MemoryAction::FreeCompleted; });
    free_action_ = completed ? MemoryAction::FreeCompleted : MemoryAction::FreeRequested;
    MemoryReplay r;
    r.device = device_;
    phasesAndSteps(r);
    before(r);
    peak(r);
    bands(r);
    reserved(r);
    kept(r);
    perStep(r);
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action != MemoryAction::Oom) continue;
      MemoryOom oom{0, 0, e.size, e.deviceFree(), e.stack, e.time_us};
      if (int32_t owner = userFrame(e.stack); owner != kNoLine) {
        oom.file = s_.frames[static_cast<size_t>(owner)].file;
        oom.line = s_.frames[static_cast<size_t>(owner)].line;
      }
      r.oom = oom;
    }
    return r;
  }

 private:
  int32_t userFrame(uint32_t stack) { return stacks_.userFrame(stack); }
  MemoryPhase computePhase(size_t k) const {
    uint32_t stack = s_.events[events_[k]].stack;
    if (stacks_.runsEngine(stack)) return MemoryPhase::Backward;
    if (!stacks_.hasPython(stack)) return owner_[k] == kNoLine ? MemoryPhase::Unknown : MemoryPhase::Backward;
    if (stacks_.runsBackward(stack)) return MemoryPhase::Backward;
    return stacks_.runsOptimizer(stack) ? MemoryPhase::Optimizer : MemoryPhase::Forward;
  }
  // Each event's pass, and its step: a forward after a backward or optimizer pass begins one.
  void phasesAndSteps(MemoryReplay& r) {
    phase_.reserve(events_.size());
    step_.reserve(events_.size());
    int step = events_.empty() ? 0 : 1;
    MemoryPhase last = MemoryPhase::Unknown;
    for (size_t k = 0; k < events_.size(); ++k) {
      MemoryPhase p = computePhase(k);
      if (p == MemoryPhase::Forward && (last == MemoryPhase::Backward || last == MemoryPhase::Optimizer)) {
        ++step;
        r.step_starts_us.push_back(s_.events[events_[k]].time_us);
      }
      if (p != MemoryPhase::Unknown) last = p;
      phase_.push_back(p);
      step_.push_back(step);
    }
    r.steps = step;
  }
  // Who each event's bytes belong to: its own user frame, or for an event without Python frames
  // the `backward()` line last seen (the engine runs what that call asked for); before any
  // Python frame, the trace's first `backward()` line (a ring buffer can begin mid-backward).
  void owners() {
    owner_.reserve(events_.size());
    backward_line_ = kNoLine;
    for (size_t i : events_)
      if (const auto& e = s_.events[i]; stacks_.hasPython(e.stack) && stacks_.runsBackward(e.stack)) {
        backward_line_ = userFrame(e.stack);
        if (backward_line_ != kNoLine) break;
      }
    int32_t carry = backward_line_;
    for (size_t i : events_) {
      const auto& e = s_.events[i];
      if (stacks_.hasPython(e.stack)) {
        carry = stacks_.runsBackward(e.stack) ? userFrame(e.stack) : kNoLine;
        owner_.push_back(userFrame(e.stack));
      } else {
        owner_.push_back(stacks_.runsEngine(e.stack) && carry == kNoLine ? backward_line_ : carry);
      }
    }
  }
  // Who made a block that the trace only frees: not the line that freed it (a step's gradients
  // were charged to the next step's `zero_grad()`). Gradients freed by `zero_grad` were made by
  // `backward()`; for the rest the trace does not say.
  int32_t ownerOfFreed(uint32_t free_stack) {
    return stacks_.hasPython(free_stack) && stacks_.runsZeroGrad(free_stack) ? backward_line_ : kNoLine;
  }
  // What was allocated before the trace: frees of addresses it never allocated, and blocks
  // alive at the dump that it did not leave alive.
  void before(MemoryReplay& r) {
    std::unordered_map<uint64_t, size_t> live;
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::Alloc) {
        live[e.addr] = k;
      } else if (e.action == free_action_) {
        if (auto it = live.find(e.addr); it != live.end()) {
          live.erase(it);
        } else {
          freed_before_.push_back(k);
          initial_.push_back({e.size, ownerOfFreed(e.stack), k});
        }
      }
    }
    for (size_t i : blocks_) {
      const auto& b = s_.blocks[i];
      if (b.allocated && !live.count(b.addr))
        initial_.push_back({b.size,
                            stacks_.hasPython(b.stack)    ? userFrame(b.stack)
                            : stacks_.runsEngine(b.stack) ? backward_line_
                                                          : kNoLine,
                            SIZE_MAX});
    }
    for (const auto& i : initial_) r.allocated_before_trace += i.size;
  }
  void peak(MemoryReplay& r) {
    // First pass: the peak's position. Second: who is alive there.
    int64_t allocated = r.allocated_before_trace, best = allocated;
    int64_t best_k = -1;
    std::unordered_map<uint64_t, int64_t> live;  // addr -> size
    std::vector<bool> frees_before(events_.size(), false);
    for (size_t k : freed_before_) frees_before[k] = true;
    size_t per = std::max<size_t>(1, (events_.size() + kMemorySamples - 1) / kMemorySamples);
    r.series.assign((events_.size() + per - 1) / per, MemorySample{});
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::Alloc) {
        allocated += e.size;
        live[e.addr] = e.size;
        if (allocated > best) best = allocated, best_k = static_cast<int64_t>(k);
      } else if (e.action == free_action_) {
        if (frees_before[k]) {
          allocated -= e.size;
        } else if (auto it = live.find(e.addr); it != live.end()) {
          allocated -= it->second;
          live.erase(it);
        }
      }
      auto& sample = r.series[k / per];
      if (k % per == 0 || allocated > sample.allocated) sample.time_us = e.time_us, sample.allocated = allocated;
    }
    r.peak_allocated = best;
    r.peak_event = best_k < 0 ? -1 : static_cast<int64_t>(events_[static_cast<size_t>(best_k)]);
    if (best_k >= 0) {
      r.peak_time_us = s_.events[events_[static_cast<size_t>(best_k)]].time_us;
      r.peak_phase = phase_[static_cast<size_t>(best_k)];
      r.peak_step = step_[static_cast<size_t>(best_k)];
    }
    // Alive at the peak: the blocks from before the trace not yet freed, and the trace's own.
    std::map<int32_t, MemoryLine> by_owner;
    for (const auto& i : initial_)
      if (i.freed_at == SIZE_MAX || static_cast<int64_t>(i.freed_at) > best_k)
        addBytes(by_owner[i.owner], i.size, MemoryPhase::Unknown);
    std::unordered_map<uint64_t, size_t> alive;  // addr -> k of its alloc
    for (int64_t k = 0; k <= best_k; ++k) {
      const auto& e = s_.events[events_[static_cast<size_t>(k)]];
      if (e.action == MemoryAction::Alloc)
        alive[e.addr] = static_cast<size_t>(k);
      else if (e.action == free_action_ && !frees_before[static_cast<size_t>(k)])
        alive.erase(e.addr);
    }
    for (const auto& [addr, k] : alive) addBytes(by_owner[owner_[k]], s_.events[events_[k]].size, phase_[k]);
    if (auto none = by_owner.find(kNoLine); none != by_owner.end()) {
      r.unattributed_at_peak = none->second.bytes;
      by_owner.erase(none);
    }
    r.lines = mostFirst(byLine(by_owner), &s_.strings);
  }
  // The band lines' bytes alive over the trace, walked as `peak` walks it: taken into each
  // sample where it took its allocated bytes, and the peak's step sampled again, finer.
  void bands(MemoryReplay& r) {
    for (size_t i = 0; i < r.lines.size() && i < kMemoryBands; ++i)
      r.band_lines.emplace_back(r.lines[i].file, r.lines[i].line);
    if (r.band_lines.empty() || events_.empty()) return;
    auto bandOf = [&](int32_t owner) -> int {
      if (owner == kNoLine) return -1;
      const auto& f = s_.frames[static_cast<size_t>(owner)];
      for (size_t b = 0; b < r.band_lines.size(); ++b)
        if (r.band_lines[b] == std::pair<uint32_t, int32_t>{f.file, f.line}) return static_cast<int>(b);
      return -1;
    };
    std::vector<int> band_of_owner;  // by frame id + 1 (0: kNoLine); -2: not yet looked up
    auto band = [&](int32_t owner) {
      size_t at = static_cast<size_t>(owner) + 1;  // kNoLine (-1): 0
      if (band_of_owner.size() <= at) band_of_owner.resize(at + 1, -2);
      if (band_of_owner[at] == -2) band_of_owner[at] = bandOf(owner);
      return band_of_owner[at];
    };
    std::vector<int64_t> bytes(r.band_lines.size(), 0);
    auto add = [&](int b, int64_t n) {
      if (b >= 0) bytes[static_cast<size_t>(b)] += n;
    };
    int64_t allocated = r.allocated_before_trace;
    std::unordered_map<size_t, const Initial*> initial_freed;  // k of its free -> the block
    for (const auto& i : initial_) {
      add(band(i.owner), i.size);
      if (i.freed_at != SIZE_MAX) initial_freed[i.freed_at] = &i;
    }
    // The peak's step: its events' range, sampled apart where the series holds runs of events.
    size_t per = std::max<size_t>(1, (events_.size() + kMemorySamples - 1) / kMemorySamples);
    size_t& first = step_first_;
    size_t& last = step_last_;
    if (r.peak_event >= 0 && r.peak_step > 0 && per > 1) {
      auto [a, b] = std::equal_range(step_.begin(), step_.end(), r.peak_step);
      first = static_cast<size_t>(a - step_.begin()), last = static_cast<size_t>(b - step_.begin());
    }
    bool fine = last > first;
    step_per_ = fine ? std::max<size_t>(1, (last - first + kMemorySamples - 1) / kMemorySamples) : 1;
    size_t step_per = step_per_;
    if (fine) r.step_series.assign((last - first + step_per - 1) / step_per, MemorySample{});
    int64_t run_max = 0;
    std::unordered_map<uint64_t, std::pair<int64_t, int>> live;  // addr -> size, band
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::Alloc) {
        allocated += e.size;
        int b = band(owner_[k]);
        live[e.addr] = {e.size, b};
        add(b, e.size);
      } else if (e.action == free_action_) {
        if (auto it = initial_freed.find(k); it != initial_freed.end()) {
          allocated -= e.size;
          add(band(it->second->owner), -it->second->size);
        } else if (auto at = live.find(e.addr); at != live.end()) {
          allocated -= at->second.first;
          add(at->second.second, -at->second.first);
          live.erase(at);
        }
      }
      if (k % per == 0 || allocated > run_max) run_max = allocated, r.series[k / per].bands = bytes;  // as `peak`
      if (fine && k >= first && k < last) {
        auto& s = r.step_series[(k - first) / step_per];
        if ((k - first) % step_per == 0 || allocated > s.allocated)
          s.time_us = e.time_us, s.allocated = allocated, s.bands = bytes;
      }
    }
  }
  // Reserved bytes: the segments at the dump, less what the trace allocated, plus what it freed,
  // is what the trace began with; its peak walking forward.
  void reserved(MemoryReplay& r) {
    int64_t delta = 0;
    for (size_t i : events_) {
      const auto& e = s_.events[i];
      if (e.action == MemoryAction::SegmentAlloc || e.action == MemoryAction::SegmentMap) delta += e.size;
      if (e.action == MemoryAction::SegmentFree || e.action == MemoryAction::SegmentUnmap) delta -= e.size;
    }
    int64_t at_dump = static_cast<size_t>(device_) < s_.reserved_at_dump.size() ? s_.reserved_at_dump[device_] : 0;
    int64_t reserved = at_dump - delta, best = reserved;
    size_t per = r.series.empty() ? 1 : (events_.size() + r.series.size() - 1) / r.series.size();
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::SegmentAlloc || e.action == MemoryAction::SegmentMap) reserved += e.size;
      if (e.action == MemoryAction::SegmentFree || e.action == MemoryAction::SegmentUnmap) reserved -= e.size;
      best = std::max(best, reserved);
      if (k / per < r.series.size()) r.series[k / per].reserved = std::max(r.series[k / per].reserved, reserved);
      if (k >= step_first_ && k < step_last_) {
        auto& s = r.step_series[(k - step_first_) / step_per_];
        s.reserved = std::max(s.reserved, reserved);
      }
    }
    r.peak_reserved = best;
  }

  // Lines whose allocations alive at the trace's end were made in three or more steps (as
  // phasesAndSteps tells them): not the model's weights made once at the
  // start, nor the optimizer's state made at the first step, nor one forward's activations.
  void kept(MemoryReplay& r) {
    std::unordered_map<uint64_t, size_t> live;  // addr -> k of its alloc
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::Alloc)
        live[e.addr] = k;
      else if (e.action == free_action_)
        live.erase(e.addr);
    }
    struct Span {
      int count = 0;
      int64_t bytes = 0;
      std::set<int> steps;
    };
    std::map<int32_t, Span> by_owner;
    for (const auto& [addr, k] : live) {
      if (owner_[k] == kNoLine) continue;
      auto& s = by_owner[owner_[k]];
      ++s.count;
      s.bytes += s_.events[events_[k]].size;
      s.steps.insert(step_[k]);
    }
    for (const auto& [owner, s] : by_owner) {
      if (s.count < 3 || s.steps.size() < 3) continue;
      const auto& f = s_.frames[static_cast<size_t>(owner)];
      r.kept.push_back({f.file, f.line, s.count, s.bytes, static_cast<int>(s.steps.size())});
    }
    std::stable_sort(r.kept.begin(), r.kept.end(),
                     [](const MemoryKept& a, const MemoryKept& b) { return a.bytes > b.bytes; });
  }

  // Each line's allocations in the steady steps, per step.
  void perStep(MemoryReplay& r) {
    int first = r.steps >= 3 ? 2 : 1, last = r.steps >= 3 ? r.steps - 1 : r.steps;
    r.steady_steps = std::max(0, last - first + 1);
    if (r.steady_steps == 0) return;
    std::map<int32_t, MemoryLine> by_owner;
    for (size_t k = 0; k < events_.size(); ++k) {
      const auto& e = s_.events[events_[k]];
      if (e.action == MemoryAction::Alloc && owner_[k] != kNoLine && step_[k] >= first && step_[k] <= last)
        addBytes(by_owner[owner_[k]], e.size, phase_[k]);
    }
    auto lines = byLine(by_owner);
    for (auto& [key, l] : lines) {
      l.bytes /= r.steady_steps;
      l.allocations /= r.steady_steps;
      for (auto& b : l.by_phase) b /= r.steady_steps;
    }
    r.per_step = mostFirst(lines, &s_.strings);
  }
  // Owners (frame ids) merged by their file and line (frames differ by function too).
  std::map<std::pair<uint32_t, int32_t>, MemoryLine> byLine(const std::map<int32_t, MemoryLine>& by_owner) const {
    std::map<std::pair<uint32_t, int32_t>, MemoryLine> lines;
    for (const auto& [owner, held] : by_owner) {
      const auto& f = s_.frames[static_cast<size_t>(owner)];
      auto& into = lines[{f.file, f.line}];
      into.bytes += held.bytes;
      into.allocations += held.allocations;
      for (size_t i = 0; i < into.by_phase.size(); ++i) into.by_phase[i] += held.by_phase[i];
    }
    return lines;
  }

  struct Initial {
    int64_t size;
    int32_t owner;
    size_t freed_at;
  };
  const model::MemorySnapshot& s_;
  StackFacts& stacks_;
  int32_t device_;
  std::vector<size_t> events_;      // this device's, in order
  std::vector<size_t> blocks_;      // this device's, in order
  std::vector<int32_t> owner_;      // by position in events_: a frame id or kNoLine
  std::vector<MemoryPhase> phase_;  // by position in events_
  std::vector<int> step_;           // by position in events_: 1-based
  MemoryAction free_action_ = MemoryAction::FreeCompleted;
  std::vector<size_t> freed_before_;
  std::vector<Initial> initial_;
  int32_t backward_line_ = kNoLine;                       // the trace's first `backward()` call's user frame
  size_t step_first_ = 0, step_last_ = 0, step_per_ = 1;  // the peak's step's events, per step sample
};

// One process's device: its events in time order.
MemoryReplay replayUses(const model::Profile& profile, const std::vector<LineRef>& lines,
                        const std::vector<int32_t>& ops, const std::vector<size_t>& events) {
  MemoryReplay r;
  const auto& uses = profile.memory_uses;
  r.device = uses[events.front()].device;
  const auto& first = uses[events.front()];
  r.allocated_before_trace = first.total_allocated >= 0 ? std::max<int64_t>(0, first.total_allocated - first.bytes) : 0;
  // The peak: the largest total recorded (or, without totals, the running sum).
  int64_t running = r.allocated_before_trace, best = running;
  size_t best_k = SIZE_MAX;
  size_t per = std::max<size_t>(1, (events.size() + kMemorySamples - 1) / kMemorySamples);
  r.series.assign((events.size() + per - 1) / per, MemorySample{});
  for (size_t k = 0; k < events.size(); ++k) {
    const auto& u = uses[events[k]];
    running = u.total_allocated >= 0 ? u.total_allocated : running + u.bytes;
    if (running > best) best = running, best_k = k;
    r.peak_reserved = std::max(r.peak_reserved, u.total_reserved);
    auto& sample = r.series[k / per];
    if (k % per == 0 || running > sample.allocated) sample.time_us = u.time_ns / 1000, sample.allocated = running;
    sample.reserved = std::max(sample.reserved, u.total_reserved);
  }
  r.peak_allocated = best;
  if (best_k == SIZE_MAX) {
    r.unattributed_at_peak = best;
    return r;
  }
  r.peak_event = static_cast<int64_t>(events[best_k]);
  r.peak_time_us = uses[events[best_k]].time_ns / 1000;
  std::unordered_map<uint64_t, size_t> alive;  // addr -> its alloc's index into memory_uses
  for (size_t k = 0; k <= best_k; ++k) {
    const auto& u = uses[events[k]];
    if (u.bytes > 0)
      alive[u.addr] = events[k];
    else if (u.bytes < 0)
      alive.erase(u.addr);
  }
  std::map<std::pair<model::StringId, int32_t>, MemoryLine> by_line;
  std::map<std::pair<model::StringId, int32_t>, std::map<int32_t, int64_t>> by_op;  // operator range -> bytes
  int64_t placed = 0;
  for (const auto& [addr, i] : alive) {
    const LineRef& at = i < lines.size() ? lines[i] : LineRef{};
    if (at.file == 0) continue;
    addBytes(by_line[{at.file, at.line}], uses[i].bytes, MemoryPhase::Unknown);
    placed += uses[i].bytes;
    if (i < ops.size() && ops[i] >= 0) by_op[{at.file, at.line}][ops[i]] += uses[i].bytes;
  }
  // Operators by name (one op runs as many ranges), most first.
  for (const auto& [key, ranges] : by_op) {
    std::map<std::string, int64_t> named;
    for (const auto& [range, bytes] : ranges)
      named[operatorName(profile, profile.ranges[static_cast<size_t>(range)])] += bytes;
    auto& list = by_line[key].ops;
    list.assign(named.begin(), named.end());
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  r.unattributed_at_peak = std::max<int64_t>(0, best - placed);
  r.lines = mostFirst(by_line);
  // The band lines' bytes alive, sampled where the series took its allocated bytes.
  for (size_t i = 0; i < r.lines.size() && i < kMemoryBands; ++i)
    r.band_lines.emplace_back(r.lines[i].file, r.lines[i].line);
  std::vector<int64_t> band_bytes(r.band_lines.size(), 0);
  std::unordered_map<uint64_t, std::pair<int64_t, int>> live;  // addr -> bytes, band
  int64_t run_max = 0;
  running = r.allocated_before_trace;
  for (size_t k = 0; k < events.size() && !r.band_lines.empty(); ++k) {
    const auto& u = uses[events[k]];
    running = u.total_allocated >= 0 ? u.total_allocated : running + u.bytes;
    if (u.bytes > 0) {
      const LineRef& at = events[k] < lines.size() ? lines[events[k]] : LineRef{};
      auto b = std::find(r.band_lines.begin(), r.band_lines.end(), std::pair<uint32_t, int32_t>{at.file, at.line});
      int band = at.file != 0 && b != r.band_lines.end() ? static_cast<int>(b - r.band_lines.begin()) : -1;
      live[u.addr] = {u.bytes, band};
      if (band >= 0) band_bytes[static_cast<size_t>(band)] += u.bytes;
    } else if (u.bytes < 0) {
      if (auto it = live.find(u.addr); it != live.end()) {
        if (it->second.second >= 0) band_bytes[static_cast<size_t>(it->second.second)] -= it->second.first;
        live.erase(it);
      }
    }
    if (k % per == 0 || running > run_max) run_max = running, r.series[k / per].bands = band_bytes;  // as above
  }
  return r;
}

// The pool's growth (segment events): reserved bytes over time from what the capture saw, and
// each line's cudaMalloc bytes.
void replayPool(const model::Profile& profile, const std::vector<LineRef>& lines, const std::vector<size_t>& events,
                MemoryReplay& r) {
  int64_t reserved = 0, best = 0;
  std::map<std::pair<model::StringId, int32_t>, MemoryLine> by_line;
  for (size_t i : events) {
    const auto& u = profile.memory_uses[i];
    reserved += u.bytes;
    best = std::max(best, reserved);
    if (u.bytes <= 0) continue;
    r.pool_growth += u.bytes;
    const LineRef& at = i < lines.size() ? lines[i] : LineRef{};
    if (at.file != 0) addBytes(by_line[{at.file, at.line}], u.bytes, MemoryPhase::Unknown);
  }
  r.peak_reserved = std::max(r.peak_reserved, best);
  r.growth_lines = mostFirst(by_line);
}

}  // namespace

std::vector<MemoryReplay> replayMemoryUses(const model::Profile& profile, const std::vector<LineRef>& lines,
                                           const std::vector<int32_t>& ops) {
  // By process and device: tensor events and the pool's own, apart.
  std::map<std::pair<uint32_t, int32_t>, std::array<std::vector<size_t>, 2>> by_device;
  for (size_t i = 0; i < profile.memory_uses.size(); ++i) {
    const auto& u = profile.memory_uses[i];
    by_device[{u.pid, u.device}][u.segment ? 1 : 0].push_back(i);
  }
  std::vector<MemoryReplay> out;
  for (const auto& [key, events] : by_device) {
    MemoryReplay r;
    if (!events[0].empty()) {
      r = replayUses(profile, lines, ops, events[0]);
    } else {
      r.device = key.second;
      r.allocated_known = false;
    }
    if (!events[1].empty()) replayPool(profile, lines, events[1], r);
    r.pid = key.first;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MemoryReplay> replayMemory(const model::MemorySnapshot& snapshot,
                                       const std::function<bool(std::string_view path)>& is_user_file) {
  // Those with a trace or blocks, their events and blocks gathered in one pass: a replay per
  // device that scanned every event and block made 200k device numbers take 24 s.
  std::map<int32_t, DeviceInput> devices;
  for (size_t i = 0; i < snapshot.events.size(); ++i) devices[snapshot.events[i].device].events.push_back(i);
  for (size_t i = 0; i < snapshot.blocks.size(); ++i) devices[snapshot.blocks[i].device].blocks.push_back(i);
  std::vector<MemoryReplay> out;
  out.reserve(devices.size());
  StackFacts stacks(snapshot, is_user_file);
  for (auto& [device, input] : devices) out.push_back(DeviceReplay(snapshot, stacks, device, std::move(input)).run());
  return out;
}

}  // namespace sightline::attribution
