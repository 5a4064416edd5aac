// Steps files and step logs into measurements: every value checked, nothing guessed.
#include "server/workspace/steps_file.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "analysis/ingest/step_log.h"
#include "server/workspace/local_files.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kMaxStepsFileBytes = 64ull << 20;
// Timed steps kept per process for the regression gate (the median reads them all).
constexpr size_t kMaxTimedSteps = 100000;
constexpr int64_t kMaxStepNs = 3'600'000'000'000;      // an hour: no training step is longer
constexpr int64_t kMaxMemoryBytes = int64_t{1} << 50;  // no GPU holds a petabyte

// The middle value, or the mean of the two middle ones, as capture's summary line gives it.
int64_t medianOf(std::vector<int64_t> v) {
  auto middle = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), middle, v.end());
  if (v.size() % 2) return *middle;
  return (*std::max_element(v.begin(), middle) + *middle) / 2;  // both within an hour: no overflow
}

// A step's time in ns from an entry's field, or -1 when it is not one.
int64_t stepNs(const json& entry, const char* key) {
  if (!entry.is_object() || !entry.contains(key)) return -1;
  const json& v = entry[key];
  if (!v.is_number_integer() && !v.is_number_unsigned()) return -1;
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMaxStepNs)) return -1;
  int64_t ns = v.get<int64_t>();
  return ns > 0 && ns <= kMaxStepNs ? ns : -1;
}

// A wait for data in ns (0 is one), or -1 when the entry has none in range.
int64_t waitNs(const json& entry) {
  if (!entry.is_object()) return -1;
  auto it = entry.find("input_ns");
  if (it == entry.end() || !it->is_number_integer()) return -1;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(kMaxStepNs)) return -1;
  int64_t ns = it->get<int64_t>();
  return ns >= 0 && ns <= kMaxStepNs ? ns : -1;
}

constexpr size_t kMaxText = 4096;  // a host or a path, in bytes: longer ones are not read

// `object[key]` as text of at most kMaxText bytes, else "".
std::string textOf(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get_ref<const std::string&>().size() > kMaxText) return "";
  return it->get<std::string>();
}

// `object[key]` as a whole number in [low, high], else `otherwise`.
int64_t intOf(const json& object, const char* key, int64_t low, int64_t high, int64_t otherwise) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return otherwise;
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(high)) return otherwise;
  int64_t v = it->get<int64_t>();
  return v >= low && v <= high ? v : otherwise;
}

// What the hook wrote beside the steps of each rank: how steps were told (the ranks' common
// "step_by", else ""), the loop's wait for data (the median of every rank's timed steps') and
// its line (the first rank's that has one), each process's pid, rank and host.
void readLoopFacts(const json& ranks, model::StepMeasurement& m) {
  std::vector<int64_t> waits;
  bool first_kind = true;
  for (const auto& rank : ranks) {
    if (!rank.is_object()) continue;
    model::StepMeasurement::Process process;
    process.pid = static_cast<uint32_t>(intOf(rank, "pid", 0, UINT32_MAX, 0));
    process.rank = static_cast<int32_t>(intOf(rank, "rank", 0, INT32_MAX, -1));
    process.host = textOf(rank, "host");
    if (auto timed = rank.find("timed"); timed != rank.end() && timed->is_array())
      for (const auto& entry : *timed) {
        int64_t ns = stepNs(entry, "gpu_ns");
        if (ns < 0) ns = stepNs(entry, "host_ns");
        if (ns <= 0 || process.timed_ns.size() >= kMaxTimedSteps) continue;
        process.timed_ns.push_back(ns);
        process.timed_input_ns.push_back(waitNs(entry));
      }
    // The input waits only where every timed step has one.
    if (std::find(process.timed_input_ns.begin(), process.timed_input_ns.end(), -1) != process.timed_input_ns.end())
      process.timed_input_ns.clear();
    if (auto peak = rank.find("memory_peak"); peak != rank.end() && peak->is_object()) {
      int64_t allocated = intOf(*peak, "allocated_bytes", 0, kMaxMemoryBytes, -1);
      int64_t reserved = intOf(*peak, "reserved_bytes", 0, kMaxMemoryBytes, -1);
      if (allocated >= 0 && reserved >= allocated)
        process.peak_allocated_bytes = allocated, process.peak_reserved_bytes = reserved;
    }
    process.torch_version = textOf(rank, "torch_version").substr(0, 64);
    process.cuda_version = textOf(rank, "cuda_version").substr(0, 64);
    process.cuda_driver = textOf(rank, "cuda_driver").substr(0, 64);
    m.processes.push_back(std::move(process));
    std::string kind = textOf(rank, "step_by");
    m.step_by = first_kind || kind == m.step_by ? kind : "";
    first_kind = false;
    if (auto site = rank.find("input_site"); m.input_line == 0 && site != rank.end() && site->is_object()) {
      std::string path = textOf(*site, "path");
      int64_t line = intOf(*site, "line", 1, INT32_MAX, 0);
      if (!path.empty() && line > 0) m.input_path = std::move(path), m.input_line = static_cast<int32_t>(line);
    }
    if (auto timed = rank.find("timed"); timed != rank.end() && timed->is_array())
      for (const auto& entry : *timed)
        if (int64_t wait = waitNs(entry); wait >= 0) waits.push_back(wait);
  }
  if (m.step_by != "optimizer" && m.step_by != "backward") m.step_by.clear();
  m.input_ns = waits.empty() ? -1 : medianOf(std::move(waits));
}

// A step log is read a megabyte at a time, and no more than this in all.
constexpr size_t kStepLogChunkBytes = size_t{1} << 20;
constexpr uint64_t kMaxStepLogBytes = uint64_t{8} << 30;

}  // namespace

