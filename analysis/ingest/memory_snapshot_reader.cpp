// Snapshot dicts into the memory model: frames and stacks made distinct as they are read.
#include "analysis/ingest/memory_snapshot_reader.h"

#include <fstream>
#include <iterator>
#include <map>
#include <unordered_map>

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

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(const PickleData& d) : d_(d) { out_.stacks.emplace_back(); }

  std::optional<model::MemorySnapshot> build(std::string& error) {
    auto segments = d_.get(d_.root(), "segments");
    auto traces = d_.get(d_.root(), "device_traces");
    if (!segments && !traces) {
      error = "not a memory snapshot: no segments and no device_traces";
      return std::nullopt;
    }
    if (segments) readSegments(*segments);
    if (traces) {
      for (size_t device = 0; device < d_.size(*traces) && device < 4096; ++device) {
        Ref trace = d_.item(*traces, device);
        for (size_t i = 0; i < d_.size(trace); ++i) readEvent(d_.item(trace, i), static_cast<int32_t>(device));
      }
    }
    if (skipped_) out_.warnings.push_back(std::to_string(skipped_) + " entries that were not dicts were skipped");
    if (implausible_)
      out_.warnings.push_back(std::to_string(implausible_) +
                              " entries with a negative or impossibly large size were skipped");
    return std::move(out_);
  }

 private:
  int64_t integer(Ref dict, std::string_view key) const {
    auto v = d_.get(dict, key);
    return v ? d_.integer(*v) : 0;
  }
  // A size in bytes no GPU could hold (or negative): the entry is skipped, so that no sum over
  // a hostile snapshot can overflow (2^44 bytes = 16 TiB, times any count the unpickler allows,
  // stays far below 2^63).
  static bool plausibleBytes(int64_t v) { return v >= 0 && v <= (int64_t{1} << 44); }
  uint32_t stackOf(Ref dict) { return stackOfFrames(d_.get(dict, "frames")); }
  uint32_t stackOfFrames(std::optional<Ref> frames) {
    if (!frames || d_.size(*frames) == 0) return 0;
    if (auto it = by_ref_.find(*frames); it != by_ref_.end()) return it->second;
    std::vector<uint32_t> ids;
    std::string key;
    for (size_t i = 0; i < d_.size(*frames); ++i) {
      Ref f = d_.item(*frames, i);
      uint32_t id = frameOf(f);
      ids.push_back(id);
      key.append(reinterpret_cast<const char*>(&id), sizeof id);
    }
    auto [it, added] = stacks_.try_emplace(key, static_cast<uint32_t>(out_.stacks.size()));
    if (added) out_.stacks.push_back(std::move(ids));
    by_ref_[*frames] = it->second;
    return it->second;
  }
  uint32_t frameOf(Ref f) {
    if (auto it = frame_by_ref_.find(f); it != frame_by_ref_.end()) return it->second;
    model::MemoryFrame frame;
    if (auto v = d_.get(f, "filename")) frame.file = std::string(d_.str(*v));
    if (auto v = d_.get(f, "name")) frame.function = std::string(d_.str(*v));
    frame.line = static_cast<int32_t>(integer(f, "line"));
    std::string key = frame.file + '\0' + frame.function + '\0' + std::to_string(frame.line);
    auto [it, added] = frames_.try_emplace(key, static_cast<uint32_t>(out_.frames.size()));
    if (added) out_.frames.push_back(std::move(frame));
    frame_by_ref_[f] = it->second;
    return it->second;
  }
  void readSegments(Ref segments) {
    for (size_t i = 0; i < d_.size(segments); ++i) {
      Ref s = d_.item(segments, i);
      if (d_.type(s) != PickleData::Type::Dict) {
        ++skipped_;
        continue;
      }
      auto device = static_cast<int32_t>(integer(s, "device"));
      if (device >= 0 && device < 4096) {
        if (out_.reserved_at_dump.size() <= static_cast<size_t>(device)) out_.reserved_at_dump.resize(device + 1);
        int64_t total = integer(s, "total_size");
        if (plausibleBytes(total))
          out_.reserved_at_dump[device] += total;
        else
          ++implausible_;
      }
      auto blocks = d_.get(s, "blocks");
      if (!blocks) continue;
      for (size_t j = 0; j < d_.size(*blocks); ++j) {
        Ref b = d_.item(*blocks, j);
        if (d_.type(b) != PickleData::Type::Dict) continue;
        model::MemoryBlock block;
        block.device = device;
        block.addr = static_cast<uint64_t>(integer(b, "address"));
        block.size = integer(b, "size");
        block.requested = integer(b, "requested_size");
        if (!plausibleBytes(block.size) || !plausibleBytes(block.requested)) {
          ++implausible_;
          continue;
        }
        auto state = d_.get(b, "state");
        std::string_view st = state ? d_.str(*state) : "";
        block.allocated = st == "active_allocated" || st == "active_pending_free";
        block.stack = stackOf(b);
        // Older snapshots keep a block's stack in its `history` (the latest entry last).
        if (!block.stack) {
          if (auto history = d_.get(b, "history"); history && d_.size(*history) > 0)
            block.stack = stackOf(d_.item(*history, d_.size(*history) - 1));
        }
        out_.blocks.push_back(block);
      }
    }
  }
  void readEvent(Ref e, int32_t device) {
    if (d_.type(e) != PickleData::Type::Dict) {
      ++skipped_;
      return;
    }
    model::MemoryEvent ev;
    ev.action = MemoryAction::Other;
    ev.device = device;
    // One pass over its entries (2M events: a lookup per field would compare every key again);
    // a key set twice keeps its last value, as Python's dict does.
    std::optional<Ref> frames;
    for (size_t i = 0, n = d_.size(e); i < n; ++i) {
      std::string_view key = d_.str(d_.key(e, i));
      Ref v = d_.value(e, i);
      if (key == "action")
        ev.action = actionOf(d_.str(v));
      else if (key == "addr")
        ev.addr = static_cast<uint64_t>(d_.integer(v));
      else if (key == "size")
        ev.size = d_.integer(v);
      else if (key == "time_us")
        ev.time_us = d_.integer(v);
      else if (key == "device_free")
        ev.device_free = d_.integer(v);
      else if (key == "frames")
        frames = v;
    }
    if (!plausibleBytes(ev.size) || !plausibleBytes(ev.device_free)) {
      ++implausible_;
      return;
    }
    ev.stack = stackOfFrames(frames);
    out_.events.push_back(ev);
  }

  const PickleData& d_;
  model::MemorySnapshot out_;
  std::unordered_map<std::string, uint32_t> frames_, stacks_;
  std::unordered_map<Ref, uint32_t> frame_by_ref_, by_ref_;
  size_t skipped_ = 0, implausible_ = 0;
};

}  // namespace

std::optional<model::MemorySnapshot> parseMemorySnapshot(std::string bytes, std::string& error) {
  std::string why;
  auto doc = readPickleData(std::move(bytes), why);
  if (!doc) {
    error = "not a memory snapshot we can read: " + why;
    return std::nullopt;
  }
  if (doc->type(doc->root()) != PickleData::Type::Dict) {
    error = "not a memory snapshot: the pickle holds no dict";
    return std::nullopt;
  }
  return SnapshotBuilder(*doc).build(error);
}

std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open " + path;
    return std::nullopt;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  return parseMemorySnapshot(std::move(bytes), error);
}

}  // namespace sightline::ingest
