// Kineto trace reader: a block reader (plain or gzip through zlib), a small JSON scanner
// that parses one top-level member or one trace event at a time from an in-memory block
// (refilling and retrying when the unit runs past the block), and a builder that turns events
// into the profile model. Only the fields attribution needs are decoded; everything else is
// skipped without being copied.
#include "analysis/ingest/kineto_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/ingest/cuda_api.h"

namespace sightline::ingest {
namespace {

using model::ActivityKind;
using model::CopyKind;
using model::MemoryKind;

// ---------------------------------------------------------------------------------------------
// Bytes in: a plain file, or a gzip stream (several members allowed, as `cat a.gz b.gz` makes).

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

// ---------------------------------------------------------------------------------------------
// JSON scanning over one in-memory block. Every function returns a Status: Short means the
// unit ran past the block (the caller refills and retries the whole unit).

enum class Status { Ok, Short, Bad };

struct Cursor {
  const char* p;
  const char* end;
};

inline bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline Status skipSpace(Cursor& c) {
  while (c.p < c.end && isSpace(*c.p)) ++c.p;
  return c.p < c.end ? Status::Ok : Status::Short;
}

inline Status expect(Cursor& c, char ch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != ch) return Status::Bad;
  ++c.p;
  return Status::Ok;
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hexValue(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// The end of the string whose opening quote is at c.p: the position after its closing quote.
inline Status stringEnd(Cursor& c, bool& escaped) {
  const char* s = c.p + 1;
  escaped = false;
  for (;;) {
    const char* q = static_cast<const char*>(std::memchr(s, '"', static_cast<size_t>(c.end - s)));
    if (!q) return Status::Short;
    // A quote preceded by an odd number of backslashes is escaped.
    const char* b = q;
    while (b > s && b[-1] == '\\') --b;
    if ((q - b) % 2 == 0) {
      if (!escaped) escaped = std::memchr(c.p + 1, '\\', static_cast<size_t>(q - c.p - 1)) != nullptr;
      c.p = q + 1;
      return Status::Ok;
    }
    escaped = true;
    s = q + 1;
  }
}

// A string value: a view into the block when it has no escapes, else decoded into `scratch`.
Status parseString(Cursor& c, std::string_view& out, std::string& scratch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != '"') return Status::Bad;
  const char* begin = c.p + 1;
  bool escaped = false;
  if (Status s = stringEnd(c, escaped); s != Status::Ok) return s;
  const char* last = c.p - 1;  // the closing quote
  if (!escaped) {
    out = std::string_view(begin, static_cast<size_t>(last - begin));
    return Status::Ok;
  }
  scratch.clear();
  for (const char* p = begin; p < last; ++p) {
    if (*p != '\\') {
      scratch += *p;
      continue;
    }
    if (++p >= last) return Status::Bad;
    switch (*p) {
      case 'n':
        scratch += '\n';
        break;
      case 't':
        scratch += '\t';
        break;
      case 'r':
        scratch += '\r';
        break;
      case 'b':
        scratch += '\b';
        break;
      case 'f':
        scratch += '\f';
        break;
      case 'u': {
        if (last - p < 5) return Status::Bad;
        uint32_t cp = 0;
        for (int i = 1; i <= 4; ++i) {
          int h = hexValue(p[i]);
          if (h < 0) return Status::Bad;
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && last - p >= 7 && p[1] == '\\' && p[2] == 'u') {
          uint32_t lo = 0;
          bool ok = true;
          for (int i = 3; i <= 6; ++i) {
            int h = hexValue(p[i]);
            ok = ok && h >= 0;
            lo = lo * 16 + static_cast<uint32_t>(std::max(h, 0));
          }
          if (ok && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        appendUtf8(scratch, cp);
        break;
      }
      default:  // \" \\ \/ and anything else: the character itself
        scratch += *p;
    }
  }
  out = scratch;
  return Status::Ok;
}

// Skips any value: string, number, literal, object or array.
Status skipValue(Cursor& c) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  char first = *c.p;
  if (first == '"') {
    bool escaped;
    return stringEnd(c, escaped);
  }
  if (first == '{' || first == '[') {
    int depth = 0;
    while (c.p < c.end) {
      char ch = *c.p;
      if (ch == '"') {
        bool escaped;
        if (Status s = stringEnd(c, escaped); s != Status::Ok) return s;
        continue;
      }
      if (ch == '{' || ch == '[') {
        ++depth;
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) {
          ++c.p;
          return Status::Ok;
        }
      }
      ++c.p;
    }
    return Status::Short;
  }
  // Number or literal: up to the next delimiter.
  const char* start = c.p;
  while (c.p < c.end && *c.p != ',' && *c.p != '}' && *c.p != ']' && !isSpace(*c.p)) ++c.p;
  if (c.p == c.end) return Status::Short;
  return c.p > start ? Status::Ok : Status::Bad;
}

// The text of a scalar (number or literal) value.
Status scalarText(Cursor& c, std::string_view& out) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  const char* start = c.p;
  while (c.p < c.end && *c.p != ',' && *c.p != '}' && *c.p != ']' && !isSpace(*c.p)) ++c.p;
  if (c.p == c.end) return Status::Short;
  out = std::string_view(start, static_cast<size_t>(c.p - start));
  return out.empty() ? Status::Bad : Status::Ok;
}

// An integer, from a number ("12", "12.0", huge values saturate) or from the digits of a string
// ("25738", "stream 7"); `null`, "" and other strings give `missing`.
Status parseInteger(Cursor& c, int64_t& out, std::string& scratch, int64_t missing = -1) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  std::string_view text;
  if (*c.p == '"') {
    if (Status s = parseString(c, text, scratch); s != Status::Ok) return s;
    auto digit = std::find_if(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    text = text.substr(static_cast<size_t>(digit - text.begin()));
  } else if (Status s = scalarText(c, text); s != Status::Ok) {
    return s;
  }
  bool negative = !text.empty() && text[0] == '-';
  size_t i = negative ? 1 : 0;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') {
    out = missing;
    return Status::Ok;
  }
  uint64_t v = 0;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) v = v > kMax / 10 ? kMax : v * 10 + (text[i] - '0');
  v = std::min(v, kMax);
  out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return Status::Ok;
}

