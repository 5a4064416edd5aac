// Our profiled train_small.py repeated to at least `min_lines` lines, definitions renamed per
// copy so the file stays valid Python with distinct names: the scaled-real script of the
// source-model and editor-latency benchmarks. With `keep_first`, copy 0 keeps its names and
// lines, so a profile of train_small.py still lands on it.
#pragma once

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace sightline::bench {

inline std::string scaledTrainScript(size_t min_lines, bool keep_first = false) {
  std::ifstream in(std::string(SIGHTLINE_TEST_DATA_DIR) + "/h200/nsys/train_small.py");
  std::stringstream s;
  s << in.rdbuf();
  std::string base = s.str();
  std::string out = keep_first ? base : "";
  size_t lines = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  for (int copy = keep_first ? 1 : 0; lines < min_lines; ++copy) {
    std::string suffix = "_" + std::to_string(copy);
    std::string renamed = std::regex_replace(base, std::regex(R"(\b(class|def) (\w+))"), "$1 $2" + suffix);
    renamed = std::regex_replace(renamed, std::regex(R"(\b(train_step|Synthetic|Block|Net|NsysWindow|main)\()"),
                                 "$1" + suffix + "(");
    out += renamed;
    lines = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  }
  return out;
}

}  // namespace sightline::bench
