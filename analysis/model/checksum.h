// A 64-bit checksum of bytes, word by word, that can be fed piece by piece (each call goes on
// from the last one's value): what the caches (model_cache, attribution_cache) store to tell a
// damaged entry from a whole one. Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sightline::model {

inline constexpr uint64_t kChecksumSeed = 0xcbf29ce484222325ULL;

inline uint64_t checksum(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  uint64_t tail = n;
  for (size_t i = 0; i < n; ++i) tail = tail << 8 | p[i];
  h = (h ^ tail) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

}  // namespace sightline::model