Status parseMicros(Cursor& c, int64_t& ns, bool& ok) {
  std::string_view text;
  if (Status s = scalarText(c, text); s != Status::Ok) return s;
  auto v = microsToNs(text);
  ok = v.has_value();
  if (ok) ns = *v;
  return Status::Ok;
}

// The elements of the array at the cursor: `element()` parses each one.
template <class F>
Status forEachElement(Cursor& c, F&& element) {
  if (Status s = expect(c, '['); s != Status::Ok) return s;
  for (;;) {
    if (skipSpace(c) != Status::Ok) return Status::Short;
    if (*c.p == ']') {
      ++c.p;
      return Status::Ok;
    }
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    if (Status s = element(); s != Status::Ok) return s;
  }
}

// The members of the object at the cursor: `member(key)` parses each value.
template <class F>
Status forEachMember(Cursor& c, F&& member) {
  if (Status s = expect(c, '{'); s != Status::Ok) return s;
  std::string key_scratch;
  for (;;) {
    if (skipSpace(c) != Status::Ok) return Status::Short;
    if (*c.p == '}') {
      ++c.p;
      return Status::Ok;
    }
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    std::string_view key;
    if (Status s = parseString(c, key, key_scratch); s != Status::Ok) return s;
    if (Status s = expect(c, ':'); s != Status::Ok) return s;
    if (Status s = member(key); s != Status::Ok) return s;
  }
}

// [x, y, z] of integers.
Status parseTriple(Cursor& c, std::array<uint32_t, 3>& out, std::string& scratch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != '[') return skipValue(c);
  size_t i = 0;
  return forEachElement(c, [&] {
    int64_t v = 0;
    Status s = parseInteger(c, v, scratch, 0);
    if (s == Status::Ok && i < 3) out[i] = static_cast<uint32_t>(std::clamp<int64_t>(v, 0, UINT32_MAX));
    ++i;
    return s;
  });
}

// ---------------------------------------------------------------------------------------------
// One trace event, as far as attribution needs it. Views point into the block or into the
// scratch strings, valid until the next event.

struct RawEvent {
  char ph = 0;
  std::string_view cat, name, call_stack;
  int64_t pid = 0, tid = 0;
  int64_t ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int64_t correlation = -1, python_id = -1, python_parent = -1;
  int64_t seq = -1, stream = -1, device = -1, bytes = 0;
  std::array<uint32_t, 3> grid{}, block{};
  std::string name_scratch, cat_scratch, stack_scratch, misc_scratch;

  void reset() {
    ph = 0;
    cat = name = call_stack = {};
    pid = tid = 0;
    ts = dur = 0;
    has_ts = has_dur = false;
    correlation = python_id = python_parent = seq = stream = device = -1;
    bytes = 0;
    grid = block = {};
  }
};

template <size_t N>
inline bool keyIs(std::string_view key, const char (&lit)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), lit, N - 1) == 0;
}

Status parseArgs(Cursor& c, RawEvent& e) {
  return forEachMember(c, [&](std::string_view key) {
    if (keyIs(key, "correlation")) return parseInteger(c, e.correlation, e.misc_scratch);
    if (keyIs(key, "Python id")) return parseInteger(c, e.python_id, e.misc_scratch);
    if (keyIs(key, "Python parent id")) return parseInteger(c, e.python_parent, e.misc_scratch);
    if (keyIs(key, "Sequence number")) return parseInteger(c, e.seq, e.misc_scratch);
    if (keyIs(key, "stream")) return parseInteger(c, e.stream, e.misc_scratch);
    if (keyIs(key, "device")) return parseInteger(c, e.device, e.misc_scratch);
    if (keyIs(key, "bytes")) return parseInteger(c, e.bytes, e.misc_scratch, 0);
    if (keyIs(key, "grid")) return parseTriple(c, e.grid, e.misc_scratch);
    if (keyIs(key, "block")) return parseTriple(c, e.block, e.misc_scratch);
    if (keyIs(key, "Call stack")) {
      if (skipSpace(c) != Status::Ok) return Status::Short;
      return *c.p == '"' ? parseString(c, e.call_stack, e.stack_scratch) : skipValue(c);
    }
    return skipValue(c);
  });
}

