// The model cache's format: a header (magic, format number, this build's struct layout, the
// caller's key), then every table of the profile in a fixed order (rows of trivially copyable
// structs as their bytes, strings length-prefixed), then a checksum of everything before it.
#include "analysis/ingest/model_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>
#include <type_traits>

#include "analysis/model/checksum.h"

namespace sightline::ingest {
namespace {

constexpr char kMagic[16] = {'S', 'I', 'G', 'H', 'T', 'L', 'I', 'N', 'E', '-', 'M', 'O', 'D', 'E', 'L', '\n'};
// 6: a job's parts; 5: the checksum in four lanes; 4: hosts and GPU UUIDs; 3: CUTLASS kernels by
// their demangled name; 2: snapshot frames interned
constexpr uint32_t kFormat = 6;

// Sizes of the rows stored as bytes: a build whose structs differ reads none of another's.
std::string layout() {
  return "a" + std::to_string(sizeof(model::GpuActivity)) + "c" + std::to_string(sizeof(model::ApiCall)) + "r" +
         std::to_string(sizeof(model::NvtxRange)) + "m" + std::to_string(sizeof(model::PythonMark)) + "f" +
         std::to_string(sizeof(model::Frame)) + "p" + std::to_string(sizeof(model::PythonCall)) + "l" +
         std::to_string(sizeof(model::LaunchConfig)) + "e" + std::to_string(sizeof(model::MemoryEvent)) + "b" +
         std::to_string(sizeof(model::MemoryBlock)) + "u" + std::to_string(sizeof(model::MemoryUse)) + "y" +
         std::to_string(sizeof(model::MemoryFrame));
}

// Tables of at least this many bytes are summed, and read, in two halves.
constexpr size_t kHalvedFrom = size_t{32} << 20;
// Tables of this size or more have their memory mapped on two cores before they are read (prefault).
constexpr size_t kPrefaultFrom = size_t{4} << 20;

// Records what encodeModelCache says in order, each piece as the checksum takes it: small
// ones copied, a table of kReferencedFrom bytes or more by where its rows are (ModelCacheImage).
class Recorder {
 public:
  Recorder(std::string& copied, std::vector<ModelCacheImage::Piece>& pieces) : copied_(copied), pieces_(pieces) {}
  void bytes(const void* data, size_t n) {
    pieces_.push_back({nullptr, n, copied_.size(), false});
    copied_.append(static_cast<const char*>(data), n);
  }
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
  }
  void str(std::string_view s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void rows(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod<uint64_t>(v.size());
    size_t n = v.size() * sizeof(T);
    if (n < kReferencedFrom) return bytes(v.data(), n);
    // The reader takes a large table's halves on two cores: each half has its own checksum.
    pieces_.push_back({reinterpret_cast<const char*>(v.data()), n, 0, n >= kHalvedFrom});
  }
  void strs(const std::vector<std::string>& v) {
    pod<uint64_t>(v.size());
    for (const auto& s : v) str(s);
  }

 private:
  static constexpr size_t kReferencedFrom = 4096;
  std::string& copied_;
  std::vector<ModelCacheImage::Piece>& pieces_;
};

// The bytes to a sink in blocks of a megabyte (a large table in one call), the checksum last.
class Writer {
 public:
  explicit Writer(const ByteSink& sink) : sink_(sink) {}
  void piece(const char* data, size_t n, bool halved) {
    h_ = halved ? model::mixWord(model::checksum(h_, data, n / 2),
                                 model::checksum(model::kChecksumSeed, data + n / 2, n - n / 2))
                : model::checksum(h_, data, n);
    raw(data, n);
  }
  bool finish() {
    uint64_t h = h_;
    raw(&h, sizeof h);
    flush();
    return ok_;
  }

