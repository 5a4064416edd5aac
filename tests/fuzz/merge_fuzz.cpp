// `report --merge` on any summary: the input is one rank's JSON report or rank summary
// (`--format summary`), merged with itself, into the old added-up report and into the job. Never an abort (8 of 14
// crafted summaries once ended in uncaught JSON type errors), never a negative sum, never gigabytes for a small file,
// and never a negative time in the job (sums of crafted values once wrapped past int64: "median step -0.00 ms").
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "server/cli/report_data.h"

namespace {

using nlohmann::json;

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether a time anywhere in `v` (under a key naming one: *_ns, *_ns_per_step) is negative; a
// step the rank does not have is -1 in `step_wall_ns`, nothing else is below zero.
bool negativeTime(const json& v, bool time, int64_t floor) {
  if (v.is_number()) return time && v.is_number_integer() ? v.get<int64_t>() < floor : time && v.get<double>() < 0;
  if (v.is_array()) {
    for (const auto& x : v)
      if (negativeTime(x, time, floor)) return true;
    return false;
  }
  if (!v.is_object()) return false;
  for (const auto& [key, x] : v.items()) {
    bool is_time = endsWith(key, "_ns") || endsWith(key, "_ns_per_step") || key == "late_share";
    if (negativeTime(x, is_time, key == "step_wall_ns" ? -1 : 0)) return true;
  }
  return false;
}

void checkJob(const std::string& out) {
  json doc = json::parse(out, nullptr, false);
  if (doc.is_discarded()) __builtin_trap();
  if (doc.contains("job") && negativeTime(doc["job"], false, 0)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/sightline_merge_fuzz_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  std::ostringstream out, err;
  int code = sightline::server::report::mergeReports({path, path}, out, err);
  if (code != 0 && code != 2) __builtin_trap();
  if (code == 0 && out.str().find("\"gpu_ns\": -") != std::string::npos) __builtin_trap();
  if (code == 0) checkJob(out.str());
  for (const char* format : {"json", "text"}) {
    sightline::server::report::ReportArgs args;
    args.merge_paths = {path, path};
    args.format = format;
    std::ostringstream job, job_err;
    int job_code = sightline::server::report::mergeSummaries(args, job, job_err);
    if (job_code != 0 && job_code != 2) __builtin_trap();
    if (job_code == 0 && std::string(format) == "json") checkJob(job.str());
  }
  return 0;
}
