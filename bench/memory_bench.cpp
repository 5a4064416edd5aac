// A memory snapshot read and replayed (docs/memory.md) against Python's pickle.load of the same
// file: CPU seconds and peak RSS of each, in one run (bench/README.md: real snapshots made with
// bench/snapshot_models.sh, or a real one scaled with bench/scale_snapshot.py). One snapshot a
// process, so that the peak RSS is that file's.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/memory_replay.h"
#include "analysis/ingest/memory_snapshot_reader.h"
#include "bench/python_run.h"
#include "server/platform/allocator.h"

namespace {

using sightline::bench::cpuSeconds;
using sightline::bench::seconds;

double selfCpu() {
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  return cpuSeconds(self);
}

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator(argv);  // as the sightline binary does
  using namespace sightline;
  if (argc < 2) {
    std::fprintf(stderr, "usage: memory_bench SNAPSHOT.pickle\n");
    return 2;
  }
  std::string path = argv[1];
  double file_mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  double c0 = selfCpu();
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  auto snapshot = ingest::readMemorySnapshot(path, error);
  auto t1 = std::chrono::steady_clock::now();
  double c1 = selfCpu();
  if (!snapshot) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto replays = attribution::replayMemory(*snapshot, attribution::isDefaultUserFile);
  auto t2 = std::chrono::steady_clock::now();
  double c2 = selfCpu();
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double rss = static_cast<double>(self.ru_maxrss) / 1024.0;
  // pickle.load's CPU: the load alone (python3 started and `pickle` imported: measured apart).
  auto base = bench::runPythonMeasured("import pickle,sys", path);
  auto py = bench::runPythonMeasured(
      "import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(len(d['device_traces']))", path);
  double read = c1 - c0, replay = c2 - c1;
  std::printf("snapshot        %s\n", path.c_str());
  std::printf("size            %.1f MB, %zu events, %zu blocks, %zu distinct frames, %zu stacks\n", file_mb,
              snapshot->events.size(), snapshot->blocks.size(), snapshot->frames.size(), snapshot->stacks.size());
  std::printf("read            %.2f s CPU (%.2f s wall)\n", read, seconds(t0, t1));
  std::printf("replay          %.2f s CPU (%.2f s wall)\n", replay, seconds(t1, t2));
  std::printf("peak RSS        %.0f MiB (%.2f of the file's size)\n", rss, rss * 1.048576 / file_mb);
  if (py.seconds >= 0 && base.seconds >= 0) {
    double load = py.cpu - base.cpu;
    std::printf("pickle.load     %.2f s CPU, %.0f MiB (python3, same file)\n", load, py.rss_mib);
    std::printf("ratio           read %.2fx pickle.load's CPU, read+replay %.2fx; RSS %.2fx the file\n", read / load,
                (read + replay) / load, rss * 1.048576 / file_mb);
  }
  for (const auto& r : replays)
    std::printf("device %d        peak %lld allocated, %lld reserved, %zu lines\n", r.device,
                static_cast<long long>(r.peak_allocated), static_cast<long long>(r.peak_reserved), r.lines.size());
  return 0;
}
