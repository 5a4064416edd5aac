// Which TORCH_TRACE logs are the profiled run's (compile_logs.h).
#include "analysis/join/compile_logs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <map>
#include <set>

namespace sightline::join {
namespace {

// The profile's processes, and its last host or GPU time (ns on its clock).
struct ProfileProcesses {
  std::set<uint32_t> pids;
  int64_t end_ns = 0;
  explicit ProfileProcesses(const model::Profile& p) {
    for (const auto& c : p.api_calls) pids.insert(c.pid), end_ns = std::max(end_ns, c.end_ns);
    for (const auto& m : p.marks) pids.insert(m.pid);
    for (const auto& c : p.calls) pids.insert(c.pid), end_ns = std::max(end_ns, c.end_ns);
    for (const auto& a : p.activities) end_ns = std::max(end_ns, a.end_ns);
    pids.erase(0);
  }
};

std::string pidList(const std::set<uint32_t>& pids) {
  std::string out;
  size_t n = 0;
  for (uint32_t pid : pids) {
    if (n++ == 4) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(pid);
  }
  return out;
}

std::string utcTime(double seconds) {
  auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buffer;
}

struct LogFacts {
  std::set<uint32_t> pids;
  double first_s = 0, last_s = 0;  // its compilations' starts (0: none known)
};

}  // namespace

model::CompiledCode profiledRunsCompiles(const model::CompiledCode& code, const model::Profile& profile,
                                         CompileLogs& logs) {
  std::map<std::string, LogFacts> facts;
  auto note = [&](const std::string& log, uint32_t pid, double start_s) {
    auto& f = facts[log];
    if (pid) f.pids.insert(pid);
    if (start_s > 0 && std::isfinite(start_s)) {
      f.first_s = f.first_s > 0 ? std::min(f.first_s, start_s) : start_s;
      f.last_s = std::max(f.last_s, start_s);
    }
  };
  for (const auto& c : code.compiles) note(c.log, c.pid, c.start_s);
  for (const auto& b : code.graph_breaks) note(b.log, b.pid, 0);
  ProfileProcesses processes(profile);
  bool session_clock = profile.info.format == "nsys-sqlite" && profile.info.utc_start_ns > 0;
  double begin_s = static_cast<double>(profile.info.utc_start_ns) / 1e9;
  double end_s = profile.info.utc_start_ns > 0 ? begin_s + static_cast<double>(processes.end_ns) / 1e9 : 0;
  std::set<std::string> kept;
  for (const auto& [log, f] : facts) {
    std::string reason;
    bool ours = f.pids.empty() || processes.pids.empty() ||
                std::any_of(f.pids.begin(), f.pids.end(), [&](uint32_t pid) { return processes.pids.count(pid) > 0; });
    if (!ours) {
      reason =
          "its process (pid " + pidList(f.pids) + ") is not one of this profile's (" + pidList(processes.pids) + ")";
    } else if (session_clock && f.last_s > 0 && f.last_s < begin_s - 1) {
      reason = "it compiled at " + utcTime(f.first_s) + ", before this capture began (" + utcTime(begin_s) + ")";
    } else if (end_s > 0 && f.first_s > end_s + 1) {
      reason = "it compiled at " + utcTime(f.first_s) + ", after this profile ended (" + utcTime(end_s) + ")";
    }
    if (reason.empty()) {
      kept.insert(log);
      logs.read.push_back(log);
    } else {
      logs.set_aside.push_back({log, reason});
    }
  }
  model::CompiledCode out;
  for (const auto& c : code.compiles)
    if (kept.count(c.log)) out.compiles.push_back(c);
  for (const auto& b : code.graph_breaks)
    if (kept.count(b.log)) out.graph_breaks.push_back(b);
  return out;
}

}  // namespace sightline::join
