// Profile loading by file name.
#include "analysis/ingest/profile_loader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>

#include "analysis/ingest/memory_snapshot_reader.h"
#include "analysis/ingest/plausible_times.h"

namespace sightline::ingest {
namespace fs = std::filesystem;

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool isMemorySnapshotName(const std::string& path) { return endsWith(path, ".pickle") || endsWith(path, ".pkl"); }

std::string captureAdvice() {
  return "capture with Python backtraces and autograd ranges, then export with blobs:\n"
         "  nsys profile -t cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda --cudabacktrace=all \\\n"
         "      --capture-range=cudaProfilerApi -o run python train.py\n"
         "  nsys export --type sqlite --include-blobs=true -o run.sqlite run.nsys-rep\n"
         "or with the PyTorch profiler: torch.profiler.profile(activities=[CPU, CUDA], with_stack=True) and\n"
         "  prof.export_chrome_trace(\"run.pt.trace.json.gz\")";
}

std::string captureAdvice(const model::ProfileInfo& info) {
  auto has = [&](const char* capability) {
    return std::find(info.capabilities.begin(), info.capabilities.end(), capability) != info.capabilities.end();
  };
  if (info.format == "memory-snapshot") {
    if (has("memory-stacks"))
      return "the snapshot's stacks reach none of the script's lines: name the script that ran, or map the "
             "snapshot's paths onto it with --map FROM=TO";
    return "the snapshot recorded no stacks; record its history with them:\n"
           "  torch.cuda.memory._record_memory_history(max_entries=100000, stacks=\"python\")\n"
           "  torch.cuda.memory._dump_snapshot(\"memory.pickle\")";
  }
  if (info.format == "kineto-json") {
    if (has("python-functions") || has("call-stacks"))
      return "the trace's Python stacks reach none of the script's lines: name the script that ran, or map the "
             "trace's paths onto it with --map FROM=TO";
    return "the trace has no Python stacks; record it with them:\n"
           "  torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True)\n"
           "  prof.export_chrome_trace(\"run.pt.trace.json.gz\")";
  }
  if (info.format != "nsys-sqlite") return captureAdvice();
  if (has("python-backtraces") && !info.has_blobs)
    return "the export has Python backtrace marks but not their frames; export the report again with them:\n"
           "  nsys export --type sqlite --include-blobs=true -o run.sqlite run.nsys-rep";
  if (has("python-backtraces"))
    return "the profile's Python backtraces reach none of the script's lines: name the script that ran, or map "
           "the profile's paths onto it with --map FROM=TO";
  // Only what is missing: a capture with autograd ranges already had nvtx traced.
  std::string flags = has("autograd-nvtx") ? "--python-backtrace=cuda --cudabacktrace=all"
                                           : "--python-backtrace=cuda --cudabacktrace=all --pytorch=autograd-nvtx "
                                             "(with nvtx in its --trace list)";
  return "the capture has no Python backtraces: profile again adding " + flags +
         " to its nsys profile command, then export the frames with it:\n"
         "  nsys export --type sqlite --include-blobs=true -o run.sqlite run.nsys-rep";
}

namespace {

// A memory snapshot is a profile of memory alone: no activities, its trace and blocks in
// `memory`.
LoadResult loadMemorySnapshot(const std::string& path) {
  std::string error;
  auto snapshot = readMemorySnapshot(path, error);
  if (!snapshot) return {std::nullopt, path + ": " + error};
  model::Profile profile;
  profile.info.format = "memory-snapshot";
  profile.info.capabilities.push_back("memory-history");
  bool frames = false;
  for (const auto& e : snapshot->events) frames = frames || e.stack != 0;
  if (frames) profile.info.capabilities.push_back("memory-stacks");
  profile.info.warnings = snapshot->warnings;
  profile.memory = std::move(*snapshot);
  return {std::move(profile), ""};
}

LoadResult plausible(LoadResult loaded, const std::string& path) {
  if (loaded.profile) {
    dropImplausibleTimes(*loaded.profile);
    completeIdentity(*loaded.profile, fs::path(path).filename().string());
  }
  return loaded;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

char lowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// tensorboard_trace_handler's default worker name, `HOST_PID`, when PID is one of the trace's.
std::string hostInTraceName(std::string_view name, const model::Profile& p) {
  if (name.find(".pt.trace.json") == std::string_view::npos) return "";
  std::string_view worker = name.substr(0, name.find('.'));
  size_t cut = worker.rfind('_');
  if (cut == std::string_view::npos || cut == 0 || cut + 1 == worker.size()) return "";
  std::string_view digits = worker.substr(cut + 1);
  if (digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), isDigit)) return "";
  auto pid = static_cast<uint32_t>(std::stoul(std::string(digits)));
  bool ours =
      std::any_of(p.activities.begin(), p.activities.end(), [&](const auto& a) { return a.pid == pid; }) ||
      std::any_of(p.info.processes.begin(), p.info.processes.end(), [&](const auto& pr) { return pr.pid == pid; });
  return ours ? std::string(worker.substr(0, cut)) : "";
}

}  // namespace

