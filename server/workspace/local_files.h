// The user's files as the join sees them (analysis/join/profile_join.h): what a local path's
// identity is, and reading a script's text. The analysis core asks through these callbacks and
// never opens a file itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/join/profile_join.h"
#include "analysis/join/rank_summary.h"

namespace sightline::server {

// Absolute and canonical where the file exists (symlinks resolved), else absolute and normal.
std::string normalPath(const std::string& path);
// A regular file's bytes, or nullopt (missing, a directory, unreadable, or over `max_bytes`).
std::optional<std::string> readTextFile(const std::string& path, uint64_t max_bytes = UINT64_MAX);

// The most of a script the join reads to place lines (a frame may name any file: a 2 GB one
// once cost a minute and 2 GB).
inline constexpr uint64_t kMaxScriptBytes = 64ull << 20;

// Where a profile's paths may lead: files under the roots (the workspace folders or the current
// directory, and the targets of the user's path mappings) and the files the user named. Compared
// canonical, so neither `..` nor a symlink leads out. A profile comes from someone else: the
// paths it names never open anything else.
struct LocalScope {
  std::vector<std::string> roots;
  std::vector<std::string> files;
  bool allows(const std::string& path) const;
};

// The roots for a mapper: `root` and each rule's target (canonical).
LocalScope scopeOf(const attribution::PathMapper& mapper, const std::vector<std::string>& files = {});
// A regular file within `scope`: the mapper's `exists`.
std::function<bool(const std::string&)> existsWithin(LocalScope scope);
// `mapper` (its `exists` asked of the file system within scopeOf(mapper) unless set), paths
// normalized by normalPath, and sources read from disk up to kMaxScriptBytes.
join::JoinEnvironment localJoinEnvironment(attribution::PathMapper mapper);

// The one regular file named `name` under `root` (8 folders deep at most, hidden, build and
// package folders skipped, 20,000 entries looked at), or nullopt when there is none or more
// than one: the script a profile names from another machine, found in this checkout.
std::optional<std::string> uniqueFileNamed(const std::string& root, const std::string& name);

// Each summarized line's source text, where its profile path maps onto a file through `mapper`
// (whose `exists` keeps it in scope), else onto the one file of its name under the mapper's
// root: a diff against a later version of the script matches lines by it.
void addLineTexts(std::vector<join::RankSummary>& summaries, const attribution::PathMapper& mapper);

}  // namespace sightline::server
