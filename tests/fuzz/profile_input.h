// The fuzzers' way of handing bytes to a reader that opens a path: a file in memory-backed
// /dev/shm (else the temp dir), one per fuzzing process, rewritten for each input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace sightline::fuzz {

// Removes the input file when the fuzzer exits (libFuzzer ends with exit(), which runs this).
struct RemovedAtExit {
  std::string path;
  ~RemovedAtExit() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

inline std::string inputPath(const std::string& suffix) {
  std::filesystem::path dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  static RemovedAtExit file{(dir / ("sightline-fuzz-" + std::to_string(::getpid()) + suffix)).string()};
  return file.path;
}

inline void writeInput(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace sightline::fuzz
