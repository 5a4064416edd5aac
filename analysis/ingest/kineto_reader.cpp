// Kineto trace reader: drives a block reader (kineto_input.h, plain or gzip), the JSON scanner
// (json_scanner.h), which parses one top-level member or one trace event at a time from an
// in-memory block (refilling and retrying when the unit runs past the block), and the builder
// (kineto_builder.h) that turns events into the profile model. Only the fields attribution
// needs are decoded; everything else is skipped without being copied.
#include "analysis/ingest/kineto_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
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

#include "analysis/ingest/kineto_builder.h"
#include "analysis/ingest/kineto_input.h"

namespace sightline::ingest {
namespace {

using namespace kineto;

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
        if (base > 0) p_.info.utc_start_ns = base;  // events' times count from it
      } else if (key == "deviceProperties") {
        if (!readDevices()) break;
      } else if (key == "distributedInfo") {
        if (!readDistributedInfo()) break;
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
  uint64_t blockBytes() const { return buf_.size(); }
  bool truncated() const { return truncated_; }
  bool oversized() const { return oversized_; }
  static constexpr size_t kMaxUnitBytes = size_t{256} << 20;
  uint64_t skippedEvents() const { return skipped_; }
  Builder& builder() { return builder_; }

 private:
  // Runs `parse` over the unconsumed block; refills and retries while it runs short. False at
  // the end of input (truncated) or on bad JSON that cannot be skipped.
  template <class F>
  bool unit(F&& parse) {
    // Whitespace before a unit is consumed as it streams by, never kept: a trace padded with
    // gigabytes of it (1.5 GB in a 1.5 MB gzip file) must not grow the block.
    for (;;) {
      while (pos_ < end_ && isSpace(buf_[pos_])) ++pos_;
      if (pos_ < end_ || !fill()) break;
    }
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
    if (end_ == buf_.size()) {
      // One event or top-level member larger than a trace holds: a decompression bomb or a
      // damaged file, read no further.
      if (buf_.size() >= kMaxUnitBytes) {
        oversized_ = true;
        return false;
      }
      buf_.resize(buf_.size() * 2);
    }
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
      // The separator is a unit of its own, so whitespace on both sides of it streams by.
      bool separated = unit([](Cursor& c) {
        if (skipSpace(c) != Status::Ok) return Status::Short;
        if (*c.p == ',') ++c.p;
        return Status::Ok;
      });
      if (!separated) return false;
      bool ok = unit([&](Cursor& c) {
        if (skipSpace(c) != Status::Ok) return Status::Short;
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

  // {"backend": "nccl", "rank": 1, "world_size": 2, ...}: the rank of the trace's process.
  bool readDistributedInfo() {
    return unit([&](Cursor& c) {
      if (*c.p != '{') return skipValue(c);
      std::string scratch;
      return forEachMember(c, [&](std::string_view key) {
        if (keyIs(key, "rank")) return parseInteger(c, distributed_rank_, scratch);
        if (keyIs(key, "world_size")) return parseInteger(c, world_size_, scratch);
        return skipValue(c);
      });
    });
  }

 public:
  int64_t distributedRank() const { return distributed_rank_; }
  int64_t worldSize() const { return world_size_; }

 private:
  int64_t distributed_rank_ = -1, world_size_ = -1;

  Input& in_;
  model::Profile& p_;
  Builder builder_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false, truncated_ = false, bad_ = false, in_events_ = false, oversized_ = false;
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
      reader.builder().expect(size);  // its own half, then the tail's rows (absorb)
      tail_reader->builder().expect(size - *split);
      // Each half sorts its own rows on its own core; finish() merges the two runs.
      std::thread worker([&] {
        tail_reader->runEventsOnly();
        tail_reader->builder().presort();
      });
      ok = reader.run(error);
      if (ok && reader.inEvents()) reader.builder().presort();
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
    if (!in.gzip() && !ec) whole->builder().expect(size);
    ok = whole->run(error);
    truncated = whole->truncated() || !active->damaged().empty();
    events = whole->events();
    bytes = whole->bytes();
    skipped = whole->skippedEvents();
  }
  Reader& used = whole ? *whole : reader;
  if (stats) {
    stats->json_bytes = bytes;
    stats->block_bytes = used.blockBytes();
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
  // One trace is one process's view; distributedInfo names its rank.
  int64_t rank = used.distributedRank() >= 0 ? used.distributedRank() : reader.distributedRank();
  int64_t world = used.worldSize() >= 0 ? used.worldSize() : reader.worldSize();
  for (const auto& a : profile.activities) {
    if (std::any_of(info.processes.begin(), info.processes.end(),
                    [&](const model::ProcessInfo& p) { return p.pid == a.pid; }))
      continue;
    model::ProcessInfo proc{a.pid, "", static_cast<int32_t>(std::clamp<int64_t>(rank, -1, INT32_MAX)),
                            static_cast<int32_t>(std::clamp<int64_t>(world, -1, INT32_MAX))};
    if (proc.rank >= 0) proc.rank_source = "distributedInfo";
    info.processes.push_back(std::move(proc));
  }
  info.tool_version = "PyTorch profiler";
  info.schema_version = "chrome-trace";
  if (used.oversized())
    info.warnings.push_back("a single JSON value of more than 256 MB: reading stopped there (a damaged file?)");
  if (truncated && !used.oversized())
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