Status parseEvent(Cursor& c, RawEvent& e) {
  e.reset();
  return forEachMember(c, [&](std::string_view key) {
    if (keyIs(key, "ph")) {
      std::string_view v;
      Status s = parseString(c, v, e.misc_scratch);
      if (s == Status::Ok && !v.empty()) e.ph = v[0];
      return s;
    }
    if (keyIs(key, "cat")) return parseString(c, e.cat, e.cat_scratch);
    if (keyIs(key, "name")) return parseString(c, e.name, e.name_scratch);
    if (keyIs(key, "pid")) return parseInteger(c, e.pid, e.misc_scratch, 0);
    if (keyIs(key, "tid")) return parseInteger(c, e.tid, e.misc_scratch, 0);
    if (keyIs(key, "ts")) return parseMicros(c, e.ts, e.has_ts);
    if (keyIs(key, "dur")) return parseMicros(c, e.dur, e.has_dur);
    if (keyIs(key, "args")) {
      if (skipSpace(c) != Status::Ok) return Status::Short;
      return *c.p == '{' ? parseArgs(c, e) : skipValue(c);
    }
    return skipValue(c);
  });
}

// ---------------------------------------------------------------------------------------------
// Events -> model.

enum class Category : uint8_t { Other, Kernel, Memcpy, Memset, Runtime, Op, Annotation, Python };

Category categoryOf(std::string_view cat) {
  if (keyIs(cat, "python_function")) return Category::Python;
  if (keyIs(cat, "cpu_op") || keyIs(cat, "Operator")) return Category::Op;
  if (keyIs(cat, "kernel") || keyIs(cat, "Kernel")) return Category::Kernel;
  if (keyIs(cat, "cuda_runtime") || keyIs(cat, "cuda_driver") || keyIs(cat, "Runtime") || keyIs(cat, "Driver"))
    return Category::Runtime;
  if (keyIs(cat, "gpu_memcpy") || keyIs(cat, "Memcpy")) return Category::Memcpy;
  if (keyIs(cat, "gpu_memset") || keyIs(cat, "Memset")) return Category::Memset;
  if (keyIs(cat, "user_annotation")) return Category::Annotation;
  return Category::Other;  // gpu_user_annotation (never GPU work), flows, overhead, Trace, ...
}

MemoryKind memoryKindNamed(std::string_view s) {
  if (s.starts_with("Pageable")) return MemoryKind::Pageable;
  if (s.starts_with("Pinned")) return MemoryKind::Pinned;
  if (s.starts_with("Device") || s.starts_with("Array")) return MemoryKind::Device;
  if (s.starts_with("Managed")) return MemoryKind::Managed;
  return MemoryKind::Unknown;
}

// "Memcpy HtoD (Pageable -> Device)".
void describeCopy(std::string_view name, model::GpuActivity& a) {
  if (name.find("HtoD") != std::string_view::npos)
    a.copy = CopyKind::HostToDevice;
  else if (name.find("DtoH") != std::string_view::npos)
    a.copy = CopyKind::DeviceToHost;
  else if (name.find("DtoD") != std::string_view::npos)
    a.copy = CopyKind::DeviceToDevice;
  else if (name.find("HtoH") != std::string_view::npos)
    a.copy = CopyKind::HostToHost;
  else if (name.find("PtoP") != std::string_view::npos)
    a.copy = CopyKind::PeerToPeer;
  auto open = name.find('(');
  auto arrow = name.find("->");
  if (open != std::string_view::npos && arrow != std::string_view::npos && arrow > open) {
    a.src = memoryKindNamed(name.substr(open + 1));
    auto rest = name.substr(arrow + 2);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    a.dst = memoryKindNamed(rest);
  }
}

struct PendingCall {
  model::PythonCall call;
  int64_t id = -1;
  int64_t parent_id = -1;
};

class Builder {
 public:
  explicit Builder(model::Profile& p) : p_(p) {
    memset_name_ = p_.strings.intern("[memset]");
    for (auto k : {CopyKind::Unknown, CopyKind::HostToDevice, CopyKind::DeviceToHost, CopyKind::DeviceToDevice,
                   CopyKind::HostToHost, CopyKind::PeerToPeer})
      copy_names_[static_cast<size_t>(k)] = p_.strings.intern(copyName(k));
  }