 private:
  void raw(const void* data, size_t n) {
    if (n >= kBuffer) {
      flush();
      ok_ = ok_ && sink_(std::string_view(static_cast<const char*>(data), n));
      return;
    }
    buffer_.append(static_cast<const char*>(data), n);
    if (buffer_.size() >= kBuffer) flush();
  }
  void flush() {
    if (!buffer_.empty()) ok_ = ok_ && sink_(buffer_);
    buffer_.clear();
  }
  static constexpr size_t kBuffer = size_t{1} << 20;
  const ByteSink& sink_;
  std::string buffer_;
  uint64_t h_ = 0;
  bool ok_ = true;
};

class Reader {
 public:
  Reader(std::ifstream& in, const std::string& path, uint64_t size) : in_(in), path_(path), left_(size) {}
  bool bytes(void* data, size_t n) {
    if (!take(n, data)) return false;
    h_ = model::checksum(h_, data, n);
    return true;
  }
  template <class T>
  bool pod(T& v) {
    return bytes(&v, sizeof v);
  }
  bool str(std::string& s) {
    uint64_t n = 0;
    if (!pod(n) || n > left_) return fail();
    s.resize(n);
    return bytes(s.data(), n);
  }
  template <class T>
  bool rows(std::vector<T>& v) {
    uint64_t n = 0;
    if (!pod(n) || n > left_ / sizeof(T)) return fail();
    if (n * sizeof(T) >= kPrefaultFrom) {
      v.reserve(n);
      prefault(reinterpret_cast<char*>(v.data()), n * sizeof(T));
    }
    v.resize(n);
    if (n * sizeof(T) < kHalvedFrom) return bytes(v.data(), n * sizeof(T));
    return halves(reinterpret_cast<char*>(v.data()), n * sizeof(T));
  }
  bool strs(std::vector<std::string>& v) {
    uint64_t n = 0;
    if (!pod(n) || n > left_ / sizeof(uint64_t)) return fail();
    v.resize(n);
    for (auto& s : v)
      if (!str(s)) return false;
    return true;
  }
  // A large table's fresh memory, mapped in two halves on two cores before it is filled: on a
  // virtual machine a page fault costs microseconds, and one table is 60,000 pages. Where the
  // kernel cannot (MADV_POPULATE_WRITE, Linux 5.14), the first touch maps them as before.
  static void prefault(char* data, size_t n) {
    auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
    auto end = (reinterpret_cast<uintptr_t>(data) + n) & ~(page - 1);
    if (end <= begin) return;
    auto middle = begin + ((end - begin) / 2 & ~(page - 1));
    auto populate = [](uintptr_t from, uintptr_t to) {
      if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE);
    };
    std::jthread second(populate, middle, end);
    populate(begin, middle);
  }
  // A large table: its second half read and summed on another thread, from a second handle.
  bool halves(char* data, size_t n) {
    if (n > left_) return fail();
    size_t first = n / 2;
    auto at = static_cast<std::streamoff>(in_.tellg());
    bool second_ok = false;
    uint64_t second_sum = 0;
    {
      std::jthread second([&] {
        std::ifstream other(path_, std::ios::binary);
        other.seekg(at + static_cast<std::streamoff>(first));
        second_ok = other && other.read(data + first, static_cast<std::streamsize>(n - first));
        if (second_ok) second_sum = model::checksum(model::kChecksumSeed, data + first, n - first);
      });
      if (!take(first, data)) return false;  // the thread joins before `data` goes
      h_ = model::checksum(h_, data, first);
    }
    if (!second_ok) return fail();
    left_ -= n - first;
    in_.seekg(at + static_cast<std::streamoff>(n));
    h_ = model::mixWord(h_, second_sum);
    return static_cast<bool>(in_);
  }
  // The stored checksum matches, and nothing follows it.
  bool finish() {
    uint64_t expected = h_, stored = 0;
    return take(sizeof stored, &stored) && stored == expected && left_ == 0;
  }

 private:
  bool take(size_t n, void* data) {
    if (n > left_) return fail();
    left_ -= n;
    return static_cast<bool>(in_.read(static_cast<char*>(data), static_cast<std::streamsize>(n)));
  }
  bool fail() {
    left_ = 0;
    return false;
  }
  std::ifstream& in_;
  std::string path_;
  uint64_t left_;
  uint64_t h_ = 0;
};

}  // namespace

