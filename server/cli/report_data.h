// The report verb's parts (internal to server/cli): what it prints, shared by the command
// (report_command.cpp), its JSON (report_json.cpp), its text (report_text.cpp) and --merge
// (report_merge.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/attribution/path_mapping.h"
#include "analysis/features/job_view.h"
#include "analysis/features/step_verdict.h"
#include "analysis/features/story.h"
#include "analysis/join/profile_join.h"
#include "server/cli/joined_files.h"
#include "server/render/step_view_json.h"
#include "server/workspace/profiles.h"

namespace sightline::server::report {

struct MappedFile {
  model::StringId profile_file;
  std::optional<std::string> local_path;
};

struct ReportArgs {
  std::vector<std::string> profile_paths;  // one, or one report per rank of a run
  std::string profile_path;                // as shown: the paths, joined
  std::string compare_path, format = "text";
  std::vector<std::string> merge_paths;    // --merge: JSON reports to add up
  std::vector<std::string> compiled_code;  // --compiled-code: Inductor cache / TORCH_TRACE folders
  std::string step_log;                    // --step-log: a log of the script run without the profiler
  std::string output;                      // -o/--output: write here instead of standard output
  std::string timing_path;                 // --timing: a light capture of the same script
  size_t jobs = 0;                         // -j: reports read at once (0: one per core)
  bool total = false, all_steps = false;
  bool all_lines = false;  // --all-lines: every line of a long file, not only those with costs
  std::vector<std::string> files;
  attribution::PathMapper mapper;
};

// What the report prints: the joined profile(s), and per named file what was measured there.
struct ReportData {
  const ReportArgs& args;
  const join::ProfileJoin& main;
  const join::ProfileJoin* compare;
  const std::vector<cli::NamedFile>& sources;
  std::vector<MappedFile> mapped;  // every profile file, with the local file it maps onto
  // The compare profile's costs per local file (absolute path -> 1-based line -> ns).
  std::map<std::string, std::map<int32_t, int64_t>> compare_lines;
  // Per local file whose lines the compare profile measured in another version of the script:
  // how its lines were matched.
  std::map<std::string, std::string> compare_aligned;
  std::map<std::string, join::FileCosts> measured;  // absolute path -> the file's costs
  // The compare profile's GPU memory per local file (absolute path -> 1-based line -> bytes
  // held at its peak, and allocated per steady step), where both profiles tell memory.
  std::map<std::string, std::map<int32_t, std::pair<int64_t, int64_t>>> compare_memory;
  // Each rank's summary (one per process with GPU work of each report) and the job they make.
  std::vector<join::RankSummary> summaries;
  std::optional<features::JobView> job;
  // The step verdict, computed once from the main profile's story: text, JSON and the page read it.
  std::optional<features::StepVerdict> verdict;
};

// More reports than this make the job view only: each is read, summarized and dropped, never
// held together.
inline constexpr size_t kMaxJoinedReports = 8;

// A line's GPU memory in the compare profile and in this one (--compare of two memory snapshots,
// or two traces with profile_memory=True).
struct MemoryChange {
  std::string path;  // the local file
  int32_t line = 0;
  int64_t peak_before = 0, peak_after = 0;  // bytes it held at each profile's peak
  int64_t step_before = 0, step_after = 0;  // bytes it allocated per steady step
  int64_t peakChange() const { return peak_after - peak_before; }
  int64_t stepChange() const { return step_after - step_before; }
};
// Whether both profiles tell the memory their lines hold (then memoryChanges is meaningful).
bool comparesMemory(const ReportData& d);
// Whether there are GPU times to compare: a compare profile, and both profiles have GPU work (a
// memory snapshot has none: a profile with times is compared with one on memory alone).
inline bool comparesTimes(const ReportData& d) {
  return d.compare && !d.main.profile().activities.empty() && !d.compare->profile().activities.empty();
}
// Every named file's lines with memory in either profile, the largest change at the peak first.
std::vector<MemoryChange> memoryChanges(const ReportData& d);

// The step verdict, with what the named files' DataLoader already asks for (the first file that
// makes one), so its advice names only what is missing.
inline const std::optional<features::StepVerdict>& reportVerdict(const ReportData& d) { return d.verdict; }
std::string absolutePath(const std::string& path);
// What the step view says of the profile: its file name, format and GPUs.
StepViewSource stepViewSource(const join::ProfileJoin& join, const std::string& path);

// `--format json` (docs/report-json.md).
nlohmann::json reportJson(const ReportData& d);
// The header's story (profile, machine, job, steps, verdict, memory, warnings), built once for
// the text, the page and the summary.
features::Story headerStory(const ReportData& d);
// The text: the header (profile, steps, verdict, ranks), then each named file annotated.
void writeHeader(const ReportData& d, std::ostream& out);
void writeAnnotatedFile(const ReportData& d, const cli::NamedFile& local, std::ostream& out);
// `--format html`: the step view as one self-contained page (server/render/step_view_html.h); 2 when
// this binary has no renderer.
int writeHtmlReport(const ReportData& d, std::ostream& out, std::ostream& err);
// Fills `mapped`, `measured` and the compare profile's lines of `data` from its named files.
void joinNamedFiles(ReportData& data);

// The report of a profile the server loaded (server/workspace/profiles.h), for the MCP server:
// the same ReportData `report` builds, from the load's join, verdict, summaries and job (computed
// once per load), with `sources` as the named files. The JSON is built once, on first use.
class LoadedReport {
 public:
  LoadedReport(const LoadedProfile& loaded, const LoadedProfile* compare, std::vector<cli::NamedFile> sources);
  LoadedReport(const LoadedReport&) = delete;
  LoadedReport& operator=(const LoadedReport&) = delete;
  const nlohmann::json& json();
  const ReportData& data() const { return data_; }
  const std::vector<cli::NamedFile>& sources() const { return sources_; }

