// Snapshot dicts into the memory model: frames and stacks made distinct as they are read.
#include "analysis/ingest/memory_snapshot_reader.h"

#include <array>
#include <deque>
#include <filesystem>
#include <iterator>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "analysis/ingest/pickle_data.h"

namespace sightline::ingest {
namespace {

using model::MemoryAction;
using Ref = PickleData::Ref;

MemoryAction actionOf(std::string_view a) {
  static const std::map<std::string_view, MemoryAction> kActions = {{"alloc", MemoryAction::Alloc},
                                                                    {"free_requested", MemoryAction::FreeRequested},
                                                                    {"free_completed", MemoryAction::FreeCompleted},
                                                                    {"segment_alloc", MemoryAction::SegmentAlloc},
                                                                    {"segment_free", MemoryAction::SegmentFree},
                                                                    {"segment_map", MemoryAction::SegmentMap},
                                                                    {"segment_unmap", MemoryAction::SegmentUnmap},
                                                                    {"snapshot", MemoryAction::Snapshot},
                                                                    {"oom", MemoryAction::Oom}};
  auto it = kActions.find(a);
  return it == kActions.end() ? MemoryAction::Other : it->second;
}

// Builds the snapshot as the unpickler reads: each trace entry (a dict with an `action`) is
// taken as its batch completes, so that the document never holds the millions of them; what
// remains (segments, blocks) is read from the document at the end.
class SnapshotBuilder : public PickleSink {
 public:
  explicit SnapshotBuilder(size_t expected_events) {
    out_.stacks.emplace_back();
    out_.events.reserve(expected_events);
  }

  bool take(const PickleData& doc, Ref list, Ref item) override {
    d_ = &doc;
    if (doc.type(item) != PickleData::Type::Dict || !doc.get(item, "action")) return false;
    size_t before = out_.events.size();
    readEvent(item, kNoDevice);
    if (runs_.empty() || runs_.back().list != list) runs_.push_back({list, 0});
    runs_.back().count += out_.events.size() - before;
    return true;
  }

  void moved(Ref from, const std::unordered_map<Ref, Ref>& to) override {
    for (auto& run : runs_)
      if (run.list >= from) run.list = to.count(run.list) ? to.at(run.list) : kGone;
    // The ids of the values at or above `from` follow them (those given back go): the work is
    // the batch's, never the whole table's (2M entries once took 60 s re-keying all of it).
    for (auto [kind, id] : pending_) {
      Ref& h = handles_[static_cast<size_t>(kind) - 1][id];
      auto it = to.find(h);
      h = it == to.end() ? kNoRef : it->second;
    }
    pending_.clear();
    for (Ref* h : pending_others_) {
      auto it = to.find(*h);
      *h = it == to.end() ? kNoRef : it->second;
    }
    pending_others_.clear();
    std::erase_if(other_strings_, [](const auto& e) { return e.second == kNoRef; });
    if (ids_.size() <= from) return;
    std::vector<std::pair<Ref, uint32_t>> kept;
    for (const auto& [old_ref, new_ref] : to)
      if (old_ref < ids_.size() && ids_[old_ref] != kUnknown) kept.emplace_back(new_ref, ids_[old_ref]);
    ids_.resize(from);
    for (const auto& [ref, id] : kept) {
      if (ids_.size() <= ref) ids_.resize(static_cast<size_t>(ref) + 1, kUnknown);
      ids_[ref] = id;
    }
  }

