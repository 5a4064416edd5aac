// The CUDA API calls of an nsys export (internal to analysis/ingest): the runtime API's table,
// then the driver API's, each in two halves by rowid on two connections at once.
#pragma once

#include <string>
#include <unordered_map>

#include "analysis/ingest/sqlite.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::nsys {

// Appends the calls to `out.api_calls` in each table's order, with their stripped names interned
// in `out.strings`, what they cost the capture in `out.capture`, and warnings in `out.info`.
// The second half is read on a connection of its own to `path`; `string_ids` maps the export's
// StringIds to `out`'s.
void readApiCalls(Database& db, const std::string& path, model::Profile& out,
                  const std::unordered_map<int64_t, model::StringId>& string_ids);

}  // namespace sightline::ingest::nsys
