#include "server/mcp/tool_context.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "server/lsp/uri.h"
#include "server/render/diff_render.h"
#include "server/workspace/local_files.h"

namespace sightline::server::mcp {

namespace fs = std::filesystem;

report::LoadedReport* ToolContext::report() {
  const LoadedProfile* loaded = workspace_.profile();
  if (!loaded) return nullptr;
  const LoadedProfile* compare = workspace_.compareProfile();
  if (report_ && (report_loaded_ != loaded || report_compare_ != compare)) report_.reset();
  if (!report_) {
    report_loaded_ = loaded, report_compare_ = compare;
    // The workspace's files the profile maps onto: the report's named files.
    std::vector<std::string> paths;
    for (const auto& [file, lines] : loaded->attr().files)
      if (auto local = loaded->join->localPathOf(file)) {
        std::string absolute = normalPath(*local);
        if (std::find(paths.begin(), paths.end(), absolute) == paths.end()) paths.push_back(absolute);
      }
    std::ostringstream ignored;
    bool unreadable = false;
    auto sources = cli::readNamedFiles(paths, "mcp", ignored, unreadable);
    report_ = std::make_unique<report::LoadedReport>(*loaded, compare, std::move(sources));
  }
  return report_.get();
}

bool ToolContext::openScriptsOfProfile() {
  const LoadedProfile* loaded = workspace_.profile();
  if (!loaded || workspace_.root().empty()) return false;
  bool opened = false;
  for (const auto& [file, lines] : loaded->attr().files) {
    if (loaded->join->localPathOf(file)) continue;
    std::string_view path = loaded->profile().strings[file];
    std::string name = fs::path(path).filename().string();
    if (!name.ends_with(".py") || path.find("-packages/") != std::string_view::npos) continue;
    if (looked_for_.size() >= 32 || !looked_for_.insert(name).second) continue;
    auto found = uniqueFileNamed(workspace_.root(), name);
    if (!found) continue;
    auto text = readTextFile(*found, kMaxScriptBytes);
    if (!text || workspace_.find(pathToUri(*found))) continue;
    workspace_.open(pathToUri(*found), 0, std::move(*text));
    opened = true;
  }
  return opened;
}

std::string ToolContext::workspaceFile(const std::string& path) const {
  if (path.empty()) throw ToolError{"the path is empty"};
  const std::string& root = workspace_.root();
  if (root.empty()) throw ToolError{"the server has no workspace folder (--root)"};
  fs::path p(path);
  std::string absolute = normalPath(p.is_absolute() ? path : (fs::path(root) / p).string());
  LocalScope scope{{normalPath(root)}, {}};
  if (!scope.allows(absolute))
    throw ToolError{"\"" + diff::inert(path) + "\" is outside the workspace " + root + ": only its files are read"};
  std::error_code ec;
  if (!fs::is_regular_file(absolute, ec)) throw ToolError{"no such file in the workspace: " + diff::inert(path)};
  return absolute;
}

namespace {

// A file's lines, each without its line ending ("\r\n" or "\n": an editor that changes only
// the endings changes no line).
std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    size_t stop = end > at && text[end - 1] == '\r' ? end - 1 : end;
    out.push_back(text.substr(at, stop - at));
    at = end + 1;
  }
  return out;
}

