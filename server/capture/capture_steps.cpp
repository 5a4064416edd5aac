// The hook's parts read back, merged into the steps document, and a missing window explained.
#include "server/capture/capture_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

namespace sightline::server::capture {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Parts are small; one larger than this is not the hook's.
constexpr std::uintmax_t kMaxPartBytes = 64u << 20;

std::optional<json> readJson(const fs::path& path, std::string& problem) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxPartBytes) {
    problem = path.filename().string() + ": unreadable or too large";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    problem = path.filename().string() + ": not a JSON object";
    return std::nullopt;
  }
  return value;
}

int64_t intOr(const json& object, const char* key, int64_t fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::string stringOr(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool boolOr(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

bool readSteps(const json& object, const char* key, std::vector<StepTime>& into) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return false;
  for (const auto& entry : *it) {
    if (!entry.is_object()) return false;
    StepTime s{intOr(entry, "step", -1), intOr(entry, "gpu_ns", -1), intOr(entry, "host_ns", -1)};
    if (s.step < 0 || s.gpu_ns < 0 || s.host_ns < 0) return false;
    into.push_back(s);
  }
  return true;
}

std::optional<RankPart> rankPartOf(const json& value) {
  RankPart part;
  part.rank = intOr(value, "rank", -1);
  part.local_rank = intOr(value, "local_rank", 0);
  part.world_size = intOr(value, "world_size", 1);
  part.host = stringOr(value, "host");
  part.pid = intOr(value, "pid", 0);
  part.device = intOr(value, "device", -1);
  part.hook_ns = intOr(value, "hook_ns", 0);
  part.trace = stringOr(value, "trace");
  if (part.rank < 0 || !readSteps(value, "timed", part.timed) || !readSteps(value, "profiled", part.profiled))
    return std::nullopt;
  // A trace is a file name beside the steps file, nothing else.
  if (part.trace.find('/') != std::string::npos || part.trace == "." || part.trace == "..") part.trace.clear();
  return part;
}

ProcessStatus statusOf(const json& value) {
  ProcessStatus s;
  s.pid = intOr(value, "pid", 0);
  s.rank = intOr(value, "rank", -1);
  s.torch = boolOr(value, "torch");
  s.hook = boolOr(value, "hook");
  if (auto it = value.find("cuda"); it != value.end() && it->is_boolean()) s.cuda = it->get<bool>();
  s.steps = intOr(value, "steps", 0);
  s.optimizers = intOr(value, "optimizers", 0);
  s.written = boolOr(value, "written");
  s.error = stringOr(value, "error");
  if (auto it = value.find("argv"); it != value.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string()) s.argv.push_back(a.get<std::string>());
  return s;
}

nlohmann::ordered_json stepsJson(const std::vector<StepTime>& steps) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : steps) out.push_back({{"step", s.step}, {"gpu_ns", s.gpu_ns}, {"host_ns", s.host_ns}});
  return out;
}

std::string processName(const ProcessStatus& s) {
  std::string name = "pid " + std::to_string(s.pid);
  if (s.rank >= 0) name = "rank " + std::to_string(s.rank) + " (" + name + ")";
  std::string args;
  for (const auto& a : s.argv) args += (args.empty() ? "" : " ") + a;
  if (!args.empty()) name += ": " + args;
  return name;
}

}  // namespace

CaptureParts readCaptureParts(const std::string& folder) {
  CaptureParts out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::map<int64_t, size_t> by_rank;
  for (const auto& path : files) {
    std::string name = path.filename().string();
    bool rank = name.rfind("rank.", 0) == 0, status = name.rfind("status.", 0) == 0;
    if ((!rank && !status) || path.extension() != ".json") continue;
    std::string problem;
    auto value = readJson(path, problem);
    if (!value) {
      out.warnings.push_back(problem);
      continue;
    }
    if (status) {
      out.statuses.push_back(statusOf(*value));
      continue;
    }
    auto part = rankPartOf(*value);
    if (!part) {
      out.warnings.push_back(name + ": not a rank's steps");
      continue;
    }
    if (by_rank.count(part->rank)) {
      out.warnings.push_back("rank " + std::to_string(part->rank) + " was written by two processes (pids " +
                             std::to_string(out.ranks[by_rank[part->rank]].pid) + " and " + std::to_string(part->pid) +
                             "): the first is kept");
      continue;
    }
    by_rank[part->rank] = out.ranks.size();
    out.ranks.push_back(std::move(*part));
  }
  std::sort(out.ranks.begin(), out.ranks.end(), [](const RankPart& a, const RankPart& b) { return a.rank < b.rank; });
  std::sort(out.statuses.begin(), out.statuses.end(),
            [](const ProcessStatus& a, const ProcessStatus& b) { return a.pid < b.pid; });
  return out;
}

