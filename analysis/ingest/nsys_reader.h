// Reads an Nsight Systems SQLite export (`nsys export --type sqlite`, schemas 2.9 .. 3.25+)
// into the format-neutral profile model. Probes the schema, never assumes a table or column,
// and reports in ProfileInfo::warnings what was missing and what that costs. Fails only when
// the file is not an nsys export at all.
#pragma once

#include <optional>
#include <string>

#include "analysis/ingest/load_result.h"

namespace sightline::ingest {

// Whether `path` opens as SQLite and holds what every nsys export has (StringIds); else why not,
// in `why`. Cheap: no rows read.
bool isNsysExport(const std::string& path, std::string& why);

LoadResult loadNsysSqlite(const std::string& path, const LoadProgress& progress = {}, const NamesRead& names_read = {});

// Decodes one NVTX extended payload holding a Python backtrace. Exposed for tests.
struct PayloadLayout {
  uint32_t count_offset = 0;  // of the frame count
  uint32_t count_size = 4;
  uint32_t frames_offset = 0;  // of the first frame
  uint32_t frame_size = 24;
  uint32_t function_offset = 0, function_size = 8;
  uint32_t file_offset = 8, file_size = 8;
  uint32_t line_offset = 16, line_size = 4;
  bool operator==(const PayloadLayout&) const = default;
};
struct RawFrame {
  uint64_t function_id = 0;
  uint64_t file_id = 0;
  int32_t line = 0;
};
// False when the blob is too short or its header is inconsistent.
bool decodeBacktracePayload(std::string_view blob, const PayloadLayout& layout, std::vector<RawFrame>& frames);

}  // namespace sightline::ingest
