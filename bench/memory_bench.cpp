// A memory snapshot read and replayed (docs/memory.md) against Python's pickle.load of the same
// file: seconds and peak RSS of each, in one run (see bench/README.md; scale a real snapshot
// with bench/scale_snapshot.py).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/memory_replay.h"
#include "analysis/ingest/memory_snapshot_reader.h"
#include "bench/python_run.h"
#include "server/allocator.h"

namespace {

using sightline::bench::seconds;

// python3's pickle.load of the file: {seconds, peak RSS in MiB}, or {-1, 0}.
std::pair<double, double> pythonPickleLoad(const std::string& path) {
  return sightline::bench::runPython(
      "import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(len(d['device_traces']))", path);
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
  auto t0 = std::chrono::steady_clock::now();
  std::string error;
  auto snapshot = ingest::readMemorySnapshot(path, error);
  auto t1 = std::chrono::steady_clock::now();
  if (!snapshot) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto replays = attribution::replayMemory(*snapshot, attribution::isDefaultUserFile);
  auto t2 = std::chrono::steady_clock::now();
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double rss = static_cast<double>(self.ru_maxrss) / 1024.0;
  auto [py, py_rss] = pythonPickleLoad(path);
  double read = seconds(t0, t1), replay = seconds(t1, t2);
  std::printf("snapshot        %s\n", path.c_str());
  std::printf("size            %.1f MB, %zu events, %zu blocks, %zu distinct frames, %zu stacks\n", file_mb,
              snapshot->events.size(), snapshot->blocks.size(), snapshot->frames.size(), snapshot->stacks.size());
  std::printf("read            %.2f s\n", read);
  std::printf("replay          %.2f s\n", replay);
  std::printf("read+replay     %.2f s\n", read + replay);
  std::printf("peak RSS        %.0f MiB (%.2f of the file's size)\n", rss, rss * 1.048576 / file_mb);
  if (py >= 0)
    std::printf("pickle.load     %.2f s, %.0f MiB (python3, same file): read+replay is %.2fx its time\n", py, py_rss,
                (read + replay) / py);
  for (const auto& r : replays)
    std::printf("device %d        peak %lld allocated, %lld reserved, %zu lines\n", r.device,
                static_cast<long long>(r.peak_allocated), static_cast<long long>(r.peak_reserved), r.lines.size());
  return 0;
}
