// The job of many ranks in `report`: summaries made one report at a time (-j N in parallel),
// `--format summary`, `--merge` of summaries, and the job's text.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "analysis/features/profile_view.h"
#include "protocol/json_in.h"
#include "server/cli/report_data.h"
#include "server/render/job_json.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ms(int64_t ns) { return features::formatMilliseconds(ns); }

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}

// Steps numbered from 1, as the step bars number them (the JSON keeps 0-based indices).
std::string stepList(const std::vector<int32_t>& steps) {
  std::string out;
  size_t shown = 0;
  for (int32_t s : steps) {
    if (shown == 12) return out + ", … (" + std::to_string(steps.size()) + " steps)";
    out += (out.empty() ? "" : ", ") + std::to_string(s + 1);
    ++shown;
  }
  return out;
}

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
  std::ifstream in(path, std::ios::binary);
  if (!in) return error = "cannot be read", std::nullopt;
  json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded()) return error = "not JSON (cut short?)", std::nullopt;
  return rankSummariesFromJson(doc, error);
}

void writeJobText(const features::JobView& job, const std::vector<join::RankSummary>& ranks, std::ostream& out) {
  size_t hosts = job.hosts.size();
  out << "Job       " << job.ranks.size() << (job.ranks.size() == 1 ? " rank" : " ranks")
      << (job.world_size > 0 && static_cast<int>(job.ranks.size()) != job.world_size
              ? " of " + std::to_string(job.world_size)
              : "")
      << (hosts > 0 ? " on " + std::to_string(hosts) + (hosts == 1 ? " host" : " hosts") : "");
  if (job.steady_steps > 0)
    out << ", " << job.max_steady_steps << " steady steps per rank; median step " << ms(job.median_step_ns)
        << " ms (as captured)";
  out << "\n";
  if (!job.complete && job.world_size > 0 && static_cast<int>(job.ranks.size()) < job.world_size)
    out << "          only " << job.ranks.size() << " of the job's " << job.world_size
        << " ranks: a collective's waiting and moving need every rank's summary (no advice without them)\n";
  if (job.duplicate_ranks > 0)
    out << "          " << job.duplicate_ranks << (job.duplicate_ranks == 1 ? " summary repeats" : " summaries repeat")
        << " a rank another has (the same rank, host and GPU: the same report twice?), left out\n";
  // What the summaries' own reports warned of, once each.
  std::set<std::string> warned;
  for (const auto& r : ranks)
    for (const auto& w : r.warnings)
      if (warned.size() < 5 && warned.insert(w).second) out << "Warning   " << r.report << ": " << w << "\n";
  if (job.paired_collectives > 0)
    out << "          collectives: " << job.paired_collectives << " paired across ranks"
        << (job.unpaired_collectives ? ", " + std::to_string(job.unpaired_collectives) + " on one rank only" : "")
        << "; per rank and step, waiting for the last rank " << ms(job.wait_ns_per_step) << " ms, moving data "
        << ms(job.transfer_ns_per_step) << " ms\n";
  if (job.straggler >= 0) {
    const auto& r = job.ranks[static_cast<size_t>(job.straggler)];
    size_t others = job.ranks.size() - 1;
    out << "Straggler " << r.label << ": last to arrive at " << percent(job.straggler_late_share)
        << " of its collectives; the " << (others == 1 ? "other rank waits " : std::to_string(others) + " others wait ")
        << ms(job.straggler_caused_ns_per_step / static_cast<int64_t>(others)) << " ms/step"
        << (others == 1 ? "" : " each") << " for it (mean over its steady steps)";
    if (!job.straggler_steps.empty())
      out << "; it held up step" << (job.straggler_steps.size() == 1 ? " " : "s ") << stepList(job.straggler_steps);
    out << "\n";
    int64_t floor = std::max<int64_t>(500'000, job.median_step_ns / 100);
    if (!job.straggler_line_path.empty())
      out << "          in those steps " << fs::path(job.straggler_line_path).filename().string() << ":"
          << job.straggler_line << " runs " << ms(job.straggler_line_extra_ns)
          << " ms/step longer on it than the other ranks' median\n";
    else if (!job.straggler_steps.empty() && job.straggler_gpu_extra_ns >= floor)
      out << "          in those steps it launches " << ms(job.straggler_gpu_extra_ns)
          << " ms/step more GPU work than the other ranks' median"
          << (job.straggler_lines_known ? ", spread over its lines"
                                        : " (its lines are unknown: its summary has none; name the script with "
                                          "--format summary, or capture Python stacks)")
          << "\n";
    else if (!job.straggler_steps.empty() && job.straggler_lines_known)
      out << "          no line does measurably more GPU work on it in those steps: its host is slower "
             "(Python work, data, syncs), not its GPU\n";
    else if (!job.straggler_steps.empty())
      out << "          it launches no more GPU work than the others in those steps; its lines are unknown (its "
             "summary has none: name the script with --format summary, or capture Python stacks)\n";
  } else if (job.ranks.size() > 1 && job.paired_collectives > 0) {
    out << "Straggler none: no rank keeps the others waiting measurably (over 2% of a step)\n";
  }
  if (!job.lines.empty()) {
    out << "Spread    ms/step across ranks    median       p95       max  on\n";
    size_t shown = 0;
    for (const auto& l : job.lines) {
      if (shown++ == 8) break;
      std::string where = fs::path(l.path).filename().string() + ":" + std::to_string(l.line);
      char row[160];
      std::snprintf(row, sizeof row, "          %-22s %9s %9s %9s  ", where.c_str(), ms(l.median_ns).c_str(),
                    ms(l.p95_ns).c_str(), ms(l.max_ns).c_str());
      out << row << job.ranks[l.max_rank].label << "\n";
    }
  }
  bool fsdp = std::any_of(job.modules.begin(), job.modules.end(), [](const auto& m) { return !m.module.empty(); });
  size_t shown = 0;
  for (const auto& m : job.modules) {
    if (m.kind.empty() || m.exposed_ns < 100'000 || shown == 8) continue;
    if (shown++ == 0)
      out << (fsdp ? "FSDP      exposed communication per module (ms/step, mean over ranks)\n"
                   : "Comm      exposed communication by kind (ms/step, mean over ranks)\n");
    out << "          " << (m.module.empty() ? "(no module)" : m.module) << " " << m.kind << " in "
        << (m.backward ? "backward" : "forward") << ": " << ms(m.exposed_ns) << " of " << ms(m.ns) << " exposed";
    if (m.wait_ns > 0) out << " (" << ms(m.wait_ns) << " waiting for other ranks)";
    out << "\n";
  }
  for (const auto& a : job.advice) {
    const auto& m = job.modules[a.module];
    out << "Try       ";
    if (a.change == "forward-prefetch")
      out << m.module << "'s all-gather moves data for " << ms(a.moving_exposed_ns)
          << " ms/step while nothing computes in forward: prefetch it one module earlier "
             "(set_modules_to_forward_prefetch on the module before it), or keep it gathered "
             "(fully_shard(..., reshard_after_forward=False))\n";
    else if (a.change == "backward-prefetch")
      out << m.module << "'s all-gather moves data for " << ms(a.moving_exposed_ns)
          << " ms/step while nothing computes in backward: prefetch more modules ahead "
             "(set_modules_to_backward_prefetch)\n";
    else if (a.change == "reduce-dtype")
      out << m.module << "'s reduce-scatter is exposed " << ms(a.moving_exposed_ns)
          << " ms/step in backward: reduce in bf16 (MixedPrecisionPolicy(reduce_dtype=torch.bfloat16)) or "
             "group small modules into one fully_shard\n";
    else if (a.change == "ddp-buckets")
      out << "DDP's all-reduce is exposed " << ms(a.moving_exposed_ns)
          << " ms/step in backward: start it earlier with smaller buckets (bucket_cap_mb), or "
             "overlap it with gradient accumulation (no_sync)\n";
  }
  (void)ranks;
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
