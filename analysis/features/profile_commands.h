// The command lines that profile a script with Nsight Systems and export what Sightline reads
// (SQLite with the Python backtrace blobs). Plain strings for a client to show or run.
#pragma once

#include <string>
#include <vector>

#include "analysis/source/source_index.h"

namespace sightline::features {

struct NsysCommands {
  std::string report;                 // "<stem>-profile" (nsys adds .nsys-rep)
  std::vector<std::string> commands;  // profile, then export; run in the script's folder
  bool capture_range = false;         // the script opens a cudaProfilerApi window itself
  std::string note;                   // what to do when it does not
};

// For the script `file_name` ("train.py"), run with `python`. When the script calls
// torch.cuda.profiler.start()/stop() (or cudaProfilerStart), the capture is limited to that
// window; otherwise the note points at `sightline capture` and the "Time steps N..M, then
// profile" action.
NsysCommands nsysCommandsFor(const source::SourceIndex& index, const std::string& file_name,
                             const std::string& python = "python3");

// `s` as one word of a POSIX shell command: as it is when it needs no quoting, else single-quoted.
std::string shellWord(const std::string& s);

}  // namespace sightline::features
