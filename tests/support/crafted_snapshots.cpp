// The crafted snapshots: each a dict {'segments': [...], 'device_traces': [[...], ...]} shaped
// as _dump_snapshot writes one, with one reference shared where a real snapshot has many values.
#include "tests/support/crafted_snapshots.h"

namespace sightline::testing {

PickleWriter::PickleWriter() { out_ = "\x80\x04"; }

PickleWriter& PickleWriter::op(char opcode) {
  out_ += opcode;
  return *this;
}

PickleWriter& PickleWriter::str(std::string_view s) {
  if (s.size() < 256) {
    out_ += '\x8c';
    out_ += static_cast<char>(s.size());
  } else {
    out_ += 'X';
    auto n = static_cast<uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((n >> (8 * i)) & 0xff);
  }
  out_ += s;
  return *this;
}

PickleWriter& PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_ += 'K';
    out_ += static_cast<char>(v);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += 'J';
    auto u = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((u >> (8 * i)) & 0xff);
  } else {
    out_ += "\x8a\x08";
    auto u = static_cast<uint64_t>(v);
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>((u >> (8 * i)) & 0xff);
  }
  return *this;
}

uint32_t PickleWriter::memoize() {
  out_ += '\x94';
  return memo_++;
}

PickleWriter& PickleWriter::get(uint32_t index) {
  if (index < 256) {
    out_ += 'h';
    out_ += static_cast<char>(index);
  } else {
    out_ += 'j';
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((index >> (8 * i)) & 0xff);
  }
  return *this;
}

PickleWriter& PickleWriter::key(std::string_view s) {
  if (auto it = strings_.find(std::string(s)); it != strings_.end()) return get(it->second);
  str(s);
  strings_.emplace(std::string(s), memoize());
  return *this;
}

std::string PickleWriter::finish() {
  out_ += '.';
  return std::move(out_);
}

namespace {

// {'action': action, 'addr': addr, 'size': size, 'time_us': t, 'frames': <frames()>}, left on
// the stack.
template <class Frames>
void event(PickleWriter& w, std::string_view action, int64_t addr, int64_t size, int64_t t, Frames frames) {
  w.op('}').op('(');
  w.key("action").key(action);
  w.key("addr").integer(addr);
  w.key("size").integer(size);
  w.key("time_us").integer(t);
  w.key("frames");
  frames();
  w.op('u');
}

void noFrames(PickleWriter& w) { w.op(']'); }

// {'device': device, 'total_size': size, 'blocks': <blocks()>}, left on the stack.
template <class Blocks>
void segment(PickleWriter& w, int64_t device, int64_t size, Blocks blocks) {
  w.op('}').op('(');
  w.key("device").integer(device);
  w.key("total_size").integer(size);
  w.key("blocks");
  blocks();
  w.op('u');
}

// {'address': addr, 'size': size, 'requested_size': size, 'state': 'active_allocated'}.
void block(PickleWriter& w, int64_t addr, int64_t size) {
  w.op('}').op('(');
  w.key("address").integer(addr);
  w.key("size").integer(size);
  w.key("requested_size").integer(size);
  w.key("state").key("active_allocated");
  w.op('u');
}

}  // namespace

std::string sharedTraceSnapshot(int devices, int events) {
  PickleWriter w;
  w.op('}').op('(').key("segments").op(']').key("device_traces").op('(');
  w.op('(');
  for (int i = 0; i < events; ++i) event(w, "alloc", 0x1000 + 512 * int64_t{i}, 512, i, [&] { noFrames(w); });
  w.op('l');
  uint32_t trace = w.memoize();
  for (int d = 1; d < devices; ++d) w.get(trace);
  return w.op('l').op('u').finish();
}

std::string sharedFileNameSnapshot(size_t name_bytes, int frames) {
  PickleWriter w;
  std::string name = "/work/" + std::string(name_bytes > 15 ? name_bytes - 15 : 0, 'a') + "/train.py";
  w.op('}').op('(').key("segments").op(']').key("device_traces").op(']').op(']').op('(');
  for (int i = 0; i < frames; ++i) {
    event(w, "alloc", 0x1000 + 512 * int64_t{i}, 512, i, [&] {
      w.op(']').op('}').op('(');
      w.key("filename").key(name);
      w.key("name").key("f");
      w.key("line").integer(i + 1);
      w.op('u').op('a');
    });
  }
  return w.op('e').op('a').op('u').finish();
}

