// Finding torch.compile's generated code for a profile.
#include "server/compiled_code.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/attribution/compiled_frames.h"
#include "analysis/ingest/inductor_reader.h"

namespace sightline::server {

namespace fs = std::filesystem;

namespace {

std::string userName() {
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_name) return pw->pw_name;
  const char* user = std::getenv("USER");
  return user ? user : "";
}

// Caches and trace folders under `root`, up to three levels down (not into hidden folders,
// virtual environments or node_modules).
void discover(const fs::path& root, int depth, std::vector<std::string>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code de;
    if (!it->is_directory(de) || it->is_symlink(de)) continue;
    std::string name = it->path().filename().string();
    if (name.starts_with(".") || name == "node_modules" || name == "site-packages" || name == "fxgraph") continue;
    if (ingest::holdsCompiledCode(it->path().string())) {
      out.push_back(it->path().string());
      continue;
    }
    if (depth < 3) discover(it->path(), depth + 1, out);
  }
}

}  // namespace

std::shared_ptr<const model::CompiledCode> findCompiledCode(const model::Profile& profile,
                                                            const CompiledCodeSearch& search,
                                                            std::vector<std::string>* searched) {
  // The generated modules the profile ran, and one module file per cache folder they were in.
  std::set<std::string> modules;
  std::map<std::string, std::string> module_file_of_dir;
  std::set<model::StringId> files;
  for (const auto& f : profile.frames) files.insert(f.file);
  for (const auto& c : profile.calls)
    if (c.kind == model::CallKind::Function) files.insert(c.file);
  for (model::StringId file : files) {
    const std::string& path = profile.strings[file];
    std::string name = attribution::generatedModuleName(path);
    if (name.empty()) continue;
    modules.insert(name);
    std::string dir = fs::path(path).parent_path().parent_path().string();
    if (!dir.empty()) module_file_of_dir.emplace(dir, path);
  }
  if (modules.empty()) return nullptr;
  std::vector<std::string> folders;
  auto add = [&](const std::string& folder) {
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec)) return;
    std::string canonical = fs::weakly_canonical(folder, ec).string();
    if (ec) canonical = folder;
    if (std::find(folders.begin(), folders.end(), canonical) == folders.end()) folders.push_back(canonical);
  };
  for (const auto& f : search.named) add(f);
  for (const auto& [dir, module_file] : module_file_of_dir) {
    add(dir);
    // A module file of that folder mapped like a script: its folder's parent is the cache.
    if (search.mapper)
      if (auto local = search.mapper->map(module_file)) add(fs::path(*local).parent_path().parent_path().string());
  }
  for (const auto& root : search.roots) {
    std::vector<std::string> found;
    discover(root, 1, found);
    for (const auto& f : found) add(f);
  }
  if (search.default_cache) add("/tmp/torchinductor_" + userName());
  if (searched) *searched = folders;
  if (folders.empty()) return nullptr;
  auto code = std::make_shared<model::CompiledCode>(
      ingest::readCompiledCode(folders, std::vector<std::string>(modules.begin(), modules.end())));
  if (code->modules.empty() && code->compiles.empty()) return nullptr;
  return code;
}

}  // namespace sightline::server
