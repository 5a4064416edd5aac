// The hook's parts read back, merged into the steps document, and a missing window explained.
#include "server/capture/capture_steps.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

namespace sightline::server::capture {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A whole number of `object[key]` within [low, high], else nullopt (absent: `fallback`).
std::optional<int64_t> intIn(const json& object, const char* key, int64_t low, int64_t high,
                             std::optional<int64_t> fallback = std::nullopt) {
  auto it = object.find(key);
  if (it == object.end()) return fallback;
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(high)))
    return std::nullopt;
  int64_t v = it->get<int64_t>();
  if (v < low || v > high) return std::nullopt;
  return v;
}

// Text of `object[key]` of at most kMaxPartText bytes ("" when absent), else nullopt.
std::optional<std::string> textIn(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return std::string();
  if (!it->is_string() || it->get_ref<const std::string&>().size() > kMaxPartText) return std::nullopt;
  return it->get<std::string>();
}

bool boolOr(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// A window's steps: at most `count`, each ending at one of the steps first..last in order,
// each time within an hour; with `input`, each may carry its wait for data (at most its host
// time). "" when they are, else what is wrong.
std::string readSteps(const json& object, const char* key, int64_t first, int64_t last, bool input,
                      std::vector<StepTime>& into) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return std::string("no list of `") + key + "` steps";
  if (static_cast<int64_t>(it->size()) > std::max<int64_t>(0, last - first + 1))
    return std::to_string(it->size()) + " " + key + " steps, more than the window's " +
           std::to_string(std::max<int64_t>(0, last - first + 1));
  int64_t previous = first - 1;
  for (const auto& entry : *it) {
    if (!entry.is_object()) return std::string("a `") + key + "` step is not an object";
    auto step = intIn(entry, "step", previous + 1, last);
    auto gpu = intIn(entry, "gpu_ns", 0, kMaxPartStepNs), host = intIn(entry, "host_ns", 0, kMaxPartStepNs);
    if (!step)
      return std::string("a `") + key + "` step's number is outside " + std::to_string(first) + ".." +
             std::to_string(last) + " or out of order";
    if (!gpu || !host) return std::string("a `") + key + "` step's time is not 0 to an hour in ns";
    auto wait = input ? intIn(entry, "input_ns", 0, *host, -1) : std::optional<int64_t>(-1);
    if (!wait) return std::string("a `") + key + "` step's input_ns is not 0 to its host_ns";
    into.push_back({*step, *gpu, *host, *wait});
    previous = *step;
  }
  return "";
}

// How the rank told its steps and the line its loop asks for batches at. "" when they are in
// range, else what is not.
std::string readStepKind(const json& value, RankPart& part) {
  auto step_by = textIn(value, "step_by");
  if (!step_by || (!step_by->empty() && *step_by != "optimizer" && *step_by != "backward"))
    return "step_by is not \"optimizer\" or \"backward\"";
  if (!step_by->empty()) part.step_by = *step_by;
  auto site = value.find("input_site");
  if (site == value.end() || site->is_null()) return "";
  if (!site->is_object()) return "input_site is not an object";
  auto path = textIn(*site, "path");
  auto line = intIn(*site, "line", 1, kMaxSourceLine);
  if (!path || path->empty() || !line)
    return "input_site is not a path (1 to " + std::to_string(kMaxPartText) + " bytes) and a line (1 to " +
           std::to_string(kMaxSourceLine) + ")";
  part.input_path = *path, part.input_line = *line;
  return "";
}

// The allocator's peaks at the end of the timed steps, where the hook read them. "" when they
// are absent or in range, else what is not.
std::string readMemoryPeak(const json& value, RankPart& part) {
  auto peak = value.find("memory_peak");
  if (peak == value.end() || peak->is_null()) return "";
  const char* problem = "memory_peak is not allocated_bytes and reserved_bytes, 0 to 2^50, allocated at most reserved";
  if (!peak->is_object()) return problem;
  int64_t allocated = intIn(*peak, "allocated_bytes", 0, kMaxPartMemoryBytes).value_or(-1);
  int64_t reserved = intIn(*peak, "reserved_bytes", 0, kMaxPartMemoryBytes).value_or(-1);
  if (allocated < 0 || reserved < allocated) return problem;
  part.peak_allocated_bytes = allocated, part.peak_reserved_bytes = reserved;
  return "";
}