std::string sharedBlocksSnapshot(int segments, int blocks, bool distinct_segments) {
  PickleWriter w;
  w.op('}').op('(').key("segments").op('(');
  uint32_t list = 0;
  segment(w, 0, 512 * int64_t{blocks}, [&] {
    w.op('(');
    block(w, 0x1000, 512);
    uint32_t b = w.memoize();
    for (int i = 1; i < blocks; ++i) w.get(b);
    w.op('l');
    list = w.memoize();
  });
  uint32_t s = w.memoize();
  for (int i = 1; i < segments; ++i) {
    if (distinct_segments)
      segment(w, 0, 512 * int64_t{blocks}, [&] { w.get(list); });
    else
      w.get(s);
  }
  w.op('l').key("device_traces").op(']');
  return w.op('u').finish();
}

std::string sharedStackSnapshot(int depth, int events) {
  PickleWriter w;
  w.op('}').op('(').key("segments").op(']').key("device_traces").op(']').op(']').op('(');
  uint32_t stack = 0;
  for (int i = 0; i < events; ++i) {
    event(w, i % 2 ? "free_completed" : "alloc", 0x1000 + 512 * int64_t{i / 2}, 512, i, [&] {
      if (i > 0) {
        w.get(stack);
        return;
      }
      w.op('(').op('}').op('(');
      w.key("filename").key("/usr/lib/python3.11/site-packages/lib/deep.py");
      w.key("name").key("f");
      w.key("line").integer(1);
      w.op('u');
      uint32_t frame = w.memoize();
      for (int f = 1; f < depth; ++f) w.get(frame);
      w.op('l');
      stack = w.memoize();
    });
  }
  return w.op('e').op('a').op('u').finish();
}

std::string manyDevicesSnapshot(int devices, int events) {
  PickleWriter w;
  w.op('}').op('(').key("segments").op(']').op('(');
  for (int d = 0; d < devices; ++d)
    segment(w, d, 512, [&] {
      w.op(']');
      block(w, 0x1000, 512);
      w.op('a');
    });
  w.op('e').key("device_traces").op(']').op(']').op('(');
  for (int i = 0; i < events; ++i)
    event(w, i % 2 ? "free_completed" : "alloc", 0x100000 + 512 * int64_t{i / 2}, 512, i, [&] { noFrames(w); });
  return w.op('e').op('a').op('u').finish();
}

std::string ringBufferSnapshot(int entries, int stacks, int depth) {
  PickleWriter w;
  w.op('}');
  w.memoize();
  w.op('(').key("segments").op(']');
  w.memoize();
  w.key("device_traces").op(']');
  w.memoize();
  w.op(']');
  w.memoize();
  std::unordered_map<int, uint32_t> frames;  // frame number: its memo index
  uint32_t last_list = 0;
  for (int i = 0; i < entries; ++i) {
    if (i % 1000 == 0) w.op('(');
    w.op('}');
    w.memoize();
    w.op('(');
    bool alloc = i % 2 == 0;
    w.key("action").key(alloc ? "alloc" : "free_completed");
    w.key("addr").integer(0x7f0000000000 + 4096 * int64_t{i / 2});
    w.key("size").integer(4096);
    w.key("stream").integer(0);
    w.key("time_us").integer(1795761087115273 + i);
    w.key("compile_context").str("N/A");
    w.memoize();
    w.key("user_metadata").key("");
    w.key("frames");
    if (alloc) {
      int stack = (i / 2) % stacks;
      w.op(']');
      last_list = w.memoize();
      w.op('(');
      for (int f = 0; f < depth; ++f) {
        int number = stack * depth + f;
        if (auto it = frames.find(number); it != frames.end()) {
          w.get(it->second);
          continue;
        }
        w.op('}');
        uint32_t frame = w.memoize();
        w.op('(');
        w.key("filename")
            .key(f == 0 ? "/work/train.py" : "/usr/lib/python3/site-packages/torch/nn/m" + std::to_string(f) + ".py");
        w.key("name").key("fn" + std::to_string(f));
        w.key("line").integer(10 + stack);
        w.op('u');
        frames.emplace(number, frame);
      }
      w.op('e');
    } else {
      w.get(last_list);
    }
    w.op('u');
    if (i % 1000 == 999 || i == entries - 1) w.op('e');
  }
  return w.op('a').op('u').finish();
}

std::string largeMemoIndexPickle() { return std::string("\x80\x02Nr\xff\xff\xff\x0f.", 9); }

std::string marksPickle(size_t marks) { return "\x80\x04" + std::string(marks, '('); }

}  // namespace sightline::testing
