// Logging to stderr only (stdout carries the protocol). One global level, set by --log-level.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace sightline::server {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

bool parseLogLevel(std::string_view name, LogLevel& out);
void setLogLevel(LogLevel level);
bool logEnabled(LogLevel level);
void writeLog(LogLevel level, const std::string& message);

// SL_LOG(Info) << "opened " << uri;  -- the stream is only built when the level is on.
class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine() { writeLog(level_, stream_.str()); }
  template <class T>
  LogLine& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace sightline::server

#define SL_LOG(level)                                                                                           \
  for (bool sl_log_once_ = ::sightline::server::logEnabled(::sightline::server::LogLevel::level); sl_log_once_; \
       sl_log_once_ = false)                                                                                    \
  ::sightline::server::LogLine(::sightline::server::LogLevel::level)