// The part of one rank, every value in its range; nullopt with `problem` saying which is not.
std::optional<RankPart> rankPartOf(const json& value, const CaptureWindow& window, std::string& problem) {
  RankPart part;
  auto rank = intIn(value, "rank", 0, kMaxRanks - 1), local = intIn(value, "local_rank", 0, kMaxRanks - 1, 0);
  auto world = intIn(value, "world_size", 1, kMaxRanks, 1), pid = intIn(value, "pid", 0, INT32_MAX, 0);
  auto device = intIn(value, "device", -1, kMaxDevice, -1), hook = intIn(value, "hook_ns", 0, kMaxPartStepNs, 0);
  auto host = textIn(value, "host"), trace = textIn(value, "trace");
  if (!rank || !local || !world || !pid || !device || !hook || !host || !trace) {
    problem = "a value out of range (rank, local_rank and world_size 0 to " + std::to_string(kMaxRanks) +
              ", pid, device -1 to " + std::to_string(kMaxDevice) + ", hook_ns 0 to an hour, host and trace text)";
    return std::nullopt;
  }
  part.rank = *rank, part.local_rank = *local, part.world_size = *world, part.pid = *pid;
  part.device = *device, part.hook_ns = *hook, part.host = *host, part.trace = *trace;
  int64_t w = window.warmup, k = window.timed, m = window.profiled;
  problem = readStepKind(value, part);
  if (problem.empty()) problem = readSteps(value, "timed", w + 1, w + k, true, part.timed);
  if (problem.empty()) problem = readSteps(value, "profiled", w + k + 1, w + k + m, false, part.profiled);
  if (!problem.empty()) return std::nullopt;
  if (problem.empty()) problem = readMemoryPeak(value, part);
  for (auto [key, into] :
       {std::pair{"torch_version", &part.torch_version}, std::pair{"cuda_version", &part.cuda_version},
        std::pair{"cuda_driver", &part.cuda_driver}}) {
    auto text = textIn(value, key);
    if (!text || text->size() > 64) problem = std::string(key) + " is not text of at most 64 bytes";
    if (text) *into = text->substr(0, 64);
  }
  if (!problem.empty()) return std::nullopt;
  // A trace is a file name beside the steps file, nothing else.
  if (part.trace.find('/') != std::string::npos || part.trace == "." || part.trace == "..") part.trace.clear();
  return part;
}

ProcessStatus statusOf(const json& value) {
  ProcessStatus s;
  s.pid = intIn(value, "pid", 0, INT32_MAX).value_or(0);
  s.rank = intIn(value, "rank", -1, kMaxRanks - 1).value_or(-1);
  s.torch = boolOr(value, "torch");
  s.hook = boolOr(value, "hook");
  if (auto it = value.find("cuda"); it != value.end() && it->is_boolean()) s.cuda = it->get<bool>();
  // Counts beyond what any run makes are no counts: 0.
  s.steps = intIn(value, "steps", 0, int64_t{1} << 40).value_or(0);
  s.backwards = intIn(value, "backwards", 0, int64_t{1} << 40).value_or(0);
  s.optimizers = intIn(value, "optimizers", 0, int64_t{1} << 40).value_or(0);
  s.written = boolOr(value, "written");
  s.error = textIn(value, "error").value_or("");
  if (auto it = value.find("argv"); it != value.end() && it->is_array())
    for (const auto& a : *it)
      if (a.is_string() && s.argv.size() < 4) s.argv.push_back(a.get<std::string>().substr(0, kMaxPartText));
  return s;
}

// Warnings, the first kMaxPartWarnings of them kept.
void warn(CaptureParts& out, std::string warning) {
  if (out.warnings.size() < kMaxPartWarnings)
    out.warnings.push_back(std::move(warning));
  else
    ++out.warnings_left_out;
}

bool isPartName(const std::string& name) {
  bool rank = name.rfind("rank.", 0) == 0, status = name.rfind("status.", 0) == 0;
  return (rank || status) && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0;
}

// The parts, one at a time, within the limits: whether to read a part of a size is asked
// before its bytes are read.
class PartsBuilder {
 public:
  PartsBuilder(const CaptureWindow& window, const PartLimits& limits)
      : window_(window),
        limits_(limits),
        // What the hook writes for this window, with room to spare.
        bound_(limits.base_bytes + limits.bytes_per_step * static_cast<uint64_t>(std::max(0, window.stepsNeeded()))) {}

