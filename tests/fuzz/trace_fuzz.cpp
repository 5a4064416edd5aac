// The PyTorch profiler trace reader and attribution over any bytes, plain or gzip: the first
// byte chooses whether the rest is gzipped before it is read (gzip input is also read as is).
// Seeded with real traces cut short (scripts/fuzz.sh). Errors and warnings, never a crash.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/ingest/kineto_reader.h"
#include "tests/fuzz/profile_input.h"

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::string path = sightline::fuzz::inputPath(".pt.trace.json");
  if (data[0] & 1) {
    auto packed = gzip(data + 1, size - 1);
    sightline::fuzz::writeInput(path, packed.data(), packed.size());
  } else {
    sightline::fuzz::writeInput(path, data + 1, size - 1);
  }
  auto loaded = sightline::ingest::loadKinetoTrace(path);
  if (loaded.profile) {
    auto attr = sightline::attribution::attribute(*loaded.profile);
    if (attr.attributed_gpu_ns > attr.steady_gpu_ns || attr.steady_gpu_ns > attr.total_gpu_ns) __builtin_trap();
  }
  return 0;
}
