// Call-site tables for attribution (analysis/attribution/call_sites.h), from the user's files:
// a profile path is mapped onto a local file (PathMapper), whose text comes through a callback
// and is parsed and indexed once; its table is kept for the rest of the attribution. Pure (no
// IO of its own); not thread-safe: one per attribution.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "analysis/attribution/call_sites.h"
#include "analysis/attribution/path_mapping.h"
#include "analysis/source/source_index.h"

namespace sightline::join {

class CallSiteTables {
 public:
  using Normalize = std::function<std::string(const std::string& local_path)>;
  using ReadSource = std::function<std::optional<std::string>(const std::string& local_path)>;
  CallSiteTables(attribution::PathMapper mapper, Normalize normalize, ReadSource read_source);

  // A local file the caller has already parsed: used instead of reading it again.
  void add(const std::string& local_path, const source::SourceFile& file, const source::SourceIndex& index);

  // The table of the local file a profile path maps onto, or nullptr (unmapped, unreadable).
  const attribution::CallSiteTable* operator()(std::string_view profile_path);

 private:
  attribution::PathMapper mapper_;
  Normalize normalize_;
  ReadSource read_source_;
  std::map<std::string, const attribution::CallSiteTable*, std::less<>> by_profile_path_;
  std::map<std::string, std::unique_ptr<attribution::CallSiteTable>> by_local_path_;
};

}  // namespace sightline::join