 private:
  ReportArgs args_;
  std::vector<cli::NamedFile> sources_;
  ReportData data_;
  std::optional<nlohmann::json> json_;
};

// --merge: the JSON reports of single ranks added up into one multi-rank report, with the job
// their rank summaries make.
int mergeReports(const std::vector<std::string>& paths, std::ostream& out, std::ostream& err);

// The job (report_job.cpp). Each report of args.profile_paths read alone, joined, summarized
// and dropped, args.jobs at a time; nullopt (said on err) when one cannot be read.
std::optional<std::vector<join::RankSummary>> summarizeReports(const ReportArgs& args,
                                                               const std::vector<cli::NamedFile>& sources,
                                                               const cli::JoinRequest& request, std::ostream& err);
// --merge's inputs with each folder replaced by its `*.json` files (name order, job.json left
// out); ok false (said on err) for a folder that cannot be listed or holds none.
std::vector<std::string> mergeInputs(const std::vector<std::string>& paths, std::ostream& err, bool& ok);
// The summaries of one file: `--format summary`, or `--format json` with `rank_summaries`.
std::optional<std::vector<join::RankSummary>> readSummaries(const std::string& path, std::string& error);
// Whether --merge's inputs are all `--format json` reports (objects with `files`: merged into one
// report with the job, as JSON); else they are read as rank summaries (either kind).
bool allJsonReports(const std::vector<std::string>& inputs);
// --merge of summaries: the job, as text or JSON.
int mergeSummaries(const ReportArgs& args, std::ostream& out, std::ostream& err);
// The job's page: the step view with the job alone (more reports than are joined, or --merge).
int writeJobHtml(const ReportArgs& args, const features::JobView& job, const std::vector<join::RankSummary>& ranks,
                 std::ostream& out, std::ostream& err);
void writeJobText(const features::JobView& job, const std::vector<join::RankSummary>& ranks, std::ostream& out);

}  // namespace sightline::server::report
