// Step times from a training log.
#include "analysis/ingest/step_log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

namespace sightline::ingest {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool namesIteration(const std::string& line) {
  for (const char* word : {"iter", "step", "epoch", "batch", "it "})
    if (line.find(word) != std::string::npos) return true;
  return line.find('/') != std::string::npos && line.find('[') != std::string::npos;  // [ 10/5005]
}

// The time after a keyword ("time", "dt", "step_time", "iter_time", "batch_time") in the line:
// the value and its unit in ns per unit (0: none given). Keywords that are part of a longer
// word ("runtime", "data_time") do not count.
std::optional<std::pair<double, double>> timeIn(const std::string& line) {
  static const char* const kKeys[] = {"step_time", "iter_time", "batch_time", "time", "dt"};
  for (const char* key : kKeys) {
    size_t k = std::string_view(key).size();
    for (size_t at = line.find(key); at != std::string::npos; at = line.find(key, at + 1)) {
      bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
      size_t i = at + k;
      if (!word_start || (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')))
        continue;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ':' || line[i] == '=')) ++i;
      size_t begin = i;
      while (i < line.size() && (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == '.')) ++i;
      if (i == begin) continue;
      double value = 0;
      try {
        value = std::stod(line.substr(begin, i - begin));
      } catch (...) {
        continue;
      }
      while (i < line.size() && line[i] == ' ') ++i;
      std::string_view rest = std::string_view(line).substr(i);
      double unit = 0;
      if (rest.starts_with("ms"))
        unit = 1e6;
      else if (rest.starts_with("us") || rest.starts_with("µs"))
        unit = 1e3;
      else if (rest.starts_with("s") && (rest.size() == 1 || !std::isalpha(static_cast<unsigned char>(rest[1]))))
        unit = 1e9;
      else if (rest.starts_with("sec"))
        unit = 1e9;
      return std::make_pair(value, unit);
    }
  }
  return std::nullopt;
}

}  // namespace

StepLog parseStepLog(std::string_view text) {
  StepLog out;
  std::vector<std::pair<double, double>> values;  // value, unit (0: none)
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end - start < 4096) {  // a line of a training log, not a dump
      std::string line = lower(text.substr(start, end - start));
      if (namesIteration(line))
        if (auto t = timeIn(line); t && std::isfinite(t->first) && t->first > 0) values.push_back(*t);
    }
    start = end + 1;
  }
  if (values.empty()) return out;
  // No unit: seconds when the times are small (the ImageNet example prints 0.220), else ms.
  std::vector<double> bare;
  for (const auto& [v, unit] : values)
    if (unit == 0) bare.push_back(v);
  std::sort(bare.begin(), bare.end());
  double bare_unit = !bare.empty() && bare[bare.size() / 2] < 5 ? 1e9 : 1e6;
  for (const auto& [v, unit] : values) {
    double ns = v * (unit == 0 ? bare_unit : unit);
    if (ns > 0 && ns < 1e13) out.steps_ns.push_back(static_cast<int64_t>(ns));
  }
  std::vector<int64_t> steady(out.steps_ns.begin() + static_cast<std::ptrdiff_t>(out.steps_ns.size() / 10),
                              out.steps_ns.end());
  if (steady.empty()) return out;
  std::nth_element(steady.begin(), steady.begin() + static_cast<std::ptrdiff_t>(steady.size() / 2), steady.end());
  out.median_ns = steady[steady.size() / 2];
  return out;
}

}  // namespace sightline::ingest
