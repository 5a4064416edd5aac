// `report --merge` on any summary: the input is one rank's JSON report or rank summary
// (`--format summary`), merged with itself, into the old added-up report and into the job. Never an abort (8 of 14
// crafted summaries once ended in uncaught JSON type errors), never a negative sum, never gigabytes for a small file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "server/cli/report_data.h"

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
  for (const char* format : {"json", "text"}) {
    sightline::server::report::ReportArgs args;
    args.merge_paths = {path, path};
    args.format = format;
    std::ostringstream job, job_err;
    int job_code = sightline::server::report::mergeSummaries(args, job, job_err);
    if (job_code != 0 && job_code != 2) __builtin_trap();
  }
  return 0;
}
