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
      for (size_t device = 0; device < d_.size(*traces); ++device) {
        Ref trace = d_.item(*traces, device);
        for (size_t i = 0; i < d_.size(trace); ++i) readEvent(d_.item(trace, i), static_cast<int32_t>(device));
      }
    }
    if (skipped_) out_.warnings.push_back(std::to_string(skipped_) + " entries that were not dicts were skipped");
    return std::move(out_);
  }

 private:
  int64_t integer(Ref dict, std::string_view key) const {
    auto v = d_.get(dict, key);
    return v ? d_.integer(*v) : 0;
  }
  uint32_t stackOf(Ref dict) {
    auto frames = d_.get(dict, "frames");
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
        out_.reserved_at_dump[device] += integer(s, "total_size");
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
    auto action = d_.get(e, "action");
    ev.action = action ? actionOf(d_.str(*action)) : MemoryAction::Other;
    ev.device = device;
    ev.addr = static_cast<uint64_t>(integer(e, "addr"));
    ev.size = integer(e, "size");
    ev.time_us = integer(e, "time_us");
    ev.device_free = integer(e, "device_free");
    ev.stack = stackOf(e);
    out_.events.push_back(ev);
  }

  const PickleData& d_;
  model::MemorySnapshot out_;
  std::unordered_map<std::string, uint32_t> frames_, stacks_;
  std::unordered_map<Ref, uint32_t> frame_by_ref_, by_ref_;
  size_t skipped_ = 0;
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
