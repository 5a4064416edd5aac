// The report's story as rows (story.h), built once per load from what the join and the features
// computed: the profile and its GPUs, the ranks and the job, the steps, the verdict
// (story_verdict.h), how lines were attributed, a comparison, GPU memory and the warnings. The
// report's text header, the HTML page, the editor's panel and the summary render these rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/features/job_view.h"
#include "analysis/features/story.h"
#include "analysis/join/memory_story.h"

namespace sightline::features {

// A line's GPU memory in a compared profile and in this one.
struct LineMemoryChange {
  std::string path;  // the local file
  int32_t line = 0;
  int64_t peak_change = 0;  // bytes held at the peak: now less before
  int64_t step_change = 0;  // bytes allocated per steady step: now less before
};

// `report --compare`: what the two profiles' totals and memory say side by side.
struct CompareFacts {
  std::string path;   // the compared profile, as named
  bool time = false;  // both tell GPU time
  bool per_step = false;
  double before_ns = 0, now_ns = 0;                          // per step where per_step, else totals
  std::vector<std::pair<std::string, std::string>> aligned;  // a local file, how its lines were matched
  // GPU memory, where both profiles tell it (memory false: not compared).
  bool memory = false;
  int64_t peak_before_bytes = 0, peak_now_bytes = 0;
  bool memory_steps = false;            // both know steady steps (per-step allocations compared)
  std::vector<LineMemoryChange> lines;  // the largest change at the peak first
};

// Where a job's ranks come from, for what a rank whose lines are unknown is told to do: summaries
// made apart (make them naming the script), reports loaded together without a script (name it
// after them), or with the scripts named or in the editor (the profile's Python stacks reach
// none of their lines).
enum class JobSource { Summaries, Reports, ReportsWithScripts };

struct ReportFacts {
  std::string profile_path;  // as shown (the paths, joined)
  JobSource job_source = JobSource::ReportsWithScripts;
  const model::Profile* profile = nullptr;
  const attribution::Attribution* attr = nullptr;
  const StepVerdict* verdict = nullptr;  // null: no steps known
  const JobView* job = nullptr;          // null: one rank
  const std::vector<join::RankSummary>* summaries = nullptr;
  const join::MemoryStory* memory = nullptr;  // null: the profile tells no memory
  std::vector<std::string> warnings;          // every warning about the profile, in order
  std::string no_memory_lines_advice;         // how to capture a snapshot whose memory has lines
  std::optional<CompareFacts> compare;
};

// The whole header, as `report` prints it.
Story reportStory(const ReportFacts& facts);
// The GPUs, and for several processes with GPU work the rank table.
Story machineStory(const std::vector<std::string>& gpus, const attribution::Attribution& attr);
// The job of many ranks: lined-up steps, collectives paired, the straggler, each line's spread,
// communication per module and its advice (what `report --merge` prints). With the steps
// sightline capture timed without the profiler (`measured`), a straggler is said to be as captured.
Story jobStory(const JobView& job, const std::vector<join::RankSummary>& ranks,
               const model::StepMeasurement* measured = nullptr, JobSource source = JobSource::Summaries);
// GPU memory: the pool's growth, the peak, what holds it, an out-of-memory error and its chain.
Story memoryStory(const join::MemoryStory& m);
// When the memory peak came: "in step 3 of the 4 recorded (backward pass)", "in the optimizer
// step", "" when not known.
std::string memoryPeakWhen(const join::MemoryStory& m);

}  // namespace sightline::features
