// The delay before a document's diagnostics are recomputed after an edit, following what the
// last computations cost (as clangd does): the median of the recent ones, held between a floor
// (a cheap file publishes almost at once) and a cap (a slow one still waits for typing to
// pause). A fixed delay (`--diagnostics-delay-ms`) replaces it.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

namespace sightline::server {

class Debounce {
 public:
  using Clock = std::chrono::steady_clock;
  struct Policy {
    std::chrono::milliseconds floor{20};
    std::chrono::milliseconds cap{500};
    double ratio = 1.0;  // of the median cost
    size_t history = 6;  // costs remembered
  };
  Debounce() = default;
  explicit Debounce(Policy policy) : policy_(policy) {}
  // A fixed delay, whatever the computations cost.
  static Debounce fixed(std::chrono::milliseconds delay) {
    Debounce d;
    d.fixed_ = delay;
    return d;
  }

  void record(Clock::duration cost);
  std::chrono::milliseconds delay() const;

 private:
  Policy policy_;
  std::optional<std::chrono::milliseconds> fixed_;
  std::vector<Clock::duration> costs_;  // the recent ones, oldest first
};

}  // namespace sightline::server
