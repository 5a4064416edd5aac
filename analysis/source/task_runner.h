// How the source model runs work on several cores without owning threads: its owner (the
// server's worker pool, a benchmark) hands it a TaskRunner; without one, everything runs on
// the calling thread. The analysis core never starts a thread of its own.
#pragma once

#include <cstddef>
#include <functional>

namespace sightline::source {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Calls task(i) for every i in [0, count), on any threads (the caller's included), and
  // returns when all have returned. Tasks must not throw.
  virtual void runAll(size_t count, const std::function<void(size_t)>& task) = 0;
};

}  // namespace sightline::source
