// The memory-snapshot unpickler on any bytes: an error or a document, never a crash, a hang or
// an allocation out of proportion to the input; a document read back is walked whole.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/ingest/pickle_data.h"

using sightline::ingest::PickleData;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto doc = sightline::ingest::readPickleData(std::string(reinterpret_cast<const char*>(data), size), error,
                                               {1u << 20, 1u << 16});
  if (!doc) {
    if (error.empty()) __builtin_trap();  // every failure says why
    return 0;
  }
  // Walk every value reachable from the root once (shared values may repeat: bounded by a count).
  std::vector<PickleData::Ref> todo{doc->root()};
  size_t seen = 0;
  while (!todo.empty() && ++seen < 200000) {
    auto r = todo.back();
    todo.pop_back();
    (void)doc->integer(r);
    (void)doc->number(r);
    (void)doc->str(r);
    size_t n = doc->size(r);
    for (size_t i = 0; i < n; ++i) {
      if (doc->type(r) == PickleData::Type::Dict) {
        todo.push_back(doc->key(r, i));
        todo.push_back(doc->value(r, i));
      } else {
        todo.push_back(doc->item(r, i));
      }
    }
  }
  return 0;
}
