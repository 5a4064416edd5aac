// The job of many ranks in `report`: summaries made one report at a time (-j N in parallel),
// `--format summary`, `--merge` of summaries, and the job's text.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/features/profile_view.h"
#include "analysis/features/story_report.h"
#include "protocol/json_in.h"
#include "server/cli/report_data.h"
#include "server/render/job_json.h"
#include "server/render/story_render.h"
#include "server/workspace/baseline.h"
#include "server/workspace/local_files.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

std::optional<std::vector<join::RankSummary>> summarizeReports(const ReportArgs& args,
                                                               const std::vector<cli::NamedFile>& sources,
                                                               const cli::JoinRequest& request, std::ostream& err) {
  const auto& paths = args.profile_paths;
  std::vector<std::vector<join::RankSummary>> each(paths.size());
  std::vector<std::string> errors(paths.size());
  std::atomic<size_t> next{0};
  // One report at a time per worker: read, joined, summarized, dropped. Memory holds at most
  // `jobs` reports, whatever their number.
  auto work = [&] {
    for (size_t i = next++; i < paths.size(); i = next++) {
      std::string error;
      auto joined = cli::loadJoinedProfile({paths[i]}, args.mapper, sources, request, error);
      if (!joined) {
        errors[i] = error;
        continue;
      }
      each[i] = join::summarizeRanks(*joined, fs::path(paths[i]).filename().string());
    }
  };
  size_t workers = std::clamp<size_t>(args.jobs, 1, std::max<size_t>(1, paths.size()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  std::vector<join::RankSummary> out;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!errors[i].empty()) {
      err << "sightline report: " << errors[i] << "\n";
      return std::nullopt;
    }
    for (auto& s : each[i]) out.push_back(std::move(s));
  }
  addLineTexts(out, args.mapper);
  return out;
}

std::vector<std::string> mergeInputs(const std::vector<std::string>& paths, std::ostream& err, bool& ok) {
  std::vector<std::string> out;
  ok = true;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    // A folder: its summaries (`*.json`), in name order; a merged job written there is not one.
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      std::string name = entry.path().filename().string();
      if (entry.is_regular_file(ec) && name.size() > 5 && name.substr(name.size() - 5) == ".json" && name != "job.json")
        found.push_back(entry.path().string());
    }
    if (ec) {
      err << "sightline report: --merge " << path << ": " << ec.message() << "\n";
      ok = false;
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) {
      err << "sightline report: --merge " << path << ": a folder without summaries (*.json)\n";
      ok = false;
    }
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::optional<std::vector<join::RankSummary>> readSummaries(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return error = "no such file or folder", std::nullopt;
  auto ends = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".sqlite") || ends(".nsys-rep") || ends(".pickle") || ends(".pkl") || ends(".gz") ||
      path.find(".pt.trace.json") != std::string::npos)
    return error =
               "a profile, not a rank summary: make its summary where it lies first, then merge that:\n  "
               "sightline report --format summary --profile " +
               path + " -o " + fs::path(path).stem().string() + ".summary.json [train.py]",
           std::nullopt;
  return readSummaryFile(path, error);
}

void writeJobText(const features::JobView& job, const std::vector<join::RankSummary>& ranks, std::ostream& out) {
  out << terminalText(features::jobStory(job, ranks));
}

bool allJsonReports(const std::vector<std::string>& inputs) {
  // A summary document says so in its first bytes (its keys are written sorted); anything else
  // is read whole: a JSON report has `files`.
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    char head[64] = {};
    in.read(head, sizeof head - 1);
    if (std::string_view(head).find("sightline_rank_summary") != std::string_view::npos) return false;
    in.clear();
    in.seekg(0);
    json doc = json::parse(in, nullptr, false);
    if (!doc.is_object() || !doc.contains("files")) return false;
  }
  return !inputs.empty();
}

int mergeSummaries(const ReportArgs& args, std::ostream& out, std::ostream& err) {
  bool ok = true;
  auto inputs = mergeInputs(args.merge_paths, err, ok);
  if (!ok) return 2;
  std::vector<join::RankSummary> ranks;
  for (const auto& path : inputs) {
    std::string error;
    auto got = readSummaries(path, error);
    if (!got) {
      err << "sightline report: --merge " << path << ": " << error << "\n";
      return 2;
    }
    if (!addSummaries(ranks, std::move(*got), error)) {
      err << "sightline report: --merge: " << error << "\n";
      return 2;
    }
  }
  auto job = features::buildJob(ranks);
  if (args.format == "text") {
    writeJobText(job, ranks, out);
    return 0;
  }
  if (args.format == "html") return writeJobHtml(args, job, ranks, out, err);
  json doc = {{"profile", {{"path", inputs.empty() ? "" : inputs.front()}, {"parts", inputs}, {"format", "merged"}}},
              {"job", jobJson(job, ranks)}};
  out << protocol::dumpJson(doc) << "\n";
  return 0;
}

}  // namespace sightline::server::report