  void add(const RawEvent& e) {
    if (e.ph != 'X' || !e.has_ts) return;
    Category cat = categoryOf(e.cat);
    if (cat == Category::Other) return;
    int64_t start = e.ts, end = e.ts + std::max<int64_t>(0, e.dur);
    auto pid = static_cast<uint32_t>(e.pid), tid = static_cast<uint32_t>(e.tid);
    switch (cat) {
      case Category::Kernel:
      case Category::Memcpy:
      case Category::Memset: {
        model::GpuActivity a;
        a.start_ns = start;
        a.end_ns = end;
        a.correlation = e.correlation > 0 ? e.correlation : -1;
        a.device = static_cast<uint32_t>(e.device >= 0 ? e.device : e.pid);
        a.stream = static_cast<uint32_t>(e.stream >= 0 ? e.stream : e.tid);
        a.bytes = static_cast<uint64_t>(std::max<int64_t>(0, e.bytes));
        if (cat == Category::Kernel) {
          a.kind = ActivityKind::Kernel;
          a.name = p_.strings.intern(e.name);
          a.launch_config = launchConfig(e.grid, e.block);
        } else if (cat == Category::Memcpy) {
          a.kind = ActivityKind::Memcpy;
          describeCopy(e.name, a);
          a.name = copy_names_[static_cast<size_t>(a.copy)];
        } else {
          a.kind = ActivityKind::Memset;
          a.name = memset_name_;
        }
        p_.activities.push_back(a);
        return;
      }
      case Category::Runtime: {
        model::ApiCall c;
        c.start_ns = start;
        c.end_ns = end;
        c.correlation = e.correlation > 0 ? e.correlation : -1;
        c.pid = pid;
        c.tid = tid;
        std::string_view name = stripVersion(e.name);
        c.name = p_.strings.intern(name);
        c.sync = syncKindOf(name);
        c.launches = launchesWork(name);
        p_.api_calls.push_back(c);
        return;
      }
      case Category::Op:
      case Category::Annotation: {
        model::NvtxRange r;
        r.start_ns = start;
        r.end_ns = end;
        r.pid = pid;
        r.tid = tid;
        r.text = p_.strings.intern(e.name);
        if (cat == Category::Op) {
          r.op = r.text;
          r.seq = e.seq >= 0 && e.seq <= INT32_MAX ? static_cast<int32_t>(e.seq) : -1;
          if (!e.call_stack.empty()) addCallStack(e.call_stack, start, pid, tid);
        }
        p_.ranges.push_back(r);
        return;
      }
      case Category::Python: {
        PendingCall pc;
        auto& call = pc.call;
        call.start_ns = start;
        call.end_ns = end;
        call.pid = pid;
        call.tid = tid;
        describePython(e.name, call);
        pc.id = e.python_id;
        pc.parent_id = e.python_parent;
        pending_.push_back(pc);
        return;
      }
      case Category::Other:
        return;
    }
  }

