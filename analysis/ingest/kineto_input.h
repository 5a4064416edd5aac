// Bytes in for the trace reader (internal to analysis/ingest): a plain file, or a gzip stream
// (several members allowed, as `cat a.gz b.gz` makes), read in blocks through zlib.
#pragma once

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace sightline::ingest::kineto {

class Input {
 public:
  ~Input() {
    if (gzip_) inflateEnd(&z_);
    if (file_) std::fclose(file_);
  }

  bool open(const std::string& path, std::string& error) {
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) {
      error = path + ": cannot open";
      return false;
    }
    unsigned char magic[2] = {0, 0};
    size_t n = std::fread(magic, 1, 2, file_);
    std::rewind(file_);
    gzip_ = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (gzip_) {
      std::memset(&z_, 0, sizeof z_);
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) {
        error = path + ": cannot start gzip decompression";
        return false;
      }
      in_.resize(1 << 18);
    }
    return true;
  }

  // Up to `n` bytes into `out`; 0 at the end (or on a damaged stream: see damaged()).
  size_t read(char* out, size_t n) {
    if (!gzip_) {
      size_t got = std::fread(out, 1, static_cast<size_t>(std::min<uint64_t>(n, remaining_)), file_);
      remaining_ -= got;
      return got;
    }
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n && !done_) {
      if (z_.avail_in == 0) {
        size_t got = std::fread(in_.data(), 1, in_.size(), file_);
        if (got == 0) {
          // The stream ended in the middle of a gzip member: a file still being written.
          if (!member_end_) damaged_ = "the gzip stream ends early";
          done_ = true;
          break;
        }
        z_.next_in = in_.data();
        z_.avail_in = static_cast<uInt>(got);
        member_end_ = false;
      }
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_end_ = true;
        inflateReset(&z_);  // another member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        damaged_ = std::string("gzip data is damaged (") + (z_.msg ? z_.msg : "inflate error") + ")";
        done_ = true;
      }
    }
    return n - z_.avail_out;
  }

  const std::string& damaged() const { return damaged_; }
  bool gzip() const { return gzip_; }
  // Plain files: read [offset, offset + length) only.
  void window(uint64_t offset, uint64_t length) {
    std::fseek(file_, static_cast<long>(offset), SEEK_SET);
    remaining_ = length;
  }

 private:
  FILE* file_ = nullptr;
  uint64_t remaining_ = UINT64_MAX;
  bool gzip_ = false;
  z_stream z_{};
  std::vector<unsigned char> in_;
  bool done_ = false;
  bool member_end_ = true;
  std::string damaged_;
};

}  // namespace sightline::ingest::kineto
