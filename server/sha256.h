// SHA-256 (FIPS 180-4) and base64, for the HTML page's Content-Security-Policy: the one inline
// script is allowed by its hash ('sha256-...'), not by 'unsafe-inline'. Not for secrets.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sightline::server {

std::array<uint8_t, 32> sha256(std::string_view bytes);
std::string base64(const uint8_t* data, size_t size);

}  // namespace sightline::server