LoadResult loadProfile(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {std::nullopt, path + ": no such file"};
  // Only regular files: a FIFO would block the reader forever, a directory is no profile.
  if (!fs::is_regular_file(path, ec))
    return {std::nullopt, path + (fs::is_directory(path, ec) ? ": a directory, not a profile file"
                                                             : ": not a regular file (a pipe or device?)")};
  if (endsWith(path, ".nsys-rep"))
    return {std::nullopt, path +
                              ": an Nsight Systems report must be exported first:\n  nsys export --type sqlite "
                              "--include-blobs=true -o run.sqlite " +
                              path};
  if (isMemorySnapshotName(path)) return loadMemorySnapshot(path);
  if (endsWith(path, ".json") || endsWith(path, ".json.gz") || endsWith(path, ".gz") ||
      (!endsWith(path, ".sqlite") && looksLikeKinetoTrace(path))) {
    KinetoReadOptions kineto;
    kineto.progress = options.progress;
    return plausible(loadKinetoTrace(path, nullptr, kineto), path);
  }
  return plausible(loadNsysSqlite(path, options.progress, options.names_read), path);
}

int32_t rankInFileName(std::string_view name) {
  for (size_t at = 0; at + 4 < name.size(); ++at) {
    if (lowerAscii(name[at]) != 'r' || lowerAscii(name[at + 1]) != 'a' || lowerAscii(name[at + 2]) != 'n' ||
        lowerAscii(name[at + 3]) != 'k')
      continue;
    size_t d = at + 4;
    if (d < name.size() && (name[d] == '-' || name[d] == '_')) ++d;
    size_t end = d;
    while (end < name.size() && isDigit(name[end]) && end - d < 7) ++end;
    if (end > d && (end == name.size() || !isDigit(name[end]))) return std::stoi(std::string(name.substr(d, end - d)));
  }
  return -1;
}

void completeIdentity(model::Profile& p, std::string_view file_name) {
  auto& info = p.info;
  if (info.host.empty()) info.host = hostInTraceName(file_name, p);
  // Processes with GPU work, and the one GPU of each that has one.
  std::map<uint32_t, std::set<uint32_t>> devices;
  for (const auto& a : p.activities) devices[a.pid].insert(a.device);
  std::set<uint32_t> named_processes;
  for (const auto& pr : info.processes) named_processes.insert(pr.pid);
  for (const auto& [pid, devs] : devices)
    if (named_processes.insert(pid).second) info.processes.push_back({pid, "", -1, -1});
  bool recorded = std::any_of(info.processes.begin(), info.processes.end(),
                              [&](const auto& pr) { return pr.rank >= 0 && devices.count(pr.pid) != 0; });
  int32_t named = recorded || devices.size() != 1 ? -1 : rankInFileName(file_name);
  for (auto& pr : info.processes) {
    if (pr.host.empty()) pr.host = info.host;
    auto d = devices.find(pr.pid);
    if (d == devices.end()) continue;
    if (named >= 0) pr.rank = named, pr.rank_source = "file name";
    uint32_t device = *d->second.begin();
    if (pr.gpu_uuid.empty() && d->second.size() == 1 && device < info.gpu_uuids.size())
      pr.gpu_uuid = info.gpu_uuids[device];
  }
}

}  // namespace sightline::ingest
