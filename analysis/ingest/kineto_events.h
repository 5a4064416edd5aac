// Trace events as far as attribution needs them, and what kind each is (internal to
// analysis/ingest): one event parsed from the scanner, its category, and the copy kinds named
// in a memcpy's name.
#pragma once

#include <cstdint>
#include <string_view>

#include "analysis/ingest/json_scanner.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::kineto {

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
  bool shapes = false;  // an operator recorded with its input shapes (record_shapes)
  // A `[memory]` instant event (profile_memory=True).
  int64_t addr = 0, mem_bytes = 0, total_allocated = -1, total_reserved = -1, device_type = -1, device_id = -1;
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
    shapes = false;
    addr = mem_bytes = 0;
    total_allocated = total_reserved = device_type = device_id = -1;
    grid = block = {};
  }
};

// Parses one event object (the cursor at its `{`).
Status parseEvent(Cursor& c, RawEvent& e);

enum class Category : uint8_t { Other, Kernel, Memcpy, Memset, Runtime, Op, Annotation, Python };

// The kind of event a `cat` names (Other: not read).
Category categoryOf(std::string_view cat);
// "Pageable", "Pinned", "Device", ... as the model's memory kind.
model::MemoryKind memoryKindNamed(std::string_view s);
// "Memcpy HtoD (Pageable -> Device)".
void describeCopy(std::string_view name, model::GpuActivity& a);

}  // namespace sightline::ingest::kineto
