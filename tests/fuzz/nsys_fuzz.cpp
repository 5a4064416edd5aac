// The nsys reader and attribution over any database: the input is an SQLite file (seeded with
// real exports cut down to a few hundred rows per table, scripts/fuzz.sh). A damaged or oddly
// shaped database gives an error or a partial profile, never a crash; what loads is attributed.
#include <cstddef>
#include <cstdint>

#include "analysis/attribution/attribution.h"
#include "analysis/ingest/nsys_reader.h"
#include "tests/fuzz/profile_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = sightline::fuzz::inputPath(".sqlite");
  sightline::fuzz::writeInput(path, data, size);
  auto loaded = sightline::ingest::loadNsysSqlite(path);
  if (loaded.profile) {
    auto attr = sightline::attribution::attribute(*loaded.profile);
    if (attr.attributed_gpu_ns > attr.steady_gpu_ns || attr.steady_gpu_ns > attr.total_gpu_ns) __builtin_trap();
  }
  return 0;
}
