// --merge: single-rank JSON reports added up into one.
#include "server/cli/report_data.h"
#include "server/render/job_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/features/line_figures.h"
#include "analysis/features/profile_view.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/cli/report_data.h"
#include "server/render/profile_text.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxRanks = 4096;                // ranks over all the reports merged
constexpr size_t kMaxLineRankCells = 20'000'000;  // lines × ranks of the merged report

// A count that fits int64 (JSON's unsigned numbers go up to 2^64 - 1: those past 2^63 - 1 are not
// times any profile holds).
bool nonNegativeInt(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
  return v.is_number_integer() && v.get<int64_t>() >= 0;
}

// A line's figures derived from its counts (features/line_figures.h): never added up, made again
// for the merged report by the same rules.
bool derivedFigure(const std::string& name) {
  return name == "share" || name == "inclusive_share" || name == "inclusive_shown" || name == "oneoff_marked" ||
         name == "slowest_rank";
}

// The merged line's figures, by the rules every surface uses: shares of the merged steady GPU
// time, inclusive time told, the one-off mark, and the slowest rank (per step of each rank).
void addLineFigures(json& line, const json& merged, int64_t oneoff_total) {
  double total = static_cast<double>(std::max<int64_t>(1, merged["steady_gpu_ns"].get<int64_t>()));
  double steps = std::max(1, merged["steps"].get<int>());
  int64_t gpu = line.value("gpu_ns", int64_t{0}), inclusive = std::max(gpu, line.value("inclusive_ns", int64_t{0}));
  line["share"] = static_cast<double>(gpu) / total;
  line["inclusive_share"] = static_cast<double>(inclusive) / total;
  line["inclusive_shown"] =
      features::showsInclusive(static_cast<double>(gpu) / steps, static_cast<double>(inclusive) / steps);
  line["oneoff_marked"] = features::marksOneoff(line.value("oneoff_inclusive_ns", int64_t{0}), oneoff_total);
  const json& ranks = merged["ranks"];
  if (ranks.size() < 2 || !line.contains("rank_ns") || line["rank_ns"].size() != ranks.size()) return;
  attribution::LineCost cost;
  cost.gpu_ns = gpu;
  cost.rank_ns = line["rank_ns"].get<std::vector<int64_t>>();
  std::vector<attribution::RankInfo> infos(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    infos[r].label = ranks[r].value("label", "");
    infos[r].steady_steps = ranks[r].value("steady_steps", 0);
  }
  if (auto slow = features::slowestRank(cost, infos, {steps, true}); slow.ranked)
    line["slowest_rank"] = {{"rank", infos[slow.rank].label}, {"ratio", slow.ratio}, {"shown", slow.shown}};
}

// Why `doc` is not a report `--merge` can add up ("" when it is): the shapes and ranges it reads.
std::string invalidReport(const json& doc) {
  if (!doc.is_object() || !doc.contains("files") || !doc.contains("ranks") || !doc["files"].is_array() ||
      !doc["ranks"].is_array())
    return "not a `sightline report --format json` output";
  if (!doc.contains("profile") || !doc["profile"].is_object()) return "`profile` is not an object";
  if (doc["profile"].contains("warnings") && !doc["profile"]["warnings"].is_array()) return "`warnings` is not a list";
  for (const auto& w : doc["profile"].value("warnings", json::array()))
    if (!w.is_string()) return "a warning is not text";
  for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                          "comm_exposed_ns", "launches", "lost_launches", "processes", "steps"})
    if (doc.contains(key) && !nonNegativeInt(doc[key])) return std::string("`") + key + "` is not a count";
  if (doc["ranks"].size() > kMaxRanks) return "more than " + std::to_string(kMaxRanks) + " ranks";
  for (const auto& f : doc["files"]) {
    if (!f.is_object() || !f.contains("lines") || !f["lines"].is_array()) return "a file without `lines`";
    if (f.contains("path") && !f["path"].is_string()) return "a file's `path` is not text";
    if (f.contains("local_path") && !f["local_path"].is_string() && !f["local_path"].is_null())
      return "a file's `local_path` is not text";
    for (const auto& l : f["lines"]) {
      if (!l.is_object() || !l.contains("line") || !l["line"].is_number_integer() || l["line"].get<int64_t>() < 1 ||
          l["line"].get<int64_t>() > 100'000'000)
        return "a line without a line number";
      for (const auto& [name, value] : l.items())
        if (value.is_number() && name != "line" && !derivedFigure(name) && !nonNegativeInt(value))
          return "`" + name + "` is not a count";
      if (l.contains("rank_ns")) {
        if (!l["rank_ns"].is_array() || l["rank_ns"].size() > kMaxRanks) return "`rank_ns` is not a list of ranks";
        for (const auto& v : l["rank_ns"])
          if (!nonNegativeInt(v)) return "`rank_ns` holds a value that is not a count";
      }
    }
  }
  return "";
}

// a + b, or false when the sum does not fit (crafted reports).
bool addChecked(int64_t a, int64_t b, int64_t& sum) { return !__builtin_add_overflow(a, b, &sum); }

