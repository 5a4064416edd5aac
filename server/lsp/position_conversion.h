// The one place where LSP positions (UTF-16 or UTF-8 code units) become byte offsets and back.
// Invalid UTF-8 bytes count as one code unit each, so any text converts without failing.
#pragma once

#include <cstdint>
#include <string_view>

#include "analysis/source/line_index.h"
#include "protocol/lsp_types.h"

namespace sightline::server {

enum class PositionEncoding { Utf16, Utf8 };

uint32_t toOffset(std::string_view text, const source::LineIndex& lines, const protocol::Position& position,
                  PositionEncoding encoding);
protocol::Position toPosition(std::string_view text, const source::LineIndex& lines, uint32_t offset,
                              PositionEncoding encoding);
protocol::Range toRange(std::string_view text, const source::LineIndex& lines, source::ByteRange range,
                        PositionEncoding encoding);

}  // namespace sightline::server
