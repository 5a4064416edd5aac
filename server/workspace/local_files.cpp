// Local paths and file reads for the join.
#include "server/workspace/local_files.h"

#include <filesystem>
#include <fstream>

namespace sightline::server {

std::string normalPath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec).string();
}

std::optional<std::string> readTextFile(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (text.size() + static_cast<uint64_t>(in.gcount()) > max_bytes) return std::nullopt;
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  return text;
}

namespace {

bool within(const std::string& path, const std::string& root) {
  if (root.empty()) return false;
  if (root == "/") return true;
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

}  // namespace

bool LocalScope::allows(const std::string& path) const {
  std::string canonical = normalPath(path);
  for (const auto& f : files)
    if (canonical == f) return true;
  for (const auto& r : roots)
    if (canonical == r || within(canonical, r)) return true;
  return false;
}

LocalScope scopeOf(const attribution::PathMapper& mapper, const std::vector<std::string>& files) {
  LocalScope scope;
  if (!mapper.root.empty()) scope.roots.push_back(normalPath(mapper.root));
  for (const auto& rule : mapper.rules)
    if (!rule.to.empty()) scope.roots.push_back(normalPath(rule.to));
  for (const auto& f : mapper.candidates) scope.files.push_back(normalPath(f));
  for (const auto& f : files) scope.files.push_back(normalPath(f));
  return scope;
}

std::function<bool(const std::string&)> existsWithin(LocalScope scope) {
  return [scope = std::move(scope)](const std::string& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && scope.allows(p);
  };
}

join::JoinEnvironment localJoinEnvironment(attribution::PathMapper mapper) {
  if (!mapper.exists) mapper.exists = existsWithin(scopeOf(mapper));
  return {std::move(mapper), normalPath, [](const std::string& p) { return readTextFile(p, kMaxScriptBytes); }};
}

}  // namespace sightline::server