nlohmann::ordered_json stepsDocument(const CaptureWindow& window, const std::vector<std::string>& command,
                                     const std::vector<std::string>& profiles, const std::vector<RankPart>& ranks) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["sightline_steps"] = 1;
  doc["profiler"] = window.profiler;
  doc["command"] = command;
  doc["warmup"] = window.warmup;
  doc["timed"] = window.timed;
  doc["profiled"] = window.profiled;
  doc["profiles"] = profiles;
  nlohmann::ordered_json out_ranks = nlohmann::ordered_json::array();
  for (const auto& r : ranks) {
    nlohmann::ordered_json one = nlohmann::ordered_json::object();
    one["rank"] = r.rank;
    one["local_rank"] = r.local_rank;
    one["world_size"] = r.world_size;
    one["host"] = r.host;
    one["pid"] = r.pid;
    one["device"] = r.device;
    one["timed"] = stepsJson(r.timed);
    one["profiled"] = stepsJson(r.profiled);
    one["hook_ns"] = r.hook_ns;
    out_ranks.push_back(std::move(one));
  }
  doc["ranks"] = std::move(out_ranks);
  return doc;
}

std::string formatStepsDocument(const nlohmann::ordered_json& doc) {
  // Scalars and short arrays on their key's line; the ranks one object each, their steps one a line.
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : doc.items()) {
    out += first ? "" : ",\n ";
    first = false;
    out += nlohmann::ordered_json(key).dump() + ": ";
    if (key != "ranks" || !value.is_array()) {
      out += value.dump();
      continue;
    }
    out += "[";
    for (size_t r = 0; r < value.size(); ++r) {
      out += r ? ",\n  {" : "\n  {";
      bool first_field = true;
      for (const auto& [field, v] : value[r].items()) {
        bool own_line = v.is_array() || field == "hook_ns";
        out += first_field ? "" : (own_line ? ",\n   " : ", ");
        first_field = false;
        out += nlohmann::ordered_json(field).dump() + ": ";
        if (v.is_array() && !v.empty()) {
          out += "[";
          for (size_t i = 0; i < v.size(); ++i) out += (i ? ",\n    " : "\n    ") + v[i].dump();
          out += "]";
        } else {
          out += v.dump();
        }
      }
      out += "}";
    }
    out += value.empty() ? "]" : "\n ]";
  }
  return out + "}\n";
}

int64_t medianStepNs(const std::vector<StepTime>& steps) {
  if (steps.empty()) return 0;
  bool gpu = std::any_of(steps.begin(), steps.end(), [](const StepTime& s) { return s.gpu_ns > 0; });
  std::vector<int64_t> values;
  values.reserve(steps.size());
  for (const auto& s : steps) values.push_back(gpu ? s.gpu_ns : s.host_ns);
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string explainMissingWindow(const CaptureWindow& window, const std::vector<ProcessStatus>& statuses) {
  std::ostringstream out;
  if (statuses.empty()) {
    out << "no Python process ran the capture hook. The command must start Python (python, torchrun,\n"
           "accelerate launch ...) without -I or -S, which skip sitecustomize and PYTHONPATH.";
    return out.str();
  }
  std::vector<const ProcessStatus*> with_torch, stepping;
  for (const auto& s : statuses) {
    if (s.torch) with_torch.push_back(&s);
    if (s.steps > 0) stepping.push_back(&s);
  }
  if (with_torch.empty()) {
    out << statuses.size() << " Python process" << (statuses.size() == 1 ? "" : "es")
        << " ran with the hook, and none imported torch.";
    return out.str();
  }
  if (stepping.empty()) {
    out << "no optimizer step was seen. What the hook saw:\n";
    for (const auto* s : with_torch) {
      const char* cuda = !s->cuda ? "not asked" : (*s->cuda ? "available" : "not available");
      out << "  " << processName(*s) << ": torch imported, " << (s->hook ? "step hook on" : "step hook off")
          << ", CUDA " << cuda << ", 0 steps";
      if (!s->error.empty()) out << " (" << s->error << ")";
      out << "\n";
    }
    out << "The hook counts torch.optim optimizer steps (optimizer.step(), also through GradScaler or\n"
           "a learning-rate scheduler). A loop that steps no torch.optim.Optimizer (a hand-written update,\n"
           "an optimizer of another library) gives it nothing to count.";
    return out.str();
  }
  int64_t fewest = stepping.front()->steps, most = fewest;
  for (const auto* s : stepping) {
    fewest = std::min(fewest, s->steps);
    most = std::max(most, s->steps);
  }
  for (const auto* s : stepping)
    if (!s->error.empty()) out << processName(*s) << ": " << s->error << "\n";
  out << "the run ended after " << fewest;
  if (most != fewest) out << " to " << most;
  out << " optimizer step" << (most == 1 ? "" : "s") << ", before the window of " << window.stepsNeeded() << " ("
      << window.warmup << " warm-up, " << window.timed << " timed";
  if (window.profiled > 0) out << ", " << window.profiled << " profiled";
  out << ") was complete.";
  int64_t n = fewest;
  int64_t profiled = window.profiled > 0 ? std::min<int64_t>(window.profiled, std::max<int64_t>(1, n / 5)) : 0;
  int64_t warmup = std::min<int64_t>(window.warmup, std::max<int64_t>(1, n / 5));
  int64_t timed = std::min<int64_t>(window.timed, n - warmup - profiled);
  if (timed >= 1) {
    out << "\nA window that fits " << n << " steps: --warmup " << warmup << " --timed " << timed;
    if (window.profiled > 0) out << " --steps " << profiled;
    out << " (or run the command longer).";
  } else {
    out << "\nThe window needs at least " << (window.profiled > 0 ? 3 : 2)
        << " steps (one warm-up, one timed, one profiled): run the command longer.";
  }
  return out.str();
}

}  // namespace sightline::server::capture
