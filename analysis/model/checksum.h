// A 64-bit checksum of bytes, word by word, that can be fed piece by piece (each call goes on
// from the last one's value): what the caches (model_cache, attribution_cache) store to tell a
// damaged entry from a whole one. Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sightline::model {

inline constexpr uint64_t kChecksumSeed = 0xcbf29ce484222325ULL;

inline uint64_t mixWord(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

// Long pieces go four words at a time in four independent lanes (a serial chain of multiplies
// ran at a quarter of the speed the reopen reads its cache), folded into one value at the end.
inline uint64_t checksum(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  if (n >= 64) {
    uint64_t lane[4] = {h, h ^ 0x243F6A8885A308D3ull, h ^ 0x13198A2E03707344ull, h ^ 0xA4093822299F31D0ull};
    for (; n >= 32; n -= 32, p += 32) {
      for (size_t k = 0; k < 4; ++k) {
        uint64_t w = 0;
        std::memcpy(&w, p + 8 * k, 8);
        lane[k] = mixWord(lane[k], w);
      }
    }
    h = mixWord(mixWord(mixWord(lane[0], lane[1]), lane[2]), lane[3]);
  }
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
