// The report of a profile the server loaded: what `sightline mcp` answers from.
#include <filesystem>

#include "server/cli/report_data.h"

namespace sightline::server::report {

void joinNamedFiles(ReportData& data) {
  for (const auto& [file, lines] : data.main.attribution().files)
    data.mapped.push_back({file, data.main.localPathOf(file)});
  for (const auto& src : data.sources) {
    auto joined = join::joinFile(data.main, data.compare, src.absolute, *src.file, *src.index);
    data.measured[src.absolute] = joined.measured;
    if (joined.has_compare && comparesMemory(data)) {
      auto& memory = data.compare_memory[src.absolute];
      for (const auto& [line, c] : joined.compare.lines)
        if (c.memory_peak_bytes > 0 || c.memory_step_bytes > 0) {
          memory[line].first += c.memory_peak_bytes;
          memory[line].second += c.memory_step_bytes;
        }
    }
    // A compare profile with nothing on this file says nothing about it.
    if (!joined.has_compare || (joined.compare.lines.empty() && joined.compare_alignment.empty())) continue;
    if (!joined.compare_alignment.empty()) data.compare_aligned[src.absolute] = joined.compare_alignment;
    auto& into = data.compare_lines[src.absolute];
    for (const auto& [line, c] : joined.compare.lines) into[line] += c.gpu_ns;
  }
}

LoadedReport::LoadedReport(const LoadedProfile& loaded, const LoadedProfile* compare,
                           std::vector<cli::NamedFile> sources)
    : sources_(std::move(sources)),
      data_{args_, *loaded.join, compare ? compare->join.get() : nullptr, sources_, {}, {}, {}, {}, {}, {}, {}} {
  args_.profile_paths = loaded.parts;
  for (const auto& part : loaded.parts) args_.profile_path += (args_.profile_path.empty() ? "" : ", ") + part;
  if (compare) args_.compare_path = compare->path;
  args_.format = "json";
  for (const auto& src : sources_) args_.files.push_back(src.path);
  data_.verdict = loaded.verdict;
  data_.summaries = loaded.summaries;
  data_.job = loaded.job;
  joinNamedFiles(data_);
}

const nlohmann::json& LoadedReport::json() {
  if (!json_) json_ = reportJson(data_);
  return *json_;
}

}  // namespace sightline::server::report