  enum class Admit { Read, Skip, Stop };
  Admit admit(const std::string& name, uint64_t size) {
    if (read_ == limits_.parts || total_ + size > limits_.total_bytes) {
      warn(out_, "more parts than " + std::to_string(limits_.parts) + " or " +
                     std::to_string(limits_.total_bytes >> 20) + " MiB in all: " + name +
                     " and those after it are not read");
      return Admit::Stop;
    }
    if (size > bound_) {
      warn(out_, name + ": larger than the " + std::to_string(bound_) + " bytes a part of this window takes");
      return Admit::Skip;
    }
    ++read_, total_ += size;
    return Admit::Read;
  }

  void add(const std::string& name, const std::string& bytes) {
    json value = json::parse(bytes, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
      warn(out_, name + ": not a JSON object");
      return;
    }
    if (name.rfind("status.", 0) == 0) {
      out_.statuses.push_back(statusOf(value));
      return;
    }
    std::string problem;
    auto part = rankPartOf(value, window_, problem);
    if (!part) {
      warn(out_, name + ": not a rank's steps: " + problem);
      return;
    }
    if (by_rank_.count(part->rank)) {
      warn(out_, "rank " + std::to_string(part->rank) + " was written by two processes (pids " +
                     std::to_string(out_.ranks[by_rank_[part->rank]].pid) + " and " + std::to_string(part->pid) +
                     "): the first is kept");
      return;
    }
    by_rank_[part->rank] = out_.ranks.size();
    out_.ranks.push_back(std::move(*part));
  }

  void unreadable(const std::string& name) { warn(out_, name + ": unreadable"); }

  CaptureParts finish() {
    std::sort(out_.ranks.begin(), out_.ranks.end(),
              [](const RankPart& a, const RankPart& b) { return a.rank < b.rank; });
    std::sort(out_.statuses.begin(), out_.statuses.end(),
              [](const ProcessStatus& a, const ProcessStatus& b) { return a.pid < b.pid; });
    return std::move(out_);
  }

 private:
  const CaptureWindow& window_;
  const PartLimits& limits_;
  uint64_t bound_;
  CaptureParts out_;
  std::map<int64_t, size_t> by_rank_;
  size_t read_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

CaptureParts parseCaptureParts(const std::vector<PartFile>& files, const CaptureWindow& window,
                               const PartLimits& limits) {
  PartsBuilder parts(window, limits);
  for (const auto& file : files) {
    if (!isPartName(file.name)) continue;
    auto admit = parts.admit(file.name, file.bytes.size());
    if (admit == PartsBuilder::Admit::Stop) break;
    if (admit == PartsBuilder::Admit::Read) parts.add(file.name, file.bytes);
  }
  return parts.finish();
}

CaptureParts readCaptureParts(const std::string& folder, const CaptureWindow& window, const PartLimits& limits) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    // Only the parts, listed by name: a folder of many other files costs nothing.
    if (isPartName(it->path().filename().string()) && it->is_regular_file(ec)) files.push_back(it->path());
    if (files.size() > limits.parts) break;  // one past the bound: the builder says so
  }
  std::sort(files.begin(), files.end());
  PartsBuilder parts(window, limits);
  for (const auto& path : files) {
    std::string name = path.filename().string();
    auto size = fs::file_size(path, ec);
    if (ec) {
      parts.unreadable(name);
      ec.clear();
      continue;
    }
    auto admit = parts.admit(name, size);
    if (admit == PartsBuilder::Admit::Stop) break;
    if (admit == PartsBuilder::Admit::Skip) continue;
    std::ifstream in(path, std::ios::binary);
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    parts.add(name, bytes);
  }
  return parts.finish();
}

namespace {

nlohmann::ordered_json stepsJson(const std::vector<StepTime>& steps) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& s : steps) {
    nlohmann::ordered_json one = {{"step", s.step}, {"gpu_ns", s.gpu_ns}, {"host_ns", s.host_ns}};
    if (s.input_ns >= 0) one["input_ns"] = s.input_ns;
    out.push_back(std::move(one));
  }
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
    one["step_by"] = r.step_by;
    if (r.input_line > 0) one["input_site"] = {{"path", r.input_path}, {"line", r.input_line}};
    one["timed"] = stepsJson(r.timed);
    one["profiled"] = stepsJson(r.profiled);
    one["hook_ns"] = r.hook_ns;
    for (auto [key, value] : {std::pair{"torch_version", &r.torch_version}, std::pair{"cuda_version", &r.cuda_version},
                              std::pair{"cuda_driver", &r.cuda_driver}})
      if (!value->empty()) one[key] = *value;
    if (r.peak_allocated_bytes >= 0)
      one["memory_peak"] = {{"allocated_bytes", r.peak_allocated_bytes}, {"reserved_bytes", r.peak_reserved_bytes}};
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

