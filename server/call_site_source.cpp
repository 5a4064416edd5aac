// Reads and indexes mapped source files for call-site attribution.
#include "server/call_site_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/source/source_file.h"
#include "analysis/source/source_index.h"

namespace sightline::server {

const attribution::CallSiteTable* CallSiteSource::operator()(std::string_view profile_path) {
  auto found = by_profile_path_.find(profile_path);
  if (found != by_profile_path_.end()) return found->second.get();
  auto& slot = by_profile_path_[std::string(profile_path)];
  auto local = mapper_.map(profile_path);
  if (!local) return nullptr;
  std::error_code ec;
  std::string key = std::filesystem::weakly_canonical(*local, ec).string();
  if (auto same = by_local_path_.find(key); same != by_local_path_.end()) {
    slot = std::make_unique<attribution::CallSiteTable>(*same->second);
    return slot.get();
  }
  std::ifstream in(*local, std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream text;
  text << in.rdbuf();
  source::SourceFile file(text.str());
  auto index = source::buildSourceIndex(file);
  slot = std::make_unique<attribution::CallSiteTable>(attribution::buildCallSites(file, index));
  by_local_path_[key] = slot.get();
  return slot.get();
}

}  // namespace sightline::server