  // A batch given back: of what the memo still names, a string, a frame or a frames list the
  // builder has read is kept once (the first of its kind), empty, and every later one named by
  // that one (each trace entry's frames list and its `compile_context` string once stayed, 2M
  // of them in a full ring buffer).
  std::optional<Ref> keepAs(const PickleData& doc, Ref value) override {
    d_ = &doc;
    switch (doc.type(value)) {
      case PickleData::Type::Str: {
        if (auto id = knownId(value, Kind::String)) return handle(Kind::String, *id, value);
        std::string_view text = doc.str(value);
        if (text.size() > kMaxOtherString) return std::nullopt;
        auto [it, added] = other_strings_.try_emplace(std::string(text), value);
        if (added) pending_others_.push_back(&it->second);  // its new ref comes with `moved`
        return it->second;
      }
      case PickleData::Type::List:
        if (auto id = knownId(value, Kind::Stack)) return handle(Kind::Stack, *id, value);
        return std::nullopt;
      case PickleData::Type::Dict:
        if (auto id = knownId(value, Kind::Frame)) return handle(Kind::Frame, *id, value);
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  std::optional<model::MemorySnapshot> build(const PickleData& doc, std::string& error) {
    d_ = &doc;
    if (d().type(d().root()) != PickleData::Type::Dict) {
      error = "not a memory snapshot: the pickle holds no dict";
      return std::nullopt;
    }
    auto segments = d().get(d().root(), "segments");
    auto traces = d().get(d().root(), "device_traces");
    if (!segments && !traces) {
      error = "not a memory snapshot: no segments and no device_traces";
      return std::nullopt;
    }
    if (segments) readSegments(*segments);
    readTraces(traces);
    if (skipped_) out_.warnings.push_back(std::to_string(skipped_) + " entries that were not dicts were skipped");
    if (implausible_)
      out_.warnings.push_back(std::to_string(implausible_) +
                              " entries with a negative or impossibly large size were skipped");
    if (off_devices_)
      out_.warnings.push_back(std::to_string(off_devices_) + " segments on device numbers outside 0.." +
                              std::to_string(kMaxDevices - 1) + " were skipped");
    if (cut_)
      out_.warnings.push_back(std::to_string(cut_) + " frame names longer than " + std::to_string(kMaxName) +
                              " bytes were cut there");
    string_ids_.clear();
    out_.strings.assign(std::make_move_iterator(strings_.begin()), std::make_move_iterator(strings_.end()));
    strings_.clear();
    return std::move(out_);
  }

 private:
  static constexpr int32_t kNoDevice = -1;
  static constexpr size_t kMaxName = 4096;  // bytes of a frame's file or function name
  // Device numbers 0..4095, more than any host holds: an entry on another is an input error,
  // skipped and counted (200k device numbers once made as many replays, each over everything).
  static constexpr size_t kMaxDevices = 4096;
  static constexpr Ref kGone = UINT32_MAX;
  static constexpr uint32_t kUnknown = 0;
  static constexpr Ref kNoRef = UINT32_MAX;
  static constexpr size_t kMaxOtherString = 64;
  struct Run {
    Ref list;
    size_t count;
  };

  const PickleData& d() const { return *d_; }
  // The id given to the value `r` as a string, a frame or a frames list (its stack), by ref: one
  // slot per value of the document, the kind in the top two bits (0: none), so that a value read
  // as one kind is never taken for another (a hostile pickle's string used as a frame).
  enum class Kind : uint32_t { String = 1, Frame = 2, Stack = 3 };
  static constexpr uint32_t kIdBits = 30;
  void setId(Ref r, Kind kind, uint32_t id) {
    if (id >> kIdBits) return;  // past 2^30 distinct ones: found again by content
    if (ids_.size() <= r) ids_.resize(static_cast<size_t>(r) + 1, kUnknown);
    ids_[r] = (static_cast<uint32_t>(kind) << kIdBits) | id;
  }
  // The value kept for a string, frame or stack id (see keepAs): the first one given back.
  std::optional<Ref> handle(Kind kind, uint32_t id, Ref value) {
    auto& handles = handles_[static_cast<size_t>(kind) - 1];
    if (id < handles.size() && handles[id] != kNoRef) return handles[id];
    if (handles.size() <= id) handles.resize(static_cast<size_t>(id) + 1, kNoRef);
    handles[id] = value;  // its new ref comes with `moved`
    pending_.emplace_back(kind, id);
    return value;
  }
  std::optional<uint32_t> knownId(Ref r, Kind kind) const {
    if (r >= ids_.size() || ids_[r] >> kIdBits != static_cast<uint32_t>(kind)) return std::nullopt;
    return ids_[r] & ((1u << kIdBits) - 1);
  }
  // Each device's trace list, in device order. A list named for several devices is read once, for
  // the first: its entries are one device's, and `[trace] * 4096` (pickled as one list and 4095
  // memo fetches) once read them 4096 times, past 2 GB from 200 KB.
  void readTraces(std::optional<Ref> traces) {
    std::unordered_map<Ref, int32_t> device_of;  // each list's first device
    size_t shared = 0;
    for (size_t device = 0; traces && device < d().size(*traces) && device < kMaxDevices; ++device) {
      Ref list = d().item(*traces, device);
      if (!device_of.emplace(list, static_cast<int32_t>(device)).second && d().type(list) == PickleData::Type::List)
        ++shared;
    }
    placeTakenEvents(device_of);
    for (size_t device = 0; traces && device < d().size(*traces) && device < kMaxDevices; ++device) {
      Ref list = d().item(*traces, device);
      if (device_of.at(list) != static_cast<int32_t>(device)) continue;
      for (size_t i = 0; i < d().size(list); ++i) readEvent(d().item(list, i), static_cast<int32_t>(device));
    }
    if (shared)
      out_.warnings.push_back(std::to_string(shared) +
                              " devices' traces were a list already read for another device: read once, for the first");
    if (traces && d().size(*traces) > kMaxDevices)
      out_.warnings.push_back(std::to_string(d().size(*traces) - kMaxDevices) + " devices' traces past device " +
                              std::to_string(kMaxDevices - 1) + " were skipped");
  }
  // Entries taken while reading get the device of the trace list they were appended to; those of
  // any other list are not trace entries and go.
  void placeTakenEvents(const std::unordered_map<Ref, int32_t>& device_of) {
    size_t at = 0;
    for (const auto& run : runs_) {
      auto it = device_of.find(run.list);
      int32_t device = it == device_of.end() ? kNoDevice : it->second;
      for (size_t i = 0; i < run.count; ++i) out_.events[at + i].device = device;
      at += run.count;
    }
    std::erase_if(out_.events, [](const model::MemoryEvent& e) { return e.device == kNoDevice; });
  }

  int64_t integer(Ref dict, std::string_view key) const {
    auto v = d().get(dict, key);
    return v ? d().integer(*v) : 0;
  }
  // A size in bytes no GPU could hold (or negative): the entry is skipped, so that no sum over
  // a hostile snapshot can overflow (2^44 bytes = 16 TiB, times any count the unpickler allows,
  // stays far below 2^63).
  static bool plausibleBytes(int64_t v) { return v >= 0 && v <= (int64_t{1} << 44); }
  uint32_t stackOf(Ref dict) { return stackOfFrames(d().get(dict, "frames")); }
  uint32_t stackOfFrames(std::optional<Ref> frames) {
    if (!frames) return 0;
    if (auto id = knownId(*frames, Kind::Stack)) return *id;  // before its size: a list known is kept empty
    if (d().size(*frames) == 0) {
      if (d().type(*frames) == PickleData::Type::List) setId(*frames, Kind::Stack, 0);
      return 0;
    }
    std::vector<uint32_t> ids;
    std::string key;
    for (size_t i = 0; i < d().size(*frames); ++i) {
      Ref f = d().item(*frames, i);
      uint32_t id = frameOf(f);
      ids.push_back(id);
      key.append(reinterpret_cast<const char*>(&id), sizeof id);
    }
    auto [it, added] = stacks_.try_emplace(key, static_cast<uint32_t>(out_.stacks.size()));
    if (added) out_.stacks.push_back(std::move(ids));
    setId(*frames, Kind::Stack, it->second);
    return it->second;
  }
  uint32_t frameOf(Ref f) {
    if (auto id = knownId(f, Kind::Frame)) return *id;
    model::MemoryFrame frame;
    frame.file = stringOf(d().get(f, "filename"));
    frame.function = stringOf(d().get(f, "name"));
    frame.line = static_cast<int32_t>(integer(f, "line"));
    std::string key(reinterpret_cast<const char*>(&frame), sizeof frame);
    auto [it, added] = frames_.try_emplace(key, static_cast<uint32_t>(out_.frames.size()));
    if (added) out_.frames.push_back(frame);
    setId(f, Kind::Frame, it->second);
    return it->second;
  }
  // A string's id in the snapshot's strings: each text once, however many frames name it (a
  // 1 MiB file name shared by a thousand frames was copied into each, twice: 2 GB from 1 MB).
  // Found by its ref first, so that a long one is hashed once. A name longer than any path
  // (PATH_MAX) is cut there: what is made of it per line (a line's place, the report's lines)
  // stays small.
  uint32_t stringOf(std::optional<Ref> v) {
    if (!v || d().type(*v) != PickleData::Type::Str) return 0;
    if (auto id = knownId(*v, Kind::String)) return *id;
    std::string_view text = d().str(*v);
    if (text.size() > kMaxName) {  // at a character's start, so that what is left is UTF-8
      size_t n = kMaxName;
      while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
      text = text.substr(0, n);
      ++cut_;
    }
    auto it = string_ids_.find(text);
    if (it == string_ids_.end()) {
      strings_.emplace_back(text);
      it = string_ids_.emplace(strings_.back(), static_cast<uint32_t>(strings_.size() - 1)).first;
    }
    setId(*v, Kind::String, it->second);
    return it->second;
  }
  // A segment, or a blocks list, named twice is read once: 10^4 references to one segment
  // whose blocks list names one block 10^4 times once made 10^8 blocks of a 40 KB file.
  void readSegments(Ref segments) {
    std::unordered_set<Ref> read;
    size_t shared = 0;
    for (size_t i = 0; i < d().size(segments); ++i) {
      Ref s = d().item(segments, i);
      if (d().type(s) != PickleData::Type::Dict) {
        ++skipped_;
        continue;
      }
      if (!read.insert(s).second) {
        ++shared;
        continue;
      }
      int64_t number = integer(s, "device");
      if (number < 0 || number >= static_cast<int64_t>(kMaxDevices)) {
        ++off_devices_;
        continue;
      }
      auto device = static_cast<int32_t>(number);
      if (out_.reserved_at_dump.size() <= static_cast<size_t>(device)) out_.reserved_at_dump.resize(device + 1);
      int64_t total = integer(s, "total_size");
      if (plausibleBytes(total))
        out_.reserved_at_dump[device] += total;
      else
        ++implausible_;
      auto blocks = d().get(s, "blocks");
      if (!blocks) continue;
      if (d().type(*blocks) == PickleData::Type::List && !read.insert(*blocks).second) {
        ++shared;
        continue;
      }
      for (size_t j = 0; j < d().size(*blocks); ++j) {
        Ref b = d().item(*blocks, j);
        if (d().type(b) != PickleData::Type::Dict) continue;
        model::MemoryBlock block;
        block.device = device;
        block.addr = static_cast<uint64_t>(integer(b, "address"));
        block.size = integer(b, "size");
        block.requested = integer(b, "requested_size");
        if (!plausibleBytes(block.size) || !plausibleBytes(block.requested)) {
          ++implausible_;
          continue;
        }
        auto state = d().get(b, "state");
        std::string_view st = state ? d().str(*state) : "";
        block.allocated = st == "active_allocated" || st == "active_pending_free";
        block.stack = stackOf(b);
        // Older snapshots keep a block's stack in its `history` (the latest entry last).
        if (!block.stack) {
          if (auto history = d().get(b, "history"); history && d().size(*history) > 0)
            block.stack = stackOf(d().item(*history, d().size(*history) - 1));
        }
        out_.blocks.push_back(block);
      }
    }
    if (shared)
      out_.warnings.push_back(std::to_string(shared) +
                              " segments or blocks lists were one already read for another segment: read once");
  }
  void readEvent(Ref e, int32_t device) {
    if (d().type(e) != PickleData::Type::Dict) {
      ++skipped_;
      return;
    }
    model::MemoryEvent ev;
    ev.action = MemoryAction::Other;
    ev.device = device;
    // One pass over its entries (2M events: a lookup per field would compare every key again);
    // a key set twice keeps its last value, as Python's dict does.
    std::optional<Ref> frames;
    int64_t device_free = 0;
    for (size_t i = 0, n = d().size(e); i < n; ++i) {
      std::string_view key = d().str(d().key(e, i));
      Ref v = d().value(e, i);
      if (key == "action")
        ev.action = actionOf(d().str(v));
      else if (key == "addr")
        ev.addr = static_cast<uint64_t>(d().integer(v));
      else if (key == "size")
        ev.size = d().integer(v);
      else if (key == "time_us")
        ev.time_us = d().integer(v);
      else if (key == "device_free")
        device_free = d().integer(v);
      else if (key == "frames")
        frames = v;
    }
    if (!plausibleBytes(ev.size) || !plausibleBytes(device_free)) {
      ++implausible_;
      return;
    }
    if (ev.action == MemoryAction::Oom) ev.addr = static_cast<uint64_t>(device_free);
    ev.stack = stackOfFrames(frames);
    out_.events.push_back(ev);
  }

  const PickleData* d_ = nullptr;
  model::MemorySnapshot out_;
  std::vector<Run> runs_;  // the trace entries taken, by the list they were appended to, in order
  std::unordered_map<std::string, uint32_t> frames_, stacks_;
  std::vector<uint32_t> ids_;                       // by ref: see setId
  std::array<std::vector<Ref>, 3> handles_;         // by kind and id: see handle
  std::vector<std::pair<Kind, uint32_t>> pending_;  // handles set since the last `moved`
  // Short strings the builder does not read (each entry's `compile_context`), kept once by text.
  std::unordered_map<std::string, Ref> other_strings_;
  std::vector<Ref*> pending_others_;
  std::deque<std::string> strings_{""};                                 // the snapshot's strings, by id
  std::unordered_map<std::string_view, uint32_t> string_ids_{{"", 0}};  // views into strings_
  size_t skipped_ = 0, implausible_ = 0, cut_ = 0, off_devices_ = 0;
};

}  // namespace

std::optional<model::MemorySnapshot> parseMemorySnapshot(std::string bytes, std::string& error, bool whole) {
  std::string why;
  SnapshotBuilder builder(0);
  auto doc = readPickleData(std::move(bytes), why, PickleLimits{}, whole ? nullptr : &builder);
  if (!doc) {
    error = "not a memory snapshot we can read: " + why;
    return std::nullopt;
  }
  return builder.build(*doc, error);
}

std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error) {
  return readMemorySnapshot(path, error, PickleLimits{});
}

std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error,
                                                        const PickleLimits& limits) {
  return readMemorySnapshot(path, error, limits, nullptr);
}

std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error,
                                                        const PickleLimits& limits, SnapshotReadStats* stats) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    error = "cannot open " + path;
    return std::nullopt;
  }
  // A trace entry takes 60 to 100 bytes of pickle: room for all of them, set aside once (pages
  // not used are never touched).
  SnapshotBuilder builder(static_cast<size_t>(size / 56));
  std::string why;
  auto doc = readPickleFile(path, why, limits, &builder);
  if (!doc) {
    error = why.starts_with("cannot ") ? why : "not a memory snapshot we can read: " + why;
    return std::nullopt;
  }
  if (stats) *stats = {doc->valueCount(), doc->bytesUsed()};
  return builder.build(*doc, error);
}

}  // namespace sightline::ingest