namespace {

// The middle value, or the mean of the two middle ones; `values` not empty.
int64_t middleOf(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int64_t medianStepNs(const std::vector<StepTime>& steps) {
  if (steps.empty()) return 0;
  bool gpu = std::any_of(steps.begin(), steps.end(), [](const StepTime& s) { return s.gpu_ns > 0; });
  std::vector<int64_t> values;
  values.reserve(steps.size());
  for (const auto& s : steps) values.push_back(gpu ? s.gpu_ns : s.host_ns);
  return middleOf(std::move(values));
}

int64_t medianInputNs(const std::vector<StepTime>& steps) {
  std::vector<int64_t> values;
  for (const auto& s : steps)
    if (s.input_ns >= 0) values.push_back(s.input_ns);
  return values.empty() ? -1 : middleOf(std::move(values));
}

namespace {

// A window of at most `window`'s counts that `n` steps hold, or nullopt when none does (one
// warm-up, one timed and one profiled step at least).
std::optional<CaptureWindow> windowThatFits(const CaptureWindow& window, int64_t n) {
  CaptureWindow fit = window;
  int64_t profiled = window.profiled > 0 ? std::min<int64_t>(window.profiled, std::max<int64_t>(1, n / 5)) : 0;
  int64_t warmup = std::min<int64_t>(window.warmup, std::max<int64_t>(1, n / 5));
  int64_t timed = std::min<int64_t>(window.timed, n - warmup - profiled);
  if (timed < 1) return std::nullopt;
  fit.warmup = static_cast<int>(warmup), fit.timed = static_cast<int>(timed), fit.profiled = static_cast<int>(profiled);
  return fit;
}

std::string windowOptions(const CaptureWindow& fit) {
  std::string out = "--warmup " + std::to_string(fit.warmup) + " --timed " + std::to_string(fit.timed);
  if (fit.profiled > 0) out += " --steps " + std::to_string(fit.profiled);
  return out;
}

// " (5 warm-up, 20 timed, 5 profiled)"
std::string windowCounts(const CaptureWindow& window) {
  std::string out = " (" + std::to_string(window.warmup) + " warm-up, " + std::to_string(window.timed) + " timed";
  if (window.profiled > 0) out += ", " + std::to_string(window.profiled) + " profiled";
  return out + ")";
}

// The fewest and most of a count over the processes.
std::pair<int64_t, int64_t> countRange(const std::vector<const ProcessStatus*>& statuses,
                                       int64_t ProcessStatus::*count) {
  int64_t fewest = statuses.front()->*count, most = fewest;
  for (const auto* s : statuses) {
    fewest = std::min(fewest, s->*count);
    most = std::max(most, s->*count);
  }
  return {fewest, most};
}

std::string countText(std::pair<int64_t, int64_t> range) {
  return std::to_string(range.first) + (range.second != range.first ? " to " + std::to_string(range.second) : "");
}

// No optimizer step, and too few backward() calls for a window stepped by them.
std::string explainTooFewBackwards(const CaptureWindow& window, const std::vector<const ProcessStatus*>& calling) {
  auto range = countRange(calling, &ProcessStatus::backwards);
  std::ostringstream out;
  for (const auto* s : calling)
    if (!s->error.empty()) out << processName(*s) << ": " << s->error << "\n";
  out << "no optimizer step was seen, and the run ended after " << countText(range) << " backward() call"
      << (range.second == 1 ? "" : "s") << ". A loop that steps no optimizer is stepped by backward() once "
      << kBackwardWait << " calls have passed with none, so the window of " << window.stepsNeeded() << " steps"
      << windowCounts(window) << " needs " << kBackwardWait + window.stepsNeeded() << " calls.";
  if (auto fit = windowThatFits(window, range.first - kBackwardWait))
    out << "\nA window that fits " << range.first << " calls: " << windowOptions(*fit)
        << " (or run the command longer).";
  else
    out << "\nThe window needs at least " << kBackwardWait + (window.profiled > 0 ? 3 : 2) << " backward() calls ("
        << kBackwardWait << ", then one warm-up, one timed" << (window.profiled > 0 ? ", one profiled" : "")
        << " step): run the command longer.";
  return out.str();
}

std::string explainNoStep(const std::vector<const ProcessStatus*>& with_torch) {
  std::ostringstream out;
  out << "no optimizer step was seen. What the hook saw:\n";
  for (const auto* s : with_torch) {
    const char* cuda = !s->cuda ? "not asked" : (*s->cuda ? "available" : "not available");
    out << "  " << processName(*s) << ": torch imported, " << (s->hook ? "step hook on" : "step hook off") << ", CUDA "
        << cuda << ", 0 steps, 0 backward() calls";
    if (!s->error.empty()) out << " (" << s->error << ")";
    out << "\n";
  }
  out << "The hook counts torch.optim optimizer steps (optimizer.step(), also through GradScaler or\n"
         "a learning-rate scheduler) and, in a loop that steps none (a hand-written update, an optimizer\n"
         "of another library), each backward() (Tensor.backward(), torch.autograd.backward()). This run\n"
         "made neither, or made them where the hook does not see them (a thread other than the main one).";
  return out.str();
}

}  // namespace

std::string explainMissingWindow(const CaptureWindow& window, const std::vector<ProcessStatus>& statuses) {
  std::ostringstream out;
  if (statuses.empty()) {
    out << "no Python process ran the capture hook. The command must start Python (python, torchrun,\n"
           "accelerate launch ...) without -I or -S, which skip sitecustomize and PYTHONPATH.";
    return out.str();
  }
  std::vector<const ProcessStatus*> with_torch, stepping, calling;
  for (const auto& s : statuses) {
    if (s.torch) with_torch.push_back(&s);
    if (s.steps > 0) stepping.push_back(&s);
    if (s.steps == 0 && s.backwards > 0) calling.push_back(&s);
  }
  if (with_torch.empty()) {
    out << statuses.size() << " Python process" << (statuses.size() == 1 ? "" : "es")
        << " ran with the hook, and none imported torch.";
    return out.str();
  }
  if (stepping.empty()) return calling.empty() ? explainNoStep(with_torch) : explainTooFewBackwards(window, calling);
  auto range = countRange(stepping, &ProcessStatus::steps);
  for (const auto* s : stepping)
    if (!s->error.empty()) out << processName(*s) << ": " << s->error << "\n";
  out << "the run ended after " << countText(range) << " optimizer step" << (range.second == 1 ? "" : "s")
      << ", before the window of " << window.stepsNeeded() << windowCounts(window) << " was complete.";
  if (auto fit = windowThatFits(window, range.first))
    out << "\nA window that fits " << range.first << " steps: " << windowOptions(*fit)
        << " (or run the command longer).";
  else
    out << "\nThe window needs at least " << (window.profiled > 0 ? 3 : 2)
        << " steps (one warm-up, one timed, one profiled): run the command longer.";
  return out.str();
}

namespace {

std::string formatMs(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

void writeRanksSummary(const CaptureWindow& window, const std::vector<RankPart>& ranks, std::ostream& out) {
  size_t shown = 0;
  int64_t worst_hook_share_ppm = 0;
  for (const auto& r : ranks) {
    int64_t timed = medianStepNs(r.timed);
    std::vector<StepTime> host_only = r.timed;
    for (auto& s : host_only) s.gpu_ns = 0;
    int64_t host = medianStepNs(host_only);
    // Every value was read within an hour: no product here passes int64.
    int64_t share_ppm = host > 0 ? r.hook_ns * 1000000 / host : 0;
    worst_hook_share_ppm = std::max(worst_hook_share_ppm, share_ppm);
    if (++shown > 8) continue;
    out << "sightline capture: rank " << r.rank << ": " << r.timed.size() << " steps";
    if (r.step_by == "backward") out << " (each a backward(): no optimizer step was seen)";
    out << " without a profiler, median " << formatMs(timed) << " (host " << formatMs(host) << ")";
    if (int64_t input = medianInputNs(r.timed); input >= 0) {
      out << ", waiting for data " << formatMs(input);
      if (r.input_line > 0) out << " at " << r.input_path << ":" << r.input_line;
    }
    if (!r.profiled.empty()) {
      int64_t profiled = medianStepNs(r.profiled);
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.2fx", timed > 0 ? static_cast<double>(profiled) / timed : 0.0);
      out << "; " << r.profiled.size() << " under " << window.profiler << ", median " << formatMs(profiled) << " ("
          << ratio << ")";
    }
    char hook[64];
    std::snprintf(hook, sizeof hook, "%.1f us a step (%.3f%%)", static_cast<double>(r.hook_ns) / 1e3,
                  static_cast<double>(share_ppm) / 1e4);
    out << "; the hook " << hook << "\n";
  }
  if (shown > 8) out << "sightline capture: ... and " << shown - 8 << " more ranks\n";
  if (worst_hook_share_ppm > 10000)
    out << "sightline capture: the hook took over 1% of a step: the measured step is that much too long\n";
}

}  // namespace sightline::server::capture
