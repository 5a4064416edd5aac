// Rank summaries and the job view as JSON (docs/report-json.md, "Jobs of many ranks"): what
// `report --format summary` writes where a report was made, what `report --merge` reads back
// (trusting nothing: every count, index and size is checked), and the job's JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/features/job_view.h"
#include "analysis/join/rank_summary.h"

namespace sightline::server {

inline constexpr int kSummaryVersion = 1;

nlohmann::json rankSummaryJson(const join::RankSummary& s);
// A document of summaries: {"sightline_rank_summary": 1, "summaries": [...]} (the marker first:
// keys are written sorted).
nlohmann::json rankSummariesJson(const std::vector<join::RankSummary>& ranks);
// The summaries a document holds (a summary document, or a `report --format json` output with
// `rank_summaries`); nullopt with `error` set when it holds none or a malformed one. Every value
// is bounded as it is read (each kind of time within 10^14 ns over a summary, timestamps within
// ±4·10^18), so that no sum over a job of up to kMaxJobRanks summaries passes int64.
std::optional<std::vector<join::RankSummary>> rankSummariesFromJson(const nlohmann::json& doc, std::string& error);
// The job's summaries, `more` added: false (with `error`) past kMaxJobRanks. The one way a job is
// put together from documents, for --merge of summaries and of JSON reports alike.
inline constexpr size_t kMaxJobRanks = 65'536;
bool addSummaries(std::vector<join::RankSummary>& job, std::vector<join::RankSummary> more, std::string& error);

nlohmann::json jobJson(const features::JobView& job, const std::vector<join::RankSummary>& ranks);

// What the step view draws of a job (editors/vscode/src/stepview/job.ts): rank labels, the
// straggler, each rank's step walls with the steps binned into at most kMaxJobColumns columns
// and kMaxJobCells cells (the slowest step of each bin), the lines' spread. Bounded: a thousand
// ranks of a thousand steps stay under 2 MB.
inline constexpr size_t kMaxJobColumns = 200;
inline constexpr size_t kMaxJobCells = 150'000;
nlohmann::json jobPageJson(const features::JobView& job);

}  // namespace sightline::server
