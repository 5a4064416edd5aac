// The step as pictures: every step of every rank as a stacked bar (compute, communication,
// copies, GPU idle by cause), one representative steady step as a timeline (the Python
// thread's lines, each stream's work coloured by its line, idle gaps with their cause), and
// the costliest lines. Every mark names the user line it stands for (an index into `lines`).
// Numbers only, in ns and bytes: drawing and text are the edge's (server/render/step_view_json.h and
// the renderer in editors/vscode/src/stepview).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/features/kernel_kinds.h"
#include "analysis/features/step_verdict.h"
#include "analysis/join/profile_join.h"

namespace sightline::features {

// A user line the view refers to. Per step where the profile knows its steps, else totals.
struct ViewLine {
  std::string path;  // the local file where the profile path maps onto one, else the profile's path
  int32_t line = 0;  // 1-based
  double self_ns = 0, forward_ns = 0, backward_ns = 0;                           // launched from the line itself
  double inclusive_ns = 0, inclusive_forward_ns = 0, inclusive_backward_ns = 0;  // beneath it too
  double idle_ns = 0;                                                            // GPU idle charged to it
  int64_t memory_peak_bytes = 0;          // alive at the memory peak, allocated here (0: no memory data)
  double share = 0, inclusive_share = 0;  // of the steady steps' GPU time (line_figures.h: the same as every surface's)
  bool inclusive_shown = false;           // showsInclusive: the inclusive time is told (the margin's rule)
  int64_t oneoff_ns = 0;        // one-off GPU time beneath it (outside the steady steps; a total, never per step)
  bool oneoff_marked = false;   // marksOneoff: the page marks it, as the report's margin does
  std::vector<WorkKind> kinds;  // its own work by kind (two kinds or more; totals, not per step)
};

struct StepBar {
  int index = 0;  // 1-based, in its rank
  attribution::StepKind kind = attribution::StepKind::Steady;
  int64_t start_ns = 0;  // the window's start, from the rank's first step's
  int64_t wall_ns = 0;   // the window (Step::window_*); the parts below add up to it
  int64_t compute_ns = 0, copy_ns = 0, comm_ns = 0, comm_wait_ns = 0;  // comm_wait_ns: of comm_ns
  std::array<int64_t, attribution::kWaitCount> idle_ns{};              // by attribution::Wait
  int32_t top_line = -1;                                               // the line that launched most of its GPU time
  int64_t capture_ns = 0;  // host time the profiler itself cost the step (attribution::Step::capture_ns)
};

struct RankBars {
  std::string label;  // "rank 1", "GPU 0", "pid 4242"
  uint32_t pid = 0;
  bool straggler = false;  // the rank the others wait for in collectives
  int64_t median_wall_ns = 0;
  std::vector<StepBar> steps;
};

struct TimelineSpan {
  int64_t start_ns = 0, end_ns = 0;  // from Timeline::origin_ns
  int32_t line = -1;                 // into StepView::lines; -1: none
  std::string name;                  // a kernel's or API call's name (someone else's text)
};

enum class LaneKind : uint8_t { Host, Stream };
struct TimelineLane {
  LaneKind kind = LaneKind::Stream;
  std::string name;  // "Python thread 4242", "GPU 0 · stream 7"
  std::vector<TimelineSpan> spans;
  uint32_t merged = 0;  // spans merged into neighbours to keep the lane drawable
};

struct TimelineGap {
  int64_t start_ns = 0, end_ns = 0;  // from Timeline::origin_ns
  attribution::Wait wait = attribution::Wait::Launch;
  int32_t line = -1;
};

struct Timeline {
  std::string rank;                 // RankBars::label of the rank shown
  int step = 0;                     // its 1-based index in that rank
  int64_t origin_ns = 0;            // on the profile's clock: the earlier of the host's and GPU's step start
  int64_t wall_ns = 0;              // the GPU window (where the bar's figures come from)
  int64_t gpu_start_ns = 0;         // that window's start, from origin_ns
  int64_t end_ns = 0;               // the last drawn time, from origin_ns
  std::vector<TimelineLane> lanes;  // the host lane first, then streams by (device, stream)
  std::vector<TimelineGap> gaps;
};

// GPU memory over the recorded trace (a memory snapshot, or a trace with profile_memory=True).
struct MemoryView {
  int64_t peak_allocated_bytes = 0, peak_reserved_bytes = 0;
  int64_t peak_time_ns = 0;  // from the first sample
  struct Sample {
    int64_t time_ns = 0;  // from the first sample
    int64_t allocated = 0, reserved = 0;
    std::vector<int64_t> bands;  // bytes alive of each of `bands` (the rest: allocated less their sum)
  };
  std::vector<Sample> series;                    // up to attribution::kMemorySamples
  std::vector<int32_t> bands;                    // line indices: the lines drawn as bands, most at the peak first
  std::vector<Sample> step_series;               // the peak's step, finer (empty: the series has every event)
  std::vector<int64_t> step_starts_ns;           // from the first sample
  std::vector<std::pair<int32_t, int64_t>> top;  // (line index, bytes alive at the peak), most first
  // The allocation that ran out of memory: when (from the first sample; the series' end where the
  // snapshot did not record it), what it asked and what was free, its line and call chain (line
  // indices, outermost first; -1 where a frame has no line of the table).
  struct Oom {
    int64_t time_ns = 0;
    int64_t requested_bytes = 0, free_bytes = 0;
    int32_t line = -1;
    std::vector<int32_t> chain;
  };
  std::optional<Oom> oom;
};

struct StepView {
  bool has_steps = false;
  std::string steps_source;
  int steady_steps = 0;  // the divisor of every ViewLine figure (0: totals)
  std::vector<ViewLine> lines;
  std::vector<RankBars> ranks;
  // The steady step without the profiler where the verdict gives a figure (step_verdict.h:
  // measured, logged, or sure within 30%) and what the capture added to it; 0 both where not.
  int64_t unprofiled_wall_ns = 0;
  int64_t capture_overhead_ns = 0;
  // The headline every surface gives (step_headline.h); empty `step` where no steps are known.
  struct Headline {
    double captured_ns = 0;              // the step as captured (median)
    std::optional<StepVerdict> verdict;  // its numbers
    std::string unprofiled;              // unprofiledText
    std::string summary;                 // unprofiledSummary
    std::string measure;                 // measureAdvice ("" where measured)
  } headline;
  // Each rank's representative steady step (the first ranks, and the straggler), rank order.
  std::vector<Timeline> timelines;
  std::vector<int32_t> top_lines;  // into lines: costliest first by inclusive time
  bool has_memory = false;
  MemoryView memory;
  // Per cause of GPU idle (attribution::Wait), its costliest lines over the steady steps.
  std::array<std::vector<int32_t>, attribution::kWaitCount> cause_lines;
};

struct StepViewOptions {
  size_t max_top_lines = 20;
  size_t max_spans = 20000;  // over all lanes of all timelines; neighbours of one line are merged beyond it
  size_t max_timelines = 8;
  size_t max_cause_lines = 5;
  size_t max_memory_lines = 8;
  // Local paths (as ProfileJoin::placeOf gives them) whose every line with a cost joins `lines`
  // (a report's annotated listing refers to them).
  std::vector<std::string> listed_paths;
  // The load's step verdict (null: none): the headline as every other surface tells it.
  const StepVerdict* verdict = nullptr;
};

StepView computeStepView(const join::ProfileJoin& join, const StepViewOptions& options = {});

}  // namespace sightline::features