  // Sorts, links Python parents, gives GPU activities the pid of their launch.
  void finish() {
    std::sort(pending_.begin(), pending_.end(), [](const PendingCall& a, const PendingCall& b) {
      return std::tie(a.call.pid, a.call.tid, a.call.start_ns, b.call.end_ns) <
             std::tie(b.call.pid, b.call.tid, b.call.start_ns, a.call.end_ns);
    });
    std::vector<std::pair<int64_t, int32_t>> by_id;
    by_id.reserve(pending_.size());
    for (size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].id >= 0) by_id.emplace_back(pending_[i].id, static_cast<int32_t>(i));
    std::sort(by_id.begin(), by_id.end());
    p_.calls.reserve(pending_.size());
    for (auto& pc : pending_) {
      if (pc.parent_id >= 0) {
        auto it = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(pc.parent_id, INT32_MIN));
        if (it != by_id.end() && it->first == pc.parent_id) pc.call.parent = it->second;
      }
      p_.calls.push_back(pc.call);
    }
    pending_.clear();
    pending_.shrink_to_fit();

    // GPU rows carry the device as their pid; the model joins them to launches by the launching
    // process. Correlation ids are unique within a trace.
    std::vector<std::pair<int64_t, uint32_t>> pid_by_corr;
    pid_by_corr.reserve(p_.api_calls.size());
    std::unordered_map<uint32_t, size_t> calls_per_pid;
    for (const auto& c : p_.api_calls) {
      if (c.correlation > 0) pid_by_corr.emplace_back(c.correlation, c.pid);
      ++calls_per_pid[c.pid];
    }
    std::sort(pid_by_corr.begin(), pid_by_corr.end());
    uint32_t main_pid = 0;
    size_t most = 0;
    for (const auto& [pid, n] : calls_per_pid)
      if (n > most) main_pid = pid, most = n;
    for (auto& a : p_.activities) {
      a.pid = main_pid;
      if (a.correlation <= 0) continue;
      auto it = std::lower_bound(pid_by_corr.begin(), pid_by_corr.end(), std::make_pair(a.correlation, 0u));
      if (it != pid_by_corr.end() && it->first == a.correlation) a.pid = it->second;
    }
    p_.sortAll();
    clampNesting();
  }

  size_t pythonEvents() const { return pending_.size() + p_.calls.size(); }

  // Takes the rows another builder read (the second part of a split trace) into this one,
  // re-interning its strings. Before finish().
  void absorb(Builder& other, model::Profile& part) {
    std::vector<model::StringId> remap(part.strings.size());
    for (model::StringId i = 0; i < part.strings.size(); ++i) remap[i] = p_.strings.intern(part.strings[i]);
    for (auto a : part.activities) {
      a.name = remap[a.name];
      if (a.launch_config != 0) {
        const auto& cfg = part.launch_configs[a.launch_config];
        a.launch_config = launchConfig(cfg.grid, cfg.block);
      }
      p_.activities.push_back(a);
    }
    for (auto c : part.api_calls) {
      c.name = remap[c.name];
      p_.api_calls.push_back(c);
    }
    for (auto r : part.ranges) {
      r.text = remap[r.text];
      r.op = remap[r.op];
      p_.ranges.push_back(r);
    }
    auto frame_base = static_cast<uint32_t>(p_.frames.size());
    for (auto f : part.frames) {
      f.function = remap[f.function];
      f.file = remap[f.file];
      p_.frames.push_back(f);
    }
    for (auto m : part.marks) {
      m.first_frame += frame_base;
      p_.marks.push_back(m);
    }
    for (auto pc : other.pending_) {
      pc.call.file = remap[pc.call.file];
      pc.call.function = remap[pc.call.function];
      pending_.push_back(pc);
    }
    saw_call_stacks_ = saw_call_stacks_ || other.saw_call_stacks_;
    other.pending_.clear();
  }
  bool sawCallStacks() const { return saw_call_stacks_; }

 private:
  uint32_t launchConfig(const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block) {
    if (grid == std::array<uint32_t, 3>{} && block == std::array<uint32_t, 3>{}) return 0;
    model::LaunchConfig cfg{grid, block};
    uint64_t key = 0;
    for (uint32_t v : grid) key = key * 1000003u + v;
    for (uint32_t v : block) key = key * 1000003u + v;
    auto [it, fresh] = configs_.emplace(key, static_cast<uint32_t>(p_.launch_configs.size()));
    if (fresh) p_.launch_configs.push_back(cfg);
    return p_.launch_configs[it->second] == cfg ? it->second : 0;
  }

  void describePython(std::string_view name, model::PythonCall& call) {
    model::StringId id = p_.strings.intern(name);
    auto it = python_names_.find(id);
    if (it == python_names_.end()) {
      PythonName parsed = parsePythonName(name);
      model::PythonCall shape;
      shape.kind = parsed.kind;
      shape.file = p_.strings.intern(parsed.file);
      shape.line = parsed.line;
      shape.function = p_.strings.intern(parsed.function);
      it = python_names_.emplace(id, shape).first;
    }
    call.kind = it->second.kind;
    call.file = it->second.file;
    call.line = it->second.line;
    call.function = it->second.function;
  }

  // "a.py(12): f;b.py(3): g;" innermost first -> one mark at the op's start.
  void addCallStack(std::string_view stack, int64_t time, uint32_t pid, uint32_t tid) {
    saw_call_stacks_ = true;
    model::PythonMark m;
    m.time_ns = time;
    m.pid = pid;
    m.tid = tid;
    m.first_frame = static_cast<uint32_t>(p_.frames.size());
    while (!stack.empty()) {
      auto semi = stack.find(';');
      std::string_view frame = stack.substr(0, semi);
      stack = semi == std::string_view::npos ? std::string_view{} : stack.substr(semi + 1);
      PythonName parsed = parsePythonName(frame);
      if (parsed.kind != model::CallKind::Function) continue;
      p_.frames.push_back({p_.strings.intern(parsed.function), p_.strings.intern(parsed.file), parsed.line});
    }
    m.frame_count = static_cast<uint32_t>(p_.frames.size()) - m.first_frame;
    if (m.frame_count > 0) p_.marks.push_back(m);
  }

  // Float timestamps can end a child a few ns after its parent: clamp children into parents
  // (within 2 ns) so nesting by time holds, as HTA does.
  void clampNesting() {
    constexpr int64_t kToleranceNs = 2;
    std::vector<size_t> open;
    uint64_t thread = ~0ull;
    for (size_t i = 0; i < p_.ranges.size(); ++i) {
      auto& r = p_.ranges[i];
      uint64_t key = model::threadKey(r.pid, r.tid);
      if (key != thread) open.clear(), thread = key;
      while (!open.empty() && p_.ranges[open.back()].end_ns <= r.start_ns) open.pop_back();
      if (!open.empty()) {
        const auto& parent = p_.ranges[open.back()];
        if (r.end_ns > parent.end_ns && r.end_ns - parent.end_ns <= kToleranceNs) r.end_ns = parent.end_ns;
      }
      open.push_back(i);
    }
    for (auto& c : p_.calls) {
      if (c.parent < 0) continue;
      const auto& parent = p_.calls[static_cast<size_t>(c.parent)];
      if (parent.tid != c.tid) continue;
      if (c.end_ns > parent.end_ns && c.end_ns - parent.end_ns <= kToleranceNs) c.end_ns = parent.end_ns;
      if (c.start_ns < parent.start_ns && parent.start_ns - c.start_ns <= kToleranceNs) c.start_ns = parent.start_ns;
    }
  }

  model::Profile& p_;
  model::StringId memset_name_ = 0;
  std::array<model::StringId, 6> copy_names_{};
  std::unordered_map<uint64_t, uint32_t> configs_;
  std::unordered_map<model::StringId, model::PythonCall> python_names_;
  std::vector<PendingCall> pending_;
  bool saw_call_stacks_ = false;
};

