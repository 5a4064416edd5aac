// Call-site tables for attribution (analysis/attribution/call_sites.h), from the user's files
// on disk: a profile path is mapped onto the workspace (PathMapper), the local file is read and
// indexed once, and its table is kept for the rest of the attribution. Used by `report`,
// `check --profile` and the server's profile loader. Not thread-safe: one per attribution.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "analysis/attribution/call_sites.h"
#include "analysis/attribution/path_mapping.h"
#include "analysis/source/source_index.h"

namespace sightline::server {

class CallSiteSource {
 public:
  explicit CallSiteSource(attribution::PathMapper mapper) : mapper_(std::move(mapper)) {}

  // A local file the caller has already parsed: used instead of reading it again.
  void add(const std::string& local_path, const source::SourceFile& file, const source::SourceIndex& index);

  // The table of the local file a profile path maps onto, or nullptr (unmapped, unreadable).
  const attribution::CallSiteTable* operator()(std::string_view profile_path);

 private:
  attribution::PathMapper mapper_;
  std::map<std::string, const attribution::CallSiteTable*, std::less<>> by_profile_path_;
  std::map<std::string, std::unique_ptr<attribution::CallSiteTable>> by_local_path_;
};

}  // namespace sightline::server
