// The benches' yardstick: a python3 one-liner run on a file in a child process, timed, with
// its peak RSS (header-only; bench code, not the product).
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>

namespace sightline::bench {

inline double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds (user + system) of a rusage.
inline double cpuSeconds(const rusage& u) {
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct PythonRun {
  double seconds = -1;  // wall; -1 when it failed
  double cpu = 0;       // user + system
  double rss_mib = 0;   // peak
};

// `python3 -c CODE PATH` with stdout to /dev/null, timed and measured.
inline PythonRun runPythonMeasured(const std::string& code, const std::string& path) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execlp("python3", "python3", "-c", code.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  auto t1 = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return {seconds(t0, t1), cpuSeconds(usage), static_cast<double>(usage.ru_maxrss) / 1024.0};
}

// `python3 -c CODE PATH` with stdout to /dev/null: {seconds, peak RSS in MiB}, or {-1, 0} when
// it fails.
inline std::pair<double, double> runPython(const std::string& code, const std::string& path) {
  auto run = runPythonMeasured(code, path);
  return {run.seconds, run.rss_mib};
}

}  // namespace sightline::bench
