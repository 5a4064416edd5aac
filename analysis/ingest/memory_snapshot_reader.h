// Reads a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`): a pickle of plain data,
// read by the whitelisting unpickler (pickle_data.h), never run.
#pragma once

#include <optional>
#include <string>

#include "analysis/ingest/pickle_data.h"
#include "analysis/model/memory.h"

namespace sightline::ingest {

// nullopt with `error` when the file cannot be read, is not a plain-data pickle, or has neither
// `segments` nor `device_traces`. The file is read in pieces and its trace entries taken as they
// complete: the document never holds them all (less memory than the file's size).
std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error);
std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error,
                                                        const PickleLimits& limits);
// What the unpickler's document held when the file was read (what reading keeps besides the
// snapshot: the values the memo still names, for tests and benchmarks).
struct SnapshotReadStats {
  size_t document_values = 0;
  size_t document_bytes = 0;
};
std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error,
                                                        const PickleLimits& limits, SnapshotReadStats* stats);
// The same from bytes already read; `whole`: the whole document first, then the snapshot (the
// reader before entries were taken as they complete: tests compare the two).
std::optional<model::MemorySnapshot> parseMemorySnapshot(std::string bytes, std::string& error, bool whole = false);

}  // namespace sightline::ingest
