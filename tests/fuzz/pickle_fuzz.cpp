// The memory-snapshot unpickler on any bytes: an error or a document, never a crash, a hang or
// an allocation out of proportion to the input; a document read back is walked whole. Read
// twice: as it is, and with a sink taking every dict (batches given back as the snapshot reader
// does), after which every value reachable must still be one the document holds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/ingest/pickle_data.h"

using sightline::ingest::PickleData;

namespace {

struct TakeDicts : sightline::ingest::PickleSink {
  bool take(const PickleData& doc, PickleData::Ref, PickleData::Ref item) override {
    return doc.type(item) == PickleData::Type::Dict;
  }
  void moved(PickleData::Ref, const std::unordered_map<PickleData::Ref, PickleData::Ref>&) override {}
};

// Every value reachable from the root once (shared values may repeat: bounded by a count).
void walk(const PickleData& doc) {
  std::vector<PickleData::Ref> todo{doc.root()};
  size_t seen = 0;
  while (!todo.empty() && ++seen < 200000) {
    auto r = todo.back();
    todo.pop_back();
    if (r >= doc.valueCount()) __builtin_trap();  // a ref to a value given back
    (void)doc.integer(r);
    (void)doc.number(r);
    (void)doc.str(r);
    size_t n = doc.size(r);
    for (size_t i = 0; i < n; ++i) {
      if (doc.type(r) == PickleData::Type::Dict) {
        todo.push_back(doc.key(r, i));
        todo.push_back(doc.value(r, i));
      } else {
        todo.push_back(doc.item(r, i));
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  TakeDicts sink;
  for (auto* s :
       {static_cast<sightline::ingest::PickleSink*>(nullptr), static_cast<sightline::ingest::PickleSink*>(&sink)}) {
    std::string error;
    auto doc = sightline::ingest::readPickleData(bytes, error, {1u << 20, 1u << 16}, s);
    if (!doc) {
      if (error.empty()) __builtin_trap();  // every failure says why
      continue;
    }
    walk(*doc);
  }
  return 0;
}
