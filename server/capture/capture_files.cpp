// NAME resolved and checked before the run, the private folder, the traces moved after it.
#include "server/capture/capture_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "server/platform/output_file.h"

namespace sightline::server::capture {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultName = "sightline-capture";

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "" when a new file can be made in `folder` (one is made and removed), else why not.
std::string probeFolder(const fs::path& folder, const std::string& shown) {
  std::string pattern = (folder / ".sightline-capture-probe-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  int fd = ::mkstemp(buffer.data());
  if (fd < 0) return "cannot write into " + shown + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(buffer.data());
  return "";
}

}  // namespace

std::optional<CaptureName> resolveCaptureName(const std::string& given, bool nsys, std::string& error) {
  if (given.empty()) {
    error = "--output is empty";
    return std::nullopt;
  }
  if (nsys && given.find('%') != std::string::npos) {
    error = "-o " + given +
            ": nsys expands `%` patterns (%p, %q{VAR}, %h, %n) in the name of its report, so sightline would not "
            "find it: give a NAME without `%`";
    return std::nullopt;
  }
  std::string name = given;
  for (const char* suffix : {".steps.json", ".nsys-rep", ".sqlite"})
    if (name.size() > std::strlen(suffix) && endsWith(name, suffix)) name.resize(name.size() - std::strlen(suffix));
  // A folder: NAME is sightline-capture in it (never ".steps.json", a hidden file of no name).
  std::error_code ec;
  std::string last = fs::path(name).filename().string();
  if (last.empty() || last == "." || last == ".." || fs::is_directory(name, ec)) {
    while (name.size() > 1 && name.back() == '/') name.pop_back();
    name = name == "." ? std::string(kDefaultName) : (name == "/" ? "/" : name + "/") + kDefaultName;
  }
  CaptureName out;
  out.shown = name;
  out.path = fs::absolute(name, ec).lexically_normal().string();
  if (ec) {
    error = "-o " + given + ": " + ec.message();
    return std::nullopt;
  }
  fs::path folder = fs::path(out.path).parent_path();
  std::string shown_folder = fs::path(name).parent_path().string();
  if (shown_folder.empty()) shown_folder = "this folder";
  if (!fs::is_directory(folder, ec)) {
    error = "cannot write " + out.shownFile(".steps.json") + ": no folder " + shown_folder;
    return std::nullopt;
  }
  // Found now, not after a run of hours whose steps would then be lost.
  error = probeFolder(folder, shown_folder);
  if (!error.empty()) return std::nullopt;
  return out;
}

std::vector<std::string> commandFiles(const std::vector<std::string>& command) {
  std::vector<std::string> files;
  auto add = [&files](const std::string& word) {
    struct stat st = {};
    if (!word.empty() && ::stat(word.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(word);
  };
  for (const auto& word : command) {
    add(word);
    if (size_t eq = word.find('='); !word.empty() && word[0] == '-' && eq != std::string::npos)
      add(word.substr(eq + 1));
  }
  return files;
}

std::string checkCaptureOutputs(const CaptureName& name, const std::string& profiler,
                                const std::vector<std::string>& inputs) {
  std::vector<std::string> suffixes = {".steps.json"};
  if (profiler == "nsys") suffixes.insert(suffixes.end(), {".nsys-rep", ".sqlite"});
  if (profiler == "torch") suffixes.emplace_back(".rank0.pt.trace.json.gz");
  for (const auto& suffix : suffixes)
    if (std::string why = checkOutputPath(name.file(suffix), inputs); !why.empty()) return why;
  return "";
}

PrivateFolder::PrivateFolder(std::string& note) {
  std::string base = "/tmp";
  const char* tmp = std::getenv("TMPDIR");
  if (tmp && *tmp) {
    std::error_code ec;
    std::string absolute = fs::absolute(tmp, ec).lexically_normal().string();
    while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
    std::string named = std::string("TMPDIR (") + tmp + (absolute != tmp ? ", that is " + absolute : "") + ")";
    if (absolute.find(':') != std::string::npos)
      note = named + " holds a ':', which would split PYTHONPATH and keep the hook from running";
    else if (ec || !fs::is_directory(absolute, ec))
      note = named + " is not a folder";
    else
      base = absolute;  // absolute: the command may change its directory before Python starts
    if (!note.empty()) note += ": the private folder is made under /tmp instead";
  }
  for (const std::string& under : {base, std::string("/tmp")}) {
    std::string pattern = under + "/sightline-capture-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data())) {
      path_ = buffer.data();
      return;
    }
    if (under == "/tmp") return;
    note = "cannot make a folder in TMPDIR (" + under + "): " + std::strerror(errno) +
           ": the private folder is made under /tmp instead";
  }
}

PrivateFolder::~PrivateFolder() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

std::string moveTrace(const std::string& from, const std::string& file_name, const std::string& to_folder,
                      const std::vector<std::string>& inputs) {
  fs::path source = fs::path(from) / file_name, target = fs::path(to_folder) / file_name;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(source, ec))) return "wrote no trace";
  if (std::string why = checkOutputPath(target.string(), inputs); !why.empty()) return why;
  // Renamed where it can be (the same file system, and no link or special file at the target).
  struct stat st = {};
  bool plain = ::lstat(target.c_str(), &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode);
  if (plain && ::rename(source.c_str(), target.c_str()) == 0) return "";
  std::string error;
  auto out = OutputFile::open(target.string(), inputs, error);
  if (!out) return error;
  std::ifstream in(source, std::ios::binary);
  std::vector<char> buffer(size_t{1} << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
    out->stream().write(buffer.data(), in.gcount());
  if (in.bad()) return "cannot read " + source.string();
  if (!out->commit(error)) return error;
  fs::remove(source, ec);
  return "";
}

}  // namespace sightline::server::capture
