// Writes one crafted memory snapshot (tests/support/crafted_snapshots.h) to a file, for fuzz
// seeds and for measuring the binary on it:
//   crafted_snapshot OUT shared-trace DEVICES EVENTS | shared-file-name BYTES FRAMES |
//     shared-blocks SEGMENTS BLOCKS | shared-blocks-list SEGMENTS BLOCKS | shared-stack DEPTH EVENTS | many-devices
//     DEVICES EVENTS | memo-index | marks COUNT | ring ENTRIES STACKS DEPTH
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/support/crafted_snapshots.h"

int main(int argc, char** argv) {
  using namespace sightline::testing;
  if (argc < 3) {
    std::fprintf(stderr, "usage: crafted_snapshot OUT KIND [N M]\n");
    return 2;
  }
  std::string kind = argv[2];
  auto arg = [&](int i) { return argc > i ? std::strtoll(argv[i], nullptr, 10) : 0; };
  int a = static_cast<int>(arg(3)), b = static_cast<int>(arg(4));
  std::string bytes;
  if (kind == "shared-trace")
    bytes = sharedTraceSnapshot(a, b);
  else if (kind == "shared-file-name")
    bytes = sharedFileNameSnapshot(static_cast<size_t>(arg(3)), b);
  else if (kind == "shared-blocks")
    bytes = sharedBlocksSnapshot(a, b);
  else if (kind == "shared-blocks-list")
    bytes = sharedBlocksSnapshot(a, b, true);
  else if (kind == "shared-stack")
    bytes = sharedStackSnapshot(a, b);
  else if (kind == "many-devices")
    bytes = manyDevicesSnapshot(a, b);
  else if (kind == "ring")
    bytes = ringBufferSnapshot(a, b, static_cast<int>(arg(5)));
  else if (kind == "memo-index")
    bytes = largeMemoIndexPickle();
  else if (kind == "marks")
    bytes = marksPickle(static_cast<size_t>(arg(3)));
  else {
    std::fprintf(stderr, "crafted_snapshot: unknown kind %s\n", kind.c_str());
    return 2;
  }
  std::FILE* f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "crafted_snapshot: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
