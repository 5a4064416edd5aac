// A loaded profile as compact binary, to be read again in a fraction of the reader's time (the
// server's reopen cache, server/workspace/profile_files.h). Encoding is pure: the bytes go to a sink the
// caller writes. Reading checks everything before trusting it: the magic, the layout of this
// build's model, the caller's key (the profile's path, size, mtime and the tool that read it),
// every count against the bytes left, and a checksum of the whole; anything else is an error,
// never a partial profile.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model/profile.h"

namespace sightline::ingest {

using ByteSink = std::function<bool(std::string_view bytes)>;  // false: stop (a write failed)

// Writes `profile` under `key`; false when the sink refused bytes.
bool encodeModelCache(const model::Profile& profile, const std::string& key, const ByteSink& sink);

// encodeModelCache in two steps, so that the slow one (summing and sending a few hundred MB) can
// run beside the join. Taking it copies what the join may still change (the info, the string
// table: interned names) and notes where each large table's rows are; write() reads those rows
// from the profile's own buffers. Moving the profile keeps them; changing or freeing a table
// before write() returns does not (ProfileJoin changes tables only after JoinOptions::
// before_tables_change).
class ModelCacheImage {
 public:
  ModelCacheImage(const model::Profile& profile, const std::string& key);
  bool write(const ByteSink& sink) const;  // false when the sink refused bytes

  struct Piece {
    const char* data;  // a table's rows, or nullptr: copied_[at, at + size)
    size_t size;
    size_t at;
    bool halved;  // summed in two halves (the reader reads it on two cores)
  };

 private:
  std::string copied_;
  std::vector<Piece> pieces_;
};

// The profile stored in `path` under `key`, or nullopt with `error` saying why (another key, a
// foreign or damaged file).
std::optional<model::Profile> readModelCache(const std::string& path, const std::string& key, std::string& error);

}  // namespace sightline::ingest