// ---------------------------------------------------------------------------------------------
// The driver: top-level members one at a time; `traceEvents` one event at a time.

class Reader {
 public:
  Reader(Input& in, model::Profile& p) : in_(in), p_(p), builder_(p) { buf_.resize(4 << 20); }

  // False with `error` set when the file is not a trace at all.
  bool run(std::string& error) {
    // The array form of the Chrome trace format: the events alone.
    bool array_form = false;
    unit([&](Cursor& c) {
      if (skipSpace(c) != Status::Ok) return Status::Short;
      array_form = *c.p == '[';
      return Status::Ok;
    });
    if (array_form) {
      readEvents();
      if (events_ == 0) error = "no trace events in the JSON array";
      return events_ > 0;
    }
    if (!unit([](Cursor& c) { return expect(c, '{'); })) {
      error = "not a Chrome trace JSON object";
      return false;
    }
    bool saw_events = false;
    for (;;) {
      std::string key;
      bool closed = false;
      bool ok = unit([&](Cursor& c) {
        if (skipSpace(c) != Status::Ok) return Status::Short;
        if (*c.p == ',') ++c.p;
        if (skipSpace(c) != Status::Ok) return Status::Short;
        if (*c.p == '}') {
          ++c.p;
          closed = true;
          return Status::Ok;
        }
        std::string_view k;
        std::string scratch;
        if (Status s = parseString(c, k, scratch); s != Status::Ok) return s;
        key.assign(k);
        return expect(c, ':');
      });
      if (!ok || closed) break;
      if (key == "traceEvents") {
        saw_events = true;
        if (!readEvents()) break;
      } else if (key == "baseTimeNanoseconds") {
        int64_t base = 0;
        std::string scratch;
        if (!unit([&](Cursor& c) { return parseInteger(c, base, scratch, 0); })) break;
        p_.info.capabilities.push_back("relative-timestamps");
      } else if (key == "deviceProperties") {
        if (!readDevices()) break;
      } else if (!unit(skipValue)) {
        break;
      }
    }
    if (!saw_events && events_ == 0) {
      error = truncated_ ? "the trace ends before its events" : "no \"traceEvents\" in the trace";
      return false;
    }
    return true;
  }

  uint64_t events() const { return events_; }
  uint64_t bytes() const { return consumed_ + pos_; }
  bool truncated() const { return truncated_; }
  uint64_t skippedEvents() const { return skipped_; }
  Builder& builder() { return builder_; }

 private:
  // Runs `parse` over the unconsumed block; refills and retries while it runs short. False at
  // the end of input (truncated) or on bad JSON that cannot be skipped.
  template <class F>
  bool unit(F&& parse) {
    for (;;) {
      Cursor c{buf_.data() + pos_, buf_.data() + end_};
      Status s = parse(c);
      if (s == Status::Ok) {
        pos_ = static_cast<size_t>(c.p - buf_.data());
        return true;
      }
      if (s == Status::Bad) {
        bad_ = true;
        return false;
      }
      if (!fill()) {
        truncated_ = true;
        return false;
      }
    }
  }

  // Moves the unconsumed tail to the front and reads more; grows the block when one unit
  // fills it. False when nothing more can be read.
  bool fill() {
    if (eof_) return false;
    consumed_ += pos_;
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    size_t got = in_.read(buf_.data() + end_, buf_.size() - end_);
    if (got == 0) {
      eof_ = true;
      return false;
    }
    end_ += got;
    return true;
  }

 public:
  // The events of a split trace's second part: from an event's opening brace to the `]`.
  bool runEventsOnly() {
    in_events_ = true;
    bool ok = readEvents(false);
    return ok || events_ > 0;
  }

  bool inEvents() const { return in_events_; }
  bool failedFirst() const { return events_ == 0 && (bad_ || skipped_ > 0); }

 private:
  bool readEvents(bool open = true) {
    if (open && !unit([](Cursor& c) { return expect(c, '['); })) return false;
    in_events_ = true;
    RawEvent e;
    for (;;) {
      bool closed = false;
      bool ok = unit([&](Cursor& c) {
        if (skipSpace(c) != Status::Ok) return Status::Short;
        if (*c.p == ',') {
          ++c.p;
          if (skipSpace(c) != Status::Ok) return Status::Short;
        }
        if (*c.p == ']') {
          ++c.p;
          closed = true;
          return Status::Ok;
        }
        return parseEvent(c, e);
      });
      if (closed) return true;
      if (!ok) {
        if (!bad_ || !resync()) return false;
        ++skipped_;
        continue;
      }
      ++events_;
      builder_.add(e);
    }
  }