ModelCacheImage::ModelCacheImage(const model::Profile& p, const std::string& key) {
  Recorder w(copied_, pieces_);
  w.bytes(kMagic, sizeof kMagic);
  w.pod(kFormat);
  w.str(layout());
  w.str(key);
  w.str(p.info.format), w.str(p.info.tool_version), w.str(p.info.schema_version), w.str(p.info.platform);
  w.strs(p.info.gpus), w.strs(p.info.gpu_uuids), w.str(p.info.host), w.strs(p.info.warnings),
      w.strs(p.info.capabilities);
  w.pod(p.info.has_blobs), w.pod(p.info.utc_start_ns), w.pod(static_cast<uint64_t>(p.info.processes.size()));
  for (const auto& pr : p.info.processes)
    w.pod(pr.pid), w.str(pr.name), w.pod(pr.rank), w.pod(pr.world_size), w.str(pr.host), w.str(pr.rank_source),
        w.str(pr.gpu_uuid);
  w.pod(static_cast<uint64_t>(p.info.parts.size()));
  for (const auto& part : p.info.parts) {
    w.str(part.name), w.str(part.format), w.str(part.tool_version), w.strs(part.gpus), w.strs(part.warnings),
        w.strs(part.capabilities), w.pod(static_cast<uint64_t>(part.pids.size()));
    for (const auto& [own, merged] : part.pids) w.pod(own), w.pod(merged);
  }
  w.pod(static_cast<uint64_t>(p.strings.size()));
  for (model::StringId i = 0; i < p.strings.size(); ++i) w.str(p.strings[i]);
  w.rows(p.activities), w.rows(p.api_calls), w.rows(p.ranges), w.rows(p.marks), w.rows(p.frames);
  w.rows(p.calls), w.rows(p.launch_configs), w.rows(p.memory_uses);
  std::vector<std::pair<uint32_t, const model::CaptureEvents::Process*>> capture;  // by pid: one profile, one encoding
  for (const auto& [pid, proc] : p.capture.processes()) capture.emplace_back(pid, &proc);
  std::sort(capture.begin(), capture.end());
  w.pod(static_cast<uint64_t>(capture.size()));
  for (const auto& [pid, proc_ptr] : capture) {
    const auto& proc = *proc_ptr;
    w.pod(pid), w.pod(proc.first_bin);
    for (const auto& bins : proc.bins) w.rows(bins);
  }
  const auto& m = p.memory;
  w.strs(m.strings), w.rows(m.frames);
  w.pod(static_cast<uint64_t>(m.stacks.size()));
  for (const auto& s : m.stacks) w.rows(s);
  w.rows(m.events), w.rows(m.blocks), w.rows(m.reserved_at_dump), w.strs(m.warnings);
}

bool ModelCacheImage::write(const ByteSink& sink) const {
  Writer w(sink);
  for (const auto& piece : pieces_)
    w.piece(piece.data ? piece.data : copied_.data() + piece.at, piece.size, piece.halved);
  return w.finish();
}

bool encodeModelCache(const model::Profile& profile, const std::string& key, const ByteSink& sink) {
  return ModelCacheImage(profile, key).write(sink);
}

