#include "server/platform/phase_clock.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace sightline::server {
namespace {

struct Clock {
  std::mutex mutex;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last = start;
  std::vector<std::pair<const char*, double>> phases;
};

Clock& clock() {
  static Clock c;
  return c;
}

}  // namespace

bool phasesOn() {
  static const bool on = [] {
    const char* v = std::getenv("SIGHTLINE_PHASES");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void markPhase(const char* phase) {
  if (!phasesOn()) return;
  Clock& c = clock();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto now = std::chrono::steady_clock::now();
  double s = std::chrono::duration<double>(now - c.last).count();
  c.last = now;
  for (auto& [name, total] : c.phases)
    if (std::strcmp(name, phase) == 0) {
      total += s;
      return;
    }
  c.phases.emplace_back(phase, s);
}

std::string phaseReport() {
  if (!phasesOn()) return "";
  Clock& c = clock();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::string out;
  char line[160];
  for (const auto& [name, s] : c.phases) {
    std::snprintf(line, sizeof line, "phase %s %.4f\n", name, s);
    out += line;
  }
  std::snprintf(line, sizeof line, "phase total %.4f\n", std::chrono::duration<double>(c.last - c.start).count());
  return out + line;
}

}  // namespace sightline::server