// Which lines of `before` are still in `after`, and where: a longest common subsequence of lines
// between the lines both share at their start and end (an agent's edits, however many). Past
// 4,000,000 cells of the middle the middle counts as changed.
void matchLines(const std::vector<std::string>& before, const std::vector<std::string>& after,
                std::vector<int64_t>& old_to_new, std::vector<int64_t>& new_to_old) {
  auto n_old = before.size(), n_new = after.size();
  old_to_new.assign(n_old + 1, 0), new_to_old.assign(n_new + 1, 0);
  size_t head = 0, tail = 0;
  while (head < std::min(n_old, n_new) && before[head] == after[head]) ++head;
  while (tail < std::min(n_old, n_new) - head && before[n_old - 1 - tail] == after[n_new - 1 - tail]) ++tail;
  auto pair = [&](size_t o, size_t n) {  // 0-based
    old_to_new[o + 1] = static_cast<int64_t>(n + 1), new_to_old[n + 1] = static_cast<int64_t>(o + 1);
  };
  for (size_t i = 0; i < head; ++i) pair(i, i);
  for (size_t i = 0; i < tail; ++i) pair(n_old - 1 - i, n_new - 1 - i);
  size_t a = n_old - head - tail, b = n_new - head - tail;
  if (a == 0 || b == 0 || a * b > 4'000'000) return;
  // lcs[i][j]: the longest common subsequence of before[head+i..] and after[head+j..].
  std::vector<uint32_t> lcs((a + 1) * (b + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (b + 1) + j]; };
  for (size_t i = a; i-- > 0;)
    for (size_t j = b; j-- > 0;)
      at(i, j) = before[head + i] == after[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (size_t i = 0, j = 0; i < a && j < b;) {
    if (before[head + i] == after[head + j]) {
      pair(head + i, head + j);
      ++i, ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
}

}  // namespace

void ToolContext::refresh() {
  edited_.clear();
  auto* r = report();
  if (!r) return;
  for (const auto& src : r->sources()) {
    auto now = readTextFile(src.absolute, kMaxScriptBytes);
    if (!now || *now == src.file->text()) continue;
    Edited e;
    e.lines = splitLines(*now);
    matchLines(splitLines(src.file->text()), e.lines, e.old_to_new, e.new_to_old);
    bool moved = e.old_to_new.size() != e.new_to_old.size();
    for (size_t i = 1; i < e.old_to_new.size() && !moved; ++i) moved = e.old_to_new[i] != static_cast<int64_t>(i);
    if (moved) edited_[src.absolute] = std::move(e);  // (line endings alone move no line)
  }
}

int64_t ToolContext::currentLine(const std::string& absolute, int64_t profiled) const {
  auto it = edited_.find(absolute);
  if (it == edited_.end()) return profiled;
  const auto& map = it->second.old_to_new;
  return profiled >= 1 && profiled < static_cast<int64_t>(map.size()) ? map[static_cast<size_t>(profiled)] : 0;
}

int64_t ToolContext::profiledLine(const std::string& absolute, int64_t current) const {
  auto it = edited_.find(absolute);
  if (it == edited_.end()) return current;
  const auto& map = it->second.new_to_old;
  return current >= 1 && current < static_cast<int64_t>(map.size()) ? map[static_cast<size_t>(current)] : 0;
}

std::optional<std::string> ToolContext::currentText(const std::string& absolute, int64_t current) const {
  auto it = edited_.find(absolute);
  if (it == edited_.end()) return std::nullopt;
  const auto& lines = it->second.lines;
  if (current < 1 || current > static_cast<int64_t>(lines.size())) return std::string();
  return lines[static_cast<size_t>(current - 1)];
}

std::vector<std::string> ToolContext::changedFiles() const {
  std::vector<std::string> out;
  for (const auto& [path, e] : edited_) out.push_back(path);
  return out;
}

std::string ToolContext::localShown(const std::string& recorded) {
  attribution::PathMapper mapper = workspace_.mapper();
  for (Document* doc : workspace_.documents())
    if (auto local = uriToPath(doc->uri())) mapper.candidates.push_back(normalPath(*local));
  if (auto local = mapper.map(recorded)) return shown(normalPath(*local));
  return recorded;
}

std::string ToolContext::shown(const std::string& absolute) const {
  const std::string& root = workspace_.root();
  if (!root.empty() && absolute.size() > root.size() + 1 && absolute.compare(0, root.size(), root) == 0 &&
      absolute[root.size()] == '/')
    return absolute.substr(root.size() + 1);
  return absolute;
}

// The document of `absolute` in the workspace as it is on disk (opened, or opened again when the
// file changed), for the editor's findings and fixes.
Document& ToolContext::document(const std::string& absolute) {
  std::string uri = pathToUri(absolute);
  auto text = readTextFile(absolute, kMaxScriptBytes);
  if (!text) throw ToolError{"cannot read " + shown(absolute)};
  Workspace& ws = workspace_;
  if (Document* doc = ws.find(uri); doc && doc->file().text() == *text) return *doc;
  ws.close(uri);
  return ws.open(uri, 0, std::move(*text));
}

}  // namespace sightline::server::mcp