  // After an event that is not valid JSON (old Kineto wrote unescaped quotes in names): skip to
  // the next line that opens an event. False when none follows.
  bool resync() {
    bad_ = false;
    // Past the opening brace of the bad event itself.
    const char* brace = static_cast<const char*>(std::memchr(buf_.data() + pos_, '{', end_ - pos_));
    if (brace) pos_ = static_cast<size_t>(brace - buf_.data());
    for (;;) {
      const char* from = buf_.data() + pos_ + 1;
      const char* end = buf_.data() + end_;
      for (const char* p = from; p < end; ++p) {
        if (*p != '\n') continue;
        const char* q = p + 1;
        while (q < end && (*q == ' ' || *q == '\t')) ++q;
        if (q < end && *q == '{') {
          pos_ = static_cast<size_t>(q - buf_.data());
          return true;
        }
      }
      pos_ = end_ > 0 ? end_ - 1 : 0;
      if (!fill()) {
        truncated_ = true;
        return false;
      }
    }
  }

  bool readDevices() {
    std::vector<std::string> names;
    bool ok = unit([&](Cursor& c) {
      names.clear();
      std::string value_scratch;
      return forEachElement(c, [&] {
        if (*c.p != '{') return skipValue(c);
        return forEachMember(c, [&](std::string_view key) {
          if (skipSpace(c) != Status::Ok) return Status::Short;
          if (!keyIs(key, "name") || *c.p != '"') return skipValue(c);
          std::string_view value;
          Status v = parseString(c, value, value_scratch);
          if (v == Status::Ok) names.emplace_back(value);
          return v;
        });
      });
    });
    if (ok) p_.info.gpus = names;
    return ok;
  }

  Input& in_;
  model::Profile& p_;
  Builder builder_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false, truncated_ = false, bad_ = false, in_events_ = false;
  uint64_t events_ = 0, skipped_ = 0;
};

}  // namespace

std::optional<int64_t> microsToNs(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = text[0] == '-';
  if (negative) ++i;
  uint64_t whole = 0;
  size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) whole = whole * 10 + (text[i] - '0');
  bool simple = digits > 0 && digits <= 18;
  int64_t frac = 0;
  if (simple && i < text.size() && text[i] == '.') {
    ++i;
    int scale = 100;
    size_t first = i;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      if (i - first < 3) {
        frac += (text[i] - '0') * scale;
        scale /= 10;
      } else if (i - first == 3 && text[i] >= '5') {
        ++frac;  // round half up on the fourth decimal
      }
    }
  }
  if (simple && i == text.size()) {
    if (whole > static_cast<uint64_t>(INT64_MAX / 1000 - 1)) return std::nullopt;
    int64_t ns = static_cast<int64_t>(whole) * 1000 + frac;
    return negative ? -ns : ns;
  }
  // Exponents and very long numbers: through a double.
  std::string copy(text);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !(v * 1000 < 9.2e18 && v * 1000 > -9.2e18)) return std::nullopt;
  return std::llround(v * 1000);
}

PythonName parsePythonName(std::string_view name) {
  PythonName out;
  if (name.starts_with("nn.Module: ")) {
    out.kind = model::CallKind::Module;
    std::string_view cls = name.substr(11);
    auto underscore = cls.rfind('_');
    if (underscore != std::string_view::npos && underscore + 1 < cls.size() &&
        std::all_of(cls.begin() + static_cast<long>(underscore) + 1, cls.end(),
                    [](char ch) { return ch >= '0' && ch <= '9'; }))
      cls = cls.substr(0, underscore);
    out.function = cls;
    return out;
  }
  if (name.starts_with("<built-in ")) {
    out.kind = model::CallKind::Builtin;
    std::string_view rest = name.substr(10);
    if (rest.starts_with("method "))
      rest.remove_prefix(7);
    else if (rest.starts_with("function "))
      rest.remove_prefix(9);
    auto stop = rest.find_first_of(" >");
    out.function = rest.substr(0, stop);
    return out;
  }
  // "<file>(<line>): <func>": split on the last "): ".
  auto sep = name.rfind("): ");
  if (sep != std::string_view::npos) {
    std::string_view left = name.substr(0, sep);
    auto open = left.rfind('(');
    if (open != std::string_view::npos && open + 1 < left.size() &&
        std::all_of(left.begin() + static_cast<long>(open) + 1, left.end(),
                    [](char ch) { return ch >= '0' && ch <= '9'; })) {
      out.kind = model::CallKind::Function;
      out.file = left.substr(0, open);
      int64_t line = 0;
      for (char ch : left.substr(open + 1)) line = std::min<int64_t>(line * 10 + (ch - '0'), INT32_MAX);
      out.line = static_cast<int32_t>(line);
      out.function = name.substr(sep + 3);
      return out;
    }
  }
  out.kind = model::CallKind::Builtin;  // "<method 'x' of 'y' objects>" and other reprs
  out.function = {};
  return out;
}