namespace {

bool readTables(Reader& r, model::Profile& p) {
  uint64_t n = 0;
  auto& info = p.info;
  if (!r.str(info.format) || !r.str(info.tool_version) || !r.str(info.schema_version) || !r.str(info.platform) ||
      !r.strs(info.gpus) || !r.strs(info.gpu_uuids) || !r.str(info.host) || !r.strs(info.warnings) ||
      !r.strs(info.capabilities) || !r.pod(info.has_blobs) || !r.pod(info.utc_start_ns) || !r.pod(n))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    model::ProcessInfo pr;
    if (!r.pod(pr.pid) || !r.str(pr.name) || !r.pod(pr.rank) || !r.pod(pr.world_size) || !r.str(pr.host) ||
        !r.str(pr.rank_source) || !r.str(pr.gpu_uuid))
      return false;
    info.processes.push_back(std::move(pr));
  }
  if (!r.pod(n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    model::ProfilePart part;
    uint64_t pids = 0;
    if (!r.str(part.name) || !r.str(part.format) || !r.str(part.tool_version) || !r.strs(part.gpus) ||
        !r.strs(part.warnings) || !r.strs(part.capabilities) || !r.pod(pids))
      return false;
    for (uint64_t j = 0; j < pids; ++j) {
      std::pair<uint32_t, uint32_t> pid;
      if (!r.pod(pid.first) || !r.pod(pid.second)) return false;
      part.pids.push_back(pid);
    }
    info.parts.push_back(std::move(part));
  }
  if (!r.pod(n)) return false;
  std::string s;
  for (uint64_t i = 0; i < n; ++i) {
    if (!r.str(s)) return false;
    if (p.strings.intern(s) != i) return false;  // the table holds each string once, "" first
  }
  if (!r.rows(p.activities) || !r.rows(p.api_calls) || !r.rows(p.ranges) || !r.rows(p.marks) || !r.rows(p.frames) ||
      !r.rows(p.calls) || !r.rows(p.launch_configs) || !r.rows(p.memory_uses) || !r.pod(n))
    return false;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t pid = 0;
    model::CaptureEvents::Process proc;
    if (!r.pod(pid) || !r.pod(proc.first_bin)) return false;
    for (auto& bins : proc.bins)
      if (!r.rows(bins)) return false;
    p.capture.setProcess(pid, std::move(proc));
  }
  auto& m = p.memory;
  if (!r.strs(m.strings) || !r.rows(m.frames) || !r.pod(n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::vector<uint32_t> stack;
    if (!r.rows(stack)) return false;
    m.stacks.push_back(std::move(stack));
  }
  return r.rows(m.events) && r.rows(m.blocks) && r.rows(m.reserved_at_dump) && r.strs(m.warnings);
}

// Every id a row holds names a string, frame or launch shape the cache holds: a damaged cache
// that passed the checksum by chance still cannot make attribution index past a table.
bool idsInRange(const model::Profile& p) {
  size_t strings = p.strings.size(), frames = p.frames.size();
  for (const auto& a : p.activities)
    if (a.name >= strings || a.launch_config >= p.launch_configs.size()) return false;
  for (const auto& c : p.api_calls)
    if (c.name >= strings) return false;
  for (const auto& r : p.ranges)
    if (r.text >= strings || r.op >= strings || r.domain >= strings) return false;
  for (const auto& m : p.marks)
    if (m.first_frame > frames || m.frame_count > frames - m.first_frame) return false;
  for (const auto& f : p.frames)
    if (f.function >= strings || f.file >= strings) return false;
  for (const auto& c : p.calls)
    if (c.file >= strings || c.function >= strings || c.parent >= static_cast<int64_t>(p.calls.size())) return false;
  for (const auto& e : p.memory.events)
    if (e.stack >= std::max<size_t>(1, p.memory.stacks.size())) return false;
  for (const auto& b : p.memory.blocks)
    if (b.stack >= std::max<size_t>(1, p.memory.stacks.size())) return false;
  for (const auto& s : p.memory.stacks)
    for (uint32_t f : s)
      if (f >= p.memory.frames.size()) return false;
  for (const auto& f : p.memory.frames)
    if (f.file >= p.memory.strings.size() || f.function >= p.memory.strings.size()) return false;
  return true;
}

}  // namespace

std::optional<model::Profile> readModelCache(const std::string& path, const std::string& key, std::string& error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    error = "cannot open " + path;
    return std::nullopt;
  }
  auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  Reader r(in, path, size);
  char magic[sizeof kMagic] = {};
  uint32_t format = 0;
  std::string stored_layout, stored_key;
  if (!r.bytes(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    error = "not a Sightline model cache";
    return std::nullopt;
  }
  if (!r.pod(format) || format != kFormat || !r.str(stored_layout) || stored_layout != layout()) {
    error = "written by another build of Sightline";
    return std::nullopt;
  }
  if (!r.str(stored_key) || stored_key != key) {
    error = "made for another profile, or another version of it";
    return std::nullopt;
  }
  model::Profile p;
  if (!readTables(r, p) || !r.finish()) {
    error = "damaged (cut short or changed since it was written)";
    return std::nullopt;
  }
  if (!idsInRange(p)) {
    error = "damaged (its rows name entries it does not hold)";
    return std::nullopt;
  }
  return p;
}

}  // namespace sightline::ingest
