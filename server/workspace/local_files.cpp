// Local paths and file reads for the join.
#include "server/workspace/local_files.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

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

std::optional<std::string> uniqueFileNamed(const std::string& root, const std::string& name) {
  namespace fs = std::filesystem;
  if (root.empty() || root == "/" || name.empty()) return std::nullopt;
  std::error_code ec;
  std::optional<std::string> found;
  size_t looked = 0;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (++looked > 20000) return std::nullopt;
    std::string entry = it->path().filename().string();
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      bool skip = entry.empty() || entry[0] == '.' || entry == "node_modules" || entry == "build" ||
                  entry == "__pycache__" || entry == "site-packages" || entry == "dist-packages" || it.depth() >= 8;
      if (skip) it.disable_recursion_pending();
      continue;
    }
    if (entry != name || !it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    if (found) return std::nullopt;  // two of that name: neither is surely the one
    found = it->path().string();
  }
  return found;
}

void addLineTexts(std::vector<join::RankSummary>& summaries, const attribution::PathMapper& mapper) {
  std::map<std::string, std::vector<std::string>> files;  // profile path -> its lines ("" unread)
  for (auto& s : summaries)
    for (auto& l : s.lines) {
      auto [it, fresh] = files.try_emplace(l.path);
      auto local = fresh ? mapper.map(l.path) : std::nullopt;
      bool installed = l.path.find("-packages") != std::string::npos;  // a module's, never the user's
      if (fresh && !local && !l.path.empty() && !installed)
        local = uniqueFileNamed(mapper.root, std::filesystem::path(l.path).filename().string());
      if (fresh && local && mapper.exists && !mapper.exists(*local)) local.reset();
      if (fresh)
        if (local)
          if (auto text = readTextFile(*local, kMaxScriptBytes)) {
            std::string line;
            for (std::istringstream in(*text); std::getline(in, line);) it->second.push_back(line);
          }
      if (l.line < 1 || static_cast<size_t>(l.line) > it->second.size()) continue;
      std::string_view t = it->second[static_cast<size_t>(l.line) - 1];
      while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
      l.text = std::string(t.substr(0, 400));
    }
}

}  // namespace sightline::server
