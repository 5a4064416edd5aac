// Call-site tables of mapped source files, read through a callback.
#include "analysis/join/call_site_tables.h"

#include "analysis/source/source_file.h"

namespace sightline::join {

CallSiteTables::CallSiteTables(attribution::PathMapper mapper, Normalize normalize, ReadSource read_source)
    : mapper_(std::move(mapper)), normalize_(std::move(normalize)), read_source_(std::move(read_source)) {}

void CallSiteTables::add(const std::string& local_path, const source::SourceFile& file,
                         const source::SourceIndex& index) {
  by_local_path_[normalize_(local_path)] =
      std::make_unique<attribution::CallSiteTable>(attribution::buildCallSites(file, index));
}

const attribution::CallSiteTable* CallSiteTables::operator()(std::string_view profile_path) {
  auto found = by_profile_path_.find(profile_path);
  if (found != by_profile_path_.end()) return found->second;
  auto& slot = by_profile_path_[std::string(profile_path)];
  auto local = mapper_.map(profile_path);
  if (!local) return slot = nullptr;
  auto& table = by_local_path_[normalize_(*local)];
  if (!table) {
    auto text = read_source_ ? read_source_(*local) : std::nullopt;
    if (!text) return slot = nullptr;
    source::SourceFile file(std::move(*text));
    table =
        std::make_unique<attribution::CallSiteTable>(attribution::buildCallSites(file, source::buildSourceIndex(file)));
  }
  return slot = table.get();
}

}  // namespace sightline::join
