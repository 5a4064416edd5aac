// Test input locations.
#include "tests/support/test_paths.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sightline::testing {

std::string testDataPath(const std::string& relative) { return std::string(SIGHTLINE_TEST_DATA_DIR) + "/" + relative; }
std::string sourcePath(const std::string& relative) { return std::string(SIGHTLINE_SOURCE_DIR) + "/" + relative; }

std::optional<std::string> sharedPath(const std::string& relative) {
  std::filesystem::path p = std::filesystem::path(SIGHTLINE_SOURCE_DIR).parent_path() / "shared" / relative;
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return std::nullopt;
  return p.string();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string binaryPath() { return SIGHTLINE_BINARY; }

}  // namespace sightline::testing
