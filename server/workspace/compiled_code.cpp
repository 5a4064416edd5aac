// Finding torch.compile's generated code for a profile.
#include "server/workspace/compiled_code.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

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
void discover(const fs::path& root, int depth, std::vector<std::string>& out, const std::atomic<bool>& stop) {
  std::error_code ec;
  for (fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && !stop.load(std::memory_order_relaxed); it.increment(ec)) {
    std::error_code de;
    if (!it->is_directory(de) || it->is_symlink(de)) continue;
    std::string name = it->path().filename().string();
    if (name.starts_with(".") || name == "node_modules" || name == "site-packages" || name == "fxgraph") continue;
    if (ingest::holdsCompiledCode(it->path().string())) {
      out.push_back(it->path().string());
      continue;
    }
    if (depth < 3) discover(it->path(), depth + 1, out, stop);
  }
}

// A folder once, canonical, when it exists.
void addFolder(std::vector<std::string>& folders, const std::string& folder) {
  std::error_code ec;
  if (folder.empty() || !fs::is_directory(folder, ec)) return;
  std::string canonical = fs::weakly_canonical(folder, ec).string();
  if (ec) canonical = folder;
  if (std::find(folders.begin(), folders.end(), canonical) == folders.end()) folders.push_back(canonical);
}

}  // namespace

CompiledCodeReader::CompiledCodeReader(CompiledCodeSearch search) : search_(std::move(search)) {
  // In the background, one thread: the profile's own loading keeps the other cores; finish
  // reads what is left on all of them.
  try {
    thread_ = std::thread([this] { readEarly(); });
  } catch (const std::system_error&) {  // no thread to be had: finish reads it all
  }
}

CompiledCodeReader::~CompiledCodeReader() { stopEarly(true); }

void CompiledCodeReader::stopEarly(bool abandon) {
  if (abandon) stopping_ = true;  // else the folders are still found and listed whole
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompiledCodeReader::expect(std::vector<std::string> modules) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto more = std::make_shared<std::set<std::string>>(modules.begin(), modules.end());
    if (expected_) more->insert(expected_->begin(), expected_->end());
    expected_ = std::move(more);  // a new set: files read for the old one keep theirs
  }
  wake_.notify_all();
}

ingest::NamesRead CompiledCodeReader::namesRead() {
  return [this](const model::StringTable& names) {
    std::vector<std::string> modules;
    for (model::StringId id = 0; id < names.size(); ++id)
      if (std::string name = attribution::generatedModuleName(names[id]); !name.empty())
        modules.push_back(std::move(name));
    expect(std::move(modules));
  };
}

void CompiledCodeReader::readEarly() {
  early_read_ = true;
  for (const auto& f : search_.named) addFolder(early_, f);
  for (const auto& root : search_.roots) {
    std::vector<std::string> found;
    discover(root, 1, found, stopping_);
    for (const auto& f : found) addFolder(early_, f);
  }
  if (early_.empty()) return;
  files_ = ingest::listCompiledCode(early_, &stopping_);
  parts_.resize(files_.files.size());
  part_wanted_.resize(files_.files.size());
  // Trace logs first (read whole whatever the profile), then the entries in listing order.
  std::vector<size_t> order;
  for (size_t i = 0; i < files_.files.size(); ++i)
    if (files_.files[i].trace) order.push_back(i);
  for (size_t i = 0; i < files_.files.size(); ++i)
    if (!files_.files[i].trace) order.push_back(i);
  for (size_t i : order) {
    bool entry = !files_.files[i].trace;
    std::shared_ptr<const std::set<std::string>> wanted;  // null: every module (a guess, while none is expected)
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (entry && !expected_ && guessed_ >= kSpeculativeEntries) wake_.wait(lock, [&] { return stop_ || expected_; });
      if (stop_) return;
      if (expected_ && expected_->empty()) return;  // the profile runs no generated code
      if (entry) wanted = expected_;
    }
    if (entry && !wanted) ++guessed_;
    part_wanted_[i] = wanted;
    parts_[i] = ingest::readCompiledFile(files_.files[i], wanted ? *wanted : std::set<std::string>());
  }
}