std::string stepsFileFor(const std::string& profile_path) {
  fs::path p(profile_path);
  std::string name = p.filename().string();
  for (const char* ext :
       {".nsys-rep", ".sqlite", ".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json", ".pickle", ".qdrep"}) {
    std::string_view e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
      break;
    }
  }
  // One trace per rank (NAME.rank3): the run's one steps file.
  if (size_t dot = name.rfind(".rank"); dot != std::string::npos && dot + 5 < name.size() &&
                                        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot + 5), name.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; }))
    name.resize(dot);
  return (p.parent_path() / (name + ".steps.json")).string();
}

std::optional<model::StepMeasurement> readStepsFile(const std::string& path, std::string& error) {
  auto text = readTextFile(path, kMaxStepsFileBytes);
  if (!text) {
    error = path + ": cannot read the steps file (or it is over 64 MiB)";
    return std::nullopt;
  }
  json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object() || doc.value("sightline_steps", json()) != 1 || !doc.contains("ranks") ||
      !doc["ranks"].is_array()) {
    error = path + ": not a steps file of sightline capture (`sightline_steps: 1` and `ranks`)";
    return std::nullopt;
  }
  model::StepMeasurement m;
  m.source = model::StepMeasurement::Source::Measured;
  m.from = fs::path(path).filename().string();
  if (auto p = doc.find("profiler"); p != doc.end() && p->is_string()) {
    std::string profiler = p->get<std::string>();
    if (profiler == "nsys" || profiler == "torch" || profiler == "none") m.profiler = profiler;
  }
  std::vector<int64_t> all;
  m.ranks = 0;
  for (const auto& rank : doc["ranks"]) {
    if (!rank.is_object() || !rank.contains("timed") || !rank["timed"].is_array()) continue;
    std::vector<int64_t> steps;
    for (const auto& entry : rank["timed"]) {
      int64_t ns = stepNs(entry, "gpu_ns");
      if (ns < 0) ns = stepNs(entry, "host_ns");
      if (ns > 0) steps.push_back(ns);
    }
    if (steps.empty()) continue;
    ++m.ranks;
    m.rank_median_ns.push_back(medianOf(steps));
    all.insert(all.end(), steps.begin(), steps.end());
  }
  if (all.empty()) {
    error =
        path + ": no rank has timed steps (the run ended before the steps sightline capture times; see its message)";
    return std::nullopt;
  }
  m.median_ns = medianOf(all);
  m.min_ns = *std::min_element(all.begin(), all.end());
  m.max_ns = *std::max_element(all.begin(), all.end());
  m.steps = static_cast<int64_t>(all.size());
  readLoopFacts(doc["ranks"], m);
  if (auto command = doc.find("command"); command != doc.end() && command->is_array())
    for (const auto& word : *command)
      if (word.is_string() && m.command.size() < 256) m.command.push_back(word.get<std::string>().substr(0, 4096));
  return m;
}

std::optional<model::StepMeasurement> findStepsFile(const std::string& profile_path, std::string& error) {
  error.clear();
  std::string path = stepsFileFor(profile_path);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  return readStepsFile(path, error);
}

namespace {

// The log streamed through the reader: only a regular file (a device such as /dev/zero never
// ends, a pipe may not), read in pieces, never held whole.
std::optional<ingest::StepLog> streamStepLog(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    error = path + ": cannot read the step log: " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st = {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = path + ": not a regular file (a folder, a device or a pipe): give the log as a file";
    return std::nullopt;
  }
  ingest::StepLogReader reader;
  std::vector<char> buffer(kStepLogChunkBytes);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = path + ": cannot read the step log: " + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0 || total >= kMaxStepLogBytes) break;  // what is past the bound is left unread
    total += static_cast<uint64_t>(n);
    reader.feed(std::string_view(buffer.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return reader.finish();
}

}  // namespace

std::optional<model::StepMeasurement> readStepLog(const std::string& path, std::string& error) {
  auto read = streamStepLog(path, error);
  if (!read) return std::nullopt;
  const ingest::StepLog& log = *read;
  if (log.median_ns <= 0) {
    error = path +
            ": no step times found: a line per step with its time (`iter 12: loss 4.2, time 17.2ms`, "
            "`Epoch: [0][ 10/5005] Time 0.220`, `step 12 ... 0.123 s`), means over batches (`200/ 2983 batches | "
            "ms/batch 45.03`, tqdm's `450/1000 [00:30<00:36, 15.00it/s]`), Hugging Face's `train_steps_per_second` or "
            "torchtitan's `tps` with its batch and sequence length";
    if (log.encoding != "UTF-8") error += " (the log was read as " + log.encoding + ")";
    if (log.set_aside > 0)
      error += " (" + std::to_string(log.set_aside) +
               (log.set_aside == 1 ? " line with a time was" : " lines with a time were") +
               " set aside: epoch totals and evaluation are not a training step)";
    return std::nullopt;
  }
  model::StepMeasurement m;
  m.source = model::StepMeasurement::Source::StepLog;
  m.from = fs::path(path).filename().string();
  m.median_ns = log.median_ns, m.min_ns = log.min_ns, m.max_ns = log.max_ns;
  m.steps = log.steps;
  m.log_format = log.format;
  m.log_lines = log.lines;
  m.log_set_aside = log.set_aside;
  m.averaged = log.kind == ingest::StepLogKind::Averaged || log.kind == ingest::StepLogKind::Throughput;
  m.whole_run = log.kind == ingest::StepLogKind::WholeRun;
  return m;
}

}  // namespace sightline::server
