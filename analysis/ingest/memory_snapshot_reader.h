// Reads a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot`): a pickle of plain data,
// read by the whitelisting unpickler (pickle_data.h), never run. The file is read, not mapped.
#pragma once

#include <optional>
#include <string>

#include "analysis/model/memory.h"

namespace sightline::ingest {

// nullopt with `error` when the file cannot be read, is not a plain-data pickle, or has neither
// `segments` nor `device_traces`.
std::optional<model::MemorySnapshot> readMemorySnapshot(const std::string& path, std::string& error);
// The same from bytes already read.
std::optional<model::MemorySnapshot> parseMemorySnapshot(std::string bytes, std::string& error);

}  // namespace sightline::ingest
