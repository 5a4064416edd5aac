// --merge: single-rank JSON reports added up into one.
#include "server/cli/report_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "analysis/features/profile_view.h"
#include "analysis/ingest/profile_loader.h"
#include "protocol/json_in.h"
#include "server/cli/command_line.h"
#include "server/cli/joined_files.h"
#include "server/cli/report_data.h"
#include "server/profile_text.h"

namespace sightline::server::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

}  // namespace

// --merge: the JSON reports of single ranks, added up into one multi-rank report. Ranks are
// listed in input order; every line gets a `rank_ns` entry per rank (0 where that rank has no
// time on it), so the result reads like the report of one multi-rank profile.
int mergeReports(const std::vector<std::string>& paths, std::ostream& out, std::ostream& err) {
  std::vector<json> docs;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    json doc = json::parse(in, nullptr, false);
    if (!in.good() && !in.eof()) doc = json();
    if (!doc.is_object() || !doc.contains("files") || !doc.contains("ranks") || !doc["files"].is_array() ||
        !doc["ranks"].is_array()) {
      err << "sightline report: --merge " << path << ": not a `sightline report --format json` output\n";
      return 2;
    }
    docs.push_back(std::move(doc));
  }
  size_t rank_count = 0;
  for (const auto& d : docs) rank_count += std::max<size_t>(1, d["ranks"].size());
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
  for (size_t k = 0; k < docs.size(); ++k) {
    const json& d = docs[k];
    for (const char* key : {"total_gpu_ns", "steady_gpu_ns", "attributed_gpu_ns", "unattributed_gpu_ns", "comm_ns",
                            "comm_exposed_ns", "launches", "lost_launches", "processes"})
      merged[key] = merged[key].get<int64_t>() + d.value(key, int64_t{0});
    merged["steps"] = std::max(merged["steps"].get<int>(), d.value("steps", 0));
    for (const auto& w : d["profile"].value("warnings", json::array()))
      merged["profile"]["warnings"].push_back(fs::path(paths[k]).filename().string() + ": " + w.get<std::string>());
    size_t ranks_here = std::max<size_t>(1, d["ranks"].size());
    for (const auto& r : d["ranks"]) merged["ranks"].push_back(r);
    for (const auto& f : d["files"]) {
      std::string key = f["local_path"].is_string() ? f["local_path"].get<std::string>() : f.value("path", "");
      file_info[key] = {{"path", f.value("path", "")}, {"local_path", f["local_path"]}};
      for (const auto& l : f["lines"]) {
        json& m = files[key][l["line"].get<int>()];
        if (m.is_null()) {
          m = {{"line", l["line"]}, {"rank_ns", std::vector<int64_t>(rank_count, 0)}};
        }
        for (const auto& [name, value] : l.items())
          if (value.is_number_integer() && name != "line") m[name] = m.value(name, int64_t{0}) + value.get<int64_t>();
        std::vector<int64_t> own = l.contains("rank_ns") ? l["rank_ns"].get<std::vector<int64_t>>()
                                                         : std::vector<int64_t>{l.value("gpu_ns", int64_t{0})};
        for (size_t r = 0; r < own.size() && r < ranks_here; ++r)
          m["rank_ns"][first_rank + r] = m["rank_ns"][first_rank + r].get<int64_t>() + own[r];
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
      ns += l.value("gpu_ns", int64_t{0});
      f["lines"].push_back(l);
    }
    f["gpu_ns"] = ns;
    jfiles.push_back(f);
  }
  merged["files"] = jfiles;
  out << protocol::dumpJson(merged) << "\n";
  return 0;
}

}  // namespace sightline::server::report
