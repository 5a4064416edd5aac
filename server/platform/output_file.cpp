// Output files: checked before anything is loaded, written beside the target under a unique
// name and renamed; special files written in place.
#include "server/platform/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

namespace sightline::server {
namespace {

namespace fs = std::filesystem;

std::string lastError() { return std::strerror(errno); }

bool special(mode_t mode) { return S_ISCHR(mode) || S_ISFIFO(mode) || S_ISSOCK(mode); }

// Where `path` leads: its own status (`link` when it is a symbolic link) and its target's.
struct Target {
  bool exists = false;
  bool link = false;
  struct stat st = {};
  std::string error;
};

Target targetOf(const std::string& path) {
  Target t;
  struct stat own = {};
  if (::lstat(path.c_str(), &own) != 0) {
    if (errno != ENOENT) t.error = "cannot use " + path + ": " + lastError();
    return t;
  }
  t.exists = true;
  t.link = S_ISLNK(own.st_mode);
  t.st = own;
  if (t.link && ::stat(path.c_str(), &t.st) != 0) t.error = path + " is a symbolic link to nothing";
  return t;
}

bool writeAll(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// A new file beside `target`, made with O_EXCL under a name no one else has: -1 when none could
// be made (`error` says why).
int createTemporary(const fs::path& target, std::string& temporary, std::string& error) {
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device device;
  std::mt19937_64 random((static_cast<uint64_t>(device()) << 32) ^ device() ^ static_cast<uint64_t>(::getpid()));
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[20];
    std::snprintf(suffix, sizeof suffix, "%012llx", static_cast<unsigned long long>(random() & 0xffffffffffffull));
    temporary = (dir / ("." + target.filename().string() + "." + suffix + ".tmp")).string();
    int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
      error = "cannot create a file in " + dir.string() + ": " + lastError();
      return -1;
    }
  }
  error = "cannot create a file in " + dir.string() + " under a name of its own";
  return -1;
}

}  // namespace

std::string checkOutputPath(const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty()) return "the output path is empty";
  Target t = targetOf(path);
  if (!t.error.empty()) return t.error;
  if (!t.exists) {
    // A new file: its folder must be there (caught before a long load, not after it).
    std::error_code ec;
    fs::path dir = fs::path(path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir, ec)) return "cannot write " + path + ": no folder " + dir.string();
    return "";
  }
  if (S_ISDIR(t.st.st_mode)) return path + " is a folder";
  if (special(t.st.st_mode)) return "";
  if (!S_ISREG(t.st.st_mode)) return path + " is not a regular file: not written";
  for (const auto& input : inputs) {
    struct stat in = {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == t.st.st_dev && in.st_ino == t.st.st_ino)
      return path + " is the input " + input + ": not written over";
  }
  return "";
}

OutputFile::FdBuffer::FdBuffer(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }

bool OutputFile::FdBuffer::drain() {
  if (error_ != 0) return false;
  if (!writeAll(fd_, std::string_view(pbase(), static_cast<size_t>(pptr() - pbase())))) {
    error_ = errno != 0 ? errno : EIO;
    return false;
  }
  setp(buffer_, buffer_ + sizeof buffer_);
  return true;
}

OutputFile::FdBuffer::int_type OutputFile::FdBuffer::overflow(int_type c) {
  if (!drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int OutputFile::FdBuffer::sync() { return drain() ? 0 : -1; }

OutputFile::OutputFile(std::string path, std::string target, std::string temporary, int fd)
    : path_(std::move(path)),
      target_(std::move(target)),
      temporary_(std::move(temporary)),
      fd_(fd),
      buffer_(fd),
      stream_(&buffer_) {}

OutputFile::~OutputFile() {
  if (done_) return;
  ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

std::unique_ptr<OutputFile> OutputFile::open(const std::string& path, const std::vector<std::string>& inputs,
                                             std::string& error) {
  error = checkOutputPath(path, inputs);
  if (!error.empty()) return nullptr;
  Target t = targetOf(path);
  if (t.exists && special(t.st.st_mode)) {
    // A terminal, a pipe, /dev/null: written in place, never replaced by a regular file.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      error = "cannot write " + path + ": " + lastError();
      return nullptr;
    }
    return std::unique_ptr<OutputFile>(new OutputFile(path, path, "", fd));
  }
  // A link to a regular file: the file it leads to is replaced, the link kept (as git does).
  std::error_code ec;
  fs::path target = t.link ? fs::canonical(path, ec) : fs::path(path);
  if (ec) {
    error = "cannot follow " + path + ": " + ec.message();
    return nullptr;
  }
  std::string temporary;
  int fd = createTemporary(target, temporary, error);
  if (fd < 0) {
    error = "cannot write " + path + ": " + error;
    return nullptr;
  }
  return std::unique_ptr<OutputFile>(new OutputFile(path, target.string(), temporary, fd));
}

std::unique_ptr<OutputFile> OutputFile::standardOutput(std::string& error) {
  int fd = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) {
    error = "cannot write to standard output: " + lastError();
    return nullptr;
  }
  return std::unique_ptr<OutputFile>(new OutputFile("standard output", "", "", fd));
}

bool OutputFile::commit(std::string& error) {
  stream_.flush();
  std::string why;
  if (!stream_ || buffer_.errorNumber() != 0)
    why = std::strerror(buffer_.errorNumber() != 0 ? buffer_.errorNumber() : EIO);
  done_ = true;
  if (::close(fd_) != 0 && why.empty()) why = lastError();
  if (why.empty() && !temporary_.empty() && ::rename(temporary_.c_str(), target_.c_str()) != 0) why = lastError();
  if (why.empty()) return true;
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  error = (target_.empty() ? "cannot write to " : "cannot write ") + path_ + ": " + why;
  return false;
}

bool writeOutputFile(const std::string& path, std::string_view bytes, const std::vector<std::string>& inputs,
                     std::string& error) {
  auto file = OutputFile::open(path, inputs, error);
  if (!file) return false;
  file->stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return file->commit(error);
}

bool writeOutputStream(std::ostream& out, std::string_view bytes, std::string& error) {
  errno = 0;
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (out) return true;
  error = "cannot write to standard output";
  if (errno != 0) error += std::string(": ") + lastError();
  return false;
}

}  // namespace sightline::server
