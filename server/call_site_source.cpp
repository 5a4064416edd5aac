// Reads and indexes mapped source files for call-site attribution.
#include "server/call_site_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::server {

namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(path, ec).string();
}

}  // namespace

void CallSiteSource::add(const std::string& local_path, const source::SourceFile& file,
                         const source::SourceIndex& index) {
  by_local_path_[canonical(local_path)] =
      std::make_unique<attribution::CallSiteTable>(attribution::buildCallSites(file, index));
}

const attribution::CallSiteTable* CallSiteSource::operator()(std::string_view profile_path) {
  auto found = by_profile_path_.find(profile_path);
  if (found != by_profile_path_.end()) return found->second;
  auto& slot = by_profile_path_[std::string(profile_path)];
  auto local = mapper_.map(profile_path);
  if (!local) return slot = nullptr;
  auto& table = by_local_path_[canonical(*local)];
  if (!table) {
    std::ifstream in(*local, std::ios::binary);
    if (!in) return slot = nullptr;
    std::ostringstream text;
    text << in.rdbuf();
    source::SourceFile file(text.str());
    table =
        std::make_unique<attribution::CallSiteTable>(attribution::buildCallSites(file, source::buildSourceIndex(file)));
  }
  return slot = table.get();
}

}  // namespace sightline::server
