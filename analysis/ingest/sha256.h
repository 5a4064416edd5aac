// SHA-256 (FIPS 180-4) and base64: the HTML page's Content-Security-Policy allows its one inline
// script by its hash ('sha256-...', not 'unsafe-inline'), and Inductor names a wrapper module by
// the hash of its code (inductor_plain.cpp). Not for secrets.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sightline::ingest {

std::array<uint8_t, 32> sha256(std::string_view bytes);
std::string base64(const uint8_t* data, size_t size);

}  // namespace sightline::ingest
