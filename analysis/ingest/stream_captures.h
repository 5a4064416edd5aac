// The spans in which a process captured a stream into a CUDA graph (internal to
// analysis/ingest): cudaStreamBeginCapture to cudaStreamEndCapture. A launch made then has no GPU
// work of its own (the graph holds it), so a launch there without a record is not a lost one.
// make_graphed_callables' capture, traced whole run, once counted 1.9% of launches lost for them
// (its backward captured on autograd's thread: the spans are the process's, not the thread's).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model/profile.h"

namespace sightline::ingest {

class StreamCaptures {
 public:
  StreamCaptures(const std::vector<model::ApiCall>& calls, const model::StringTable& strings);
  // Whether the call started while its process was capturing a stream.
  bool inside(const model::ApiCall& c) const;

 private:
  std::unordered_map<uint32_t, std::vector<std::pair<int64_t, int64_t>>> spans_;  // pid -> (begin, end)
};

}  // namespace sightline::ingest
