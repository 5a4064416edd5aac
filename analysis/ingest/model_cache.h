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

#include "analysis/model/profile.h"

namespace sightline::ingest {

using ByteSink = std::function<bool(std::string_view bytes)>;  // false: stop (a write failed)

// Writes `profile` under `key`; false when the sink refused bytes.
bool encodeModelCache(const model::Profile& profile, const std::string& key, const ByteSink& sink);

// The profile stored in `path` under `key`, or nullopt with `error` saying why (another key, a
// foreign or damaged file).
std::optional<model::Profile> readModelCache(const std::string& path, const std::string& key, std::string& error);

}  // namespace sightline::ingest