// Ranks are listed in input order; every line gets a `rank_ns` entry per rank (0 where that
// rank has no time on it), so the result reads like the report of one multi-rank profile.
int mergeChecked(const std::vector<std::string>& paths, std::ostream& out, std::ostream& err) {
  std::vector<json> docs;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    json doc = json::parse(in, nullptr, false);
    if (!in.good() && !in.eof()) doc = json();
    if (std::string why = invalidReport(doc); !why.empty()) {
      err << "sightline report: --merge " << path << ": " << why << "\n";
      return 2;
    }
    docs.push_back(std::move(doc));
  }
  size_t rank_count = 0, line_count = 0;
  for (const auto& d : docs) {
    rank_count += std::max<size_t>(1, d["ranks"].size());
    for (const auto& f : d["files"]) line_count += f["lines"].size();
  }
  if (rank_count > kMaxRanks || line_count * rank_count > kMaxLineRankCells) {
    err << "sightline report: --merge: " << rank_count << " ranks × " << line_count
        << " lines is more than a merged report holds\n";
    return 2;
  }
  bool overflow = false;
  auto add = [&](json& into, int64_t value) {
    int64_t sum = 0;
    if (!addChecked(into.get<int64_t>(), value, sum)) overflow = true;
    into = sum;
  };
  json merged = {
      {"profile", {{"path", paths.front()}, {"parts", paths}, {"format", "merged"}, {"warnings", json::array()}}},
      {"ranks", json::array()}};
  for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                          "comm_exposed_ns", "launches", "lost_launches", "processes"})
    merged[key] = 0;
  merged["steps"] = 0;
  std::map<std::string, std::map<int, json>> files;  // local (else profile) path -> line -> merged line
  std::map<std::string, json> file_info;
  size_t first_rank = 0;
  int64_t oneoff_total = 0;  // GPU time outside the steady steps, over every report
  for (size_t k = 0; k < docs.size(); ++k) {
    const json& d = docs[k];
    for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                            "comm_exposed_ns", "launches", "lost_launches", "processes"})
      add(merged[key], d.value(key, int64_t{0}));
    merged["steps"] = std::max(merged["steps"].get<int>(), d.value("steps", 0));
    if (d.contains("step_summary") && d["step_summary"].is_object() && d["step_summary"].contains("oneoff_gpu_ns") &&
        nonNegativeInt(d["step_summary"]["oneoff_gpu_ns"]) &&
        !addChecked(oneoff_total, d["step_summary"]["oneoff_gpu_ns"].get<int64_t>(), oneoff_total))
      overflow = true;
    for (const auto& w : d["profile"].value("warnings", json::array()))
      merged["profile"]["warnings"].push_back(fs::path(paths[k]).filename().string() + ": " + w.get<std::string>());
    size_t ranks_here = std::max<size_t>(1, d["ranks"].size());
    for (const auto& r : d["ranks"]) merged["ranks"].push_back(r);
    for (const auto& f : d["files"]) {
      // `[]` of a const json on a missing key reads past the tree (merge_fuzz): ask first.
      json local = f.contains("local_path") ? f["local_path"] : json(nullptr);
      std::string key = local.is_string() ? local.get<std::string>() : f.value("path", "");
      file_info[key] = {{"path", f.value("path", "")}, {"local_path", local}};
      for (const auto& l : f["lines"]) {
        json& m = files[key][l["line"].get<int>()];
        if (m.is_null()) {
          m = {{"line", l["line"]}, {"rank_ns", std::vector<int64_t>(rank_count, 0)}};
        }
        for (const auto& [name, value] : l.items())
          if (value.is_number_integer() && name != "line") {
            if (!m.contains(name)) m[name] = 0;
            add(m[name], value.get<int64_t>());
          }
        std::vector<int64_t> own = l.contains("rank_ns") ? l["rank_ns"].get<std::vector<int64_t>>()
                                                         : std::vector<int64_t>{l.value("gpu_ns", int64_t{0})};
        for (size_t r = 0; r < own.size() && r < ranks_here; ++r) add(m["rank_ns"][first_rank + r], own[r]);
      }
    }
    first_rank += ranks_here;
  }
  json jfiles = json::array();
  for (auto& [key, lines] : files) {
    json f = file_info[key];
    int64_t ns = 0;
    f["lines"] = json::array();
    for (auto& [line, l] : lines) {
      if (__builtin_add_overflow(ns, l.value("gpu_ns", int64_t{0}), &ns)) overflow = true;
      if (!overflow) addLineFigures(l, merged, oneoff_total);
      f["lines"].push_back(l);
    }
    f["gpu_ns"] = ns;
    jfiles.push_back(f);
  }
  merged["files"] = jfiles;
  // The job, where every report carries its ranks' summaries.
  std::vector<join::RankSummary> summaries;
  bool all = true;
  for (size_t k = 0; k < docs.size() && all; ++k) {
    std::string why;
    auto got = docs[k].contains("rank_summaries") ? rankSummariesFromJson(docs[k], why) : std::nullopt;
    if (!got && docs[k].contains("rank_summaries")) {
      err << "sightline report: --merge " << paths[k] << ": " << why << "\n";
      return 2;
    }
    all = got.has_value();
    if (got && !addSummaries(summaries, std::move(*got), why)) {
      err << "sightline report: --merge: " << why << "\n";
      return 2;
    }
  }
  if (all && !summaries.empty()) merged["job"] = jobJson(features::buildJob(summaries), summaries);
  if (overflow) {
    err << "sightline report: --merge: the reports' times add up past 2^63 ns (not reports of one run)\n";
    return 2;
  }
  out << protocol::dumpJson(merged) << "\n";
  return 0;
}

}  // namespace

// --merge: the JSON reports of single ranks, added up into one multi-rank report.
int mergeReports(const std::vector<std::string>& paths, std::ostream& out, std::ostream& err) {
  try {
    return mergeChecked(paths, out, err);
  } catch (const std::exception& e) {  // a shape the checks missed: an error, never an abort
    err << "sightline report: --merge: cannot add up these reports (" << e.what() << ")\n";
    return 2;
  }
}

}  // namespace sightline::server::report
