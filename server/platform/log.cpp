// Log sink: one line per message on stderr, written under a lock (the stdio reader thread logs too).
#include "server/platform/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace sightline::server {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Info)};
std::mutex g_mutex;
const char* const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

bool parseLogLevel(std::string_view name, LogLevel& out) {
  for (int i = 0; i < 4; ++i) {
    if (name == kNames[i]) {
      out = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void setLogLevel(LogLevel level) { g_level = static_cast<int>(level); }
bool logEnabled(LogLevel level) { return static_cast<int>(level) <= g_level; }

void writeLog(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "sightline [%s] %s\n", kNames[static_cast<int>(level)], message.c_str());
  std::fflush(stderr);
}

}  // namespace sightline::server