std::shared_ptr<const model::CompiledCode> CompiledCodeReader::finish(const model::Profile& profile,
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
  if (!modules.empty() && !thread_.joinable() && !early_read_) {  // no early thread: the same, now
    expect({modules.begin(), modules.end()});
    readEarly();
  }
  stopEarly(modules.empty());
  if (modules.empty()) return nullptr;
  std::vector<std::string> wanted(modules.begin(), modules.end());
  // The folders in order of trust (see above); those not read early are read now.
  std::vector<std::string> folders;
  for (const auto& f : search_.named) addFolder(folders, f);
  std::string default_cache = "/tmp/torchinductor_" + userName();
  for (const auto& [dir, module_file] : module_file_of_dir) {
    if (!search_.may_open || dir == default_cache || search_.may_open(dir)) addFolder(folders, dir);
    // A module file of that folder mapped like a script: its folder's parent is the cache.
    if (search_.mapper)
      if (auto local = search_.mapper->map(module_file))
        addFolder(folders, fs::path(*local).parent_path().parent_path().string());
  }
  for (const auto& f : early_) addFolder(folders, f);
  if (search_.default_cache) addFolder(folders, default_cache);
  if (searched) *searched = folders;
  if (folders.empty()) return nullptr;
  auto code = std::make_shared<model::CompiledCode>();
  if (!early_.empty()) {
    // What the early thread read serves unless it was an entry read for other modules.
    auto serves = [&](size_t i) {
      return parts_[i] && (!part_wanted_[i] || std::includes(part_wanted_[i]->begin(), part_wanted_[i]->end(),
                                                             modules.begin(), modules.end()));
    };
    code->sources = files_.sources;
    code->warnings = files_.warnings;
    ingest::CompiledCodeFiles rest;
    for (size_t i = 0; i < files_.files.size(); ++i) {
      if (serves(i))
        ingest::mergeCompiledCode(*code, std::move(*parts_[i]));
      else
        rest.files.push_back(files_.files[i]);
    }
    if (!rest.files.empty()) ingest::mergeCompiledCode(*code, ingest::readCompiledFiles(rest, wanted));
    ingest::keepModules(*code, wanted);
  }
  std::vector<std::string> late;
  for (const auto& f : folders)
    if (std::find(early_.begin(), early_.end(), f) == early_.end()) late.push_back(f);
  if (!late.empty()) ingest::mergeCompiledCode(*code, ingest::readCompiledCode(late, wanted));
  // Modules the profile ran but the folders do not hold by name: the folders the user named may
  // hold them under other names (generated again, or a copy rebuilt elsewhere); the join matches
  // them by their launches (attribution/compiled_frames.h), so keep those folders' other modules.
  // A module held as a wrapper only (no line) counts as not held: its entry may be there renamed.
  std::set<std::string> have, placed;
  for (const auto& m : code->modules) {
    have.insert(m.name);
    if (std::any_of(m.launches.begin(), m.launches.end(), [](const auto& l) { return !l.stack.empty(); }))
      placed.insert(m.name);
  }
  if (!search_.named.empty() && !std::includes(placed.begin(), placed.end(), modules.begin(), modules.end())) {
    model::CompiledCode all = ingest::readCompiledCode(search_.named);
    for (auto& m : all.modules)
      if (have.insert(m.name).second) code->modules.push_back(std::move(m));
  }
  if (code->modules.empty() && code->compiles.empty()) return nullptr;
  return code;
}

std::shared_ptr<const model::CompiledCode> findCompiledCode(const model::Profile& profile,
                                                            const CompiledCodeSearch& search,
                                                            std::vector<std::string>* searched) {
  CompiledCodeReader reader(search);
  return reader.finish(profile, searched);
}

}  // namespace sightline::server
