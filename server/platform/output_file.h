// Writing what a verb made to a path the user named (`report -o PATH`), as git's lockfiles do:
// never over one of the verb's inputs, never through a link onto something else, never a
// truncated file with exit 0. Not for the caches (profile_files.h keeps its own files).
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::server {

// "" when `path` may be written: absent, a regular file (or a link to one) that is none of
// `inputs` (the same file by device and inode, so a hard link or another spelling counts), or a
// special file written in place (a terminal, a pipe, /dev/null). Otherwise why not.
std::string checkOutputPath(const std::string& path, const std::vector<std::string>& inputs);

// A report written as it is made (never held whole in memory): `open` checks the path and makes
// where to write (checkOutputPath's rules); `commit` flushes, checks every write and the close,
// and renames the new file over the target. Destroyed without a commit, it leaves nothing.
class OutputFile {
 public:
  static std::unique_ptr<OutputFile> open(const std::string& path, const std::vector<std::string>& inputs,
                                          std::string& error);
  // The process's standard output, written through the same checked buffer (a copy of fd 1).
  static std::unique_ptr<OutputFile> standardOutput(std::string& error);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream() { return stream_; }
  bool commit(std::string& error);

 private:
  // Writes to a file descriptor in 64 KiB pieces; the first failed write's errno is kept.
  class FdBuffer : public std::streambuf {
   public:
    explicit FdBuffer(int fd);
    int errorNumber() const { return error_; }

   protected:
    int_type overflow(int_type c) override;
    int sync() override;

   private:
    bool drain();
    int fd_;
    int error_ = 0;
    char buffer_[1 << 16];
  };
  OutputFile(std::string path, std::string target, std::string temporary, int fd);
  std::string path_, target_, temporary_;  // temporary_ "": a special file written in place
  int fd_;
  FdBuffer buffer_;
  std::ostream stream_;
  bool done_ = false;
};

// Writes `bytes` to `path`: a special file in place; else a new file created with O_EXCL beside
// the target (its name unique), every write and the close checked, then renamed over it. On
// failure nothing is left behind and `error` says why.
bool writeOutputFile(const std::string& path, std::string_view bytes, const std::vector<std::string>& inputs,
                     std::string& error);

// Writes `bytes` to `out` and flushes it: false when the stream failed (a full disk, a closed
// pipe), with `error` saying so.
bool writeOutputStream(std::ostream& out, std::string_view bytes, std::string& error);

}  // namespace sightline::server
