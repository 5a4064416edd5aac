// Local paths and file reads for the join.
#include "server/local_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sightline::server {

std::string normalPath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
}

std::optional<std::string> readTextFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

join::JoinEnvironment localJoinEnvironment(attribution::PathMapper mapper) {
  if (!mapper.exists)
    mapper.exists = [](const std::string& p) {
      std::error_code ec;
      return std::filesystem::is_regular_file(p, ec);
    };
  return {std::move(mapper), normalPath, readTextFile};
}

}  // namespace sightline::server