bool looksLikeKinetoTrace(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char head[64] = {};
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return true;
  for (size_t i = 0; i < n; ++i) {
    if (isSpace(static_cast<char>(head[i]))) continue;
    return head[i] == '{';
  }
  return false;
}

namespace {

// Where a plain trace can be cut in two for parallel parsing: the opening brace of an event
// that follows `,` and a line break near the middle; nullopt when none is found.
std::optional<uint64_t> splitPoint(const std::string& path, uint64_t size) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::vector<char> window(1 << 20);
  std::fseek(f, static_cast<long>(size / 2), SEEK_SET);
  size_t n = std::fread(window.data(), 1, window.size(), f);
  std::fclose(f);
  for (size_t i = 1; i + 1 < n; ++i) {
    if (window[i] != '\n' || window[i - 1] != ',') continue;
    size_t j = i + 1;
    while (j < n && (window[j] == ' ' || window[j] == '\t')) ++j;
    if (j < n && window[j] == '{') return size / 2 + j;
  }
  return std::nullopt;
}

}  // namespace

LoadResult loadKinetoTrace(const std::string& path, KinetoReadStats* stats, const KinetoReadOptions& options) {
  Input in;
  std::string error;
  if (!in.open(path, error)) return {std::nullopt, error};
  model::Profile profile;
  profile.info.format = "kineto-json";
  Reader reader(in, profile);

  // Large plain files are parsed in two halves on two threads, then merged.
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  std::optional<uint64_t> split;
  if (!in.gzip() && !ec && size >= options.parallel_from_bytes && std::thread::hardware_concurrency() >= 2)
    split = splitPoint(path, size);
  bool ok = false;
  bool truncated = false;
  uint64_t events = 0, bytes = 0, skipped = 0;
  Input again;  // a whole second read, when the cut was not inside the events array
  Input* active = &in;
  if (split) {
    Input tail_in;
    model::Profile tail;
    std::unique_ptr<Reader> tail_reader;
    if (tail_in.open(path, error)) {
      tail_in.window(*split, size - *split);
      in.window(0, *split);
      tail_reader = std::make_unique<Reader>(tail_in, tail);
      std::thread worker([&] { tail_reader->runEventsOnly(); });
      ok = reader.run(error);
      worker.join();
      if (ok && reader.inEvents() && !tail_reader->failedFirst()) {
        reader.builder().absorb(tail_reader->builder(), tail);
        truncated = tail_reader->truncated() || !tail_in.damaged().empty();
        events = reader.events() + tail_reader->events();
        bytes = size;  // the tail after the events array is not parsed, only read
        skipped = reader.skippedEvents() + tail_reader->skippedEvents();
      } else {
        split.reset();  // not an events array where we cut: read it whole
      }
    } else {
      split.reset();
    }
    if (!split) {
      profile = model::Profile{};
      profile.info.format = "kineto-json";
      if (!again.open(path, error)) return {std::nullopt, error};
      active = &again;
    }
  }
  std::unique_ptr<Reader> whole;
  if (!split) {
    whole = std::make_unique<Reader>(*active, profile);
    ok = whole->run(error);
    truncated = whole->truncated() || !active->damaged().empty();
    events = whole->events();
    bytes = whole->bytes();
    skipped = whole->skippedEvents();
  }
  Reader& used = whole ? *whole : reader;
  if (stats) {
    stats->json_bytes = bytes;
    stats->events = events;
  }
  if (!ok) {
    std::string why = path + ": " + error;
    if (!active->damaged().empty()) why += " (" + active->damaged() + ")";
    return {std::nullopt, why};
  }
  if (options.progress) options.progress(std::to_string(events) + " trace events read", 60);
  size_t python_events = used.builder().pythonEvents();
  bool call_stacks = used.builder().sawCallStacks();
  used.builder().finish();
  auto& info = profile.info;
  info.tool_version = "PyTorch profiler";
  info.schema_version = "chrome-trace";
  if (truncated)
    info.warnings.push_back("the trace is truncated" +
                            (active->damaged().empty() ? "" : " (" + active->damaged() + ")") + ": loaded the " +
                            std::to_string(events) + " complete events before the cut; later steps are missing");
  if (skipped > 0)
    info.warnings.push_back("skipped " + std::to_string(skipped) +
                            " events that are not valid JSON (unescaped quotes in names, from old Kineto versions)");
  if (python_events > 0) info.capabilities.push_back("python-functions");
  if (call_stacks) info.capabilities.push_back("call-stacks");
  if (python_events == 0 && !call_stacks && !profile.activities.empty())
    info.warnings.push_back(
        "no Python stacks in the trace: profile with torch.profiler.profile(..., with_stack=True) to put GPU time on "
        "lines");
  if (std::any_of(profile.ranges.begin(), profile.ranges.end(), [](const model::NvtxRange& r) { return r.seq >= 0; }))
    info.capabilities.push_back("autograd-ops");
  return {std::move(profile), ""};
}

}  // namespace sightline::ingest
