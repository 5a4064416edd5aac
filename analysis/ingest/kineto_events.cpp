// Trace events: parsing and categories.
#include "analysis/ingest/kineto_events.h"

namespace sightline::ingest::kineto {

using model::CopyKind;
using model::MemoryKind;

namespace {

Status parseArgs(Cursor& c, RawEvent& e) {
  return forEachMember(c, [&](std::string_view key) {
    if (keyIs(key, "correlation")) return parseInteger(c, e.correlation, e.misc_scratch);
    if (keyIs(key, "Python id")) return parseInteger(c, e.python_id, e.misc_scratch);
    if (keyIs(key, "Python parent id")) return parseInteger(c, e.python_parent, e.misc_scratch);
    if (keyIs(key, "Sequence number")) return parseInteger(c, e.seq, e.misc_scratch);
    if (keyIs(key, "stream")) return parseInteger(c, e.stream, e.misc_scratch);
    if (keyIs(key, "device")) return parseInteger(c, e.device, e.misc_scratch);
    if (keyIs(key, "bytes")) return parseInteger(c, e.bytes, e.misc_scratch, 0);
    if (keyIs(key, "Addr")) return parseInteger(c, e.addr, e.misc_scratch, 0);
    if (keyIs(key, "Bytes")) return parseInteger(c, e.mem_bytes, e.misc_scratch, 0);
    if (keyIs(key, "Total Allocated")) return parseInteger(c, e.total_allocated, e.misc_scratch);
    if (keyIs(key, "Total Reserved")) return parseInteger(c, e.total_reserved, e.misc_scratch);
    if (keyIs(key, "Device Type")) return parseInteger(c, e.device_type, e.misc_scratch);
    if (keyIs(key, "Device Id")) return parseInteger(c, e.device_id, e.misc_scratch);
    if (keyIs(key, "grid")) return parseTriple(c, e.grid, e.misc_scratch);
    if (keyIs(key, "block")) return parseTriple(c, e.block, e.misc_scratch);
    if (keyIs(key, "Input Dims")) {
      e.shapes = true;
      return skipValue(c);
    }
    if (keyIs(key, "Call stack")) {
      if (skipSpace(c) != Status::Ok) return Status::Short;
      return *c.p == '"' ? parseString(c, e.call_stack, e.stack_scratch) : skipValue(c);
    }
    return skipValue(c);
  });
}

}  // namespace

Status parseEvent(Cursor& c, RawEvent& e) {
  e.reset();
  return forEachMember(c, [&](std::string_view key) {
    // By length first: every event has these keys, most more than once per event.
    switch (key.size()) {
      case 2:
        if (keyIs(key, "ph")) {
          std::string_view v;
          Status s = parseString(c, v, e.misc_scratch);
          if (s == Status::Ok && !v.empty()) e.ph = v[0];
          return s;
        }
        if (keyIs(key, "ts")) return parseMicros(c, e.ts, e.has_ts);
        break;
      case 3:
        if (keyIs(key, "cat")) return parseString(c, e.cat, e.cat_scratch);
        if (keyIs(key, "pid")) return parseInteger(c, e.pid, e.misc_scratch, 0);
        if (keyIs(key, "tid")) return parseInteger(c, e.tid, e.misc_scratch, 0);
        if (keyIs(key, "dur")) return parseMicros(c, e.dur, e.has_dur);
        break;
      case 4:
        if (keyIs(key, "name")) return parseString(c, e.name, e.name_scratch);
        if (keyIs(key, "args")) {
          if (skipSpace(c) != Status::Ok) return Status::Short;
          return *c.p == '{' ? parseArgs(c, e) : skipValue(c);
        }
        break;
      default:
        break;
    }
    return skipValue(c);
  });
}

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

}  // namespace sightline::ingest::kineto
