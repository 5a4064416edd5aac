// A whitelisting unpickler for pickles of plain data (None, bools, ints, floats, strings,
// bytes, lists, tuples, dicts), as PyTorch's memory snapshots are: protocols 2-5. Only the
// opcodes such data needs are read; any opcode that would find a class, call or build an
// object (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, EXT, PERSID, ...) is an error,
// never run. Values live in one compact document (16 bytes a value, 4 a container slot;
// strings point into the bytes, which the document keeps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sightline::ingest {

class PickleData;
class PickleSink;
// Beyond these the pickle is refused. A memo index must also name a value already read (Python's
// pickler numbers them in order), and a MARK needs a byte left to close it: neither grows a
// table past what the file's bytes can fill.
struct PickleLimits {
  uint64_t max_values = 1ull << 31;  // values in one document
  uint64_t max_memo = 1ull << 28;    // memo index
  uint64_t read_size = 1ull << 20;   // a file is read this many bytes at a time (at least)
  uint64_t max_marks = 1ull << 16;   // MARKs open at once (Python nests a few per container)
};
std::optional<PickleData> readPickleData(std::string bytes, std::string& error, const PickleLimits& limits);
std::optional<PickleData> readPickleData(std::string bytes, std::string& error, const PickleLimits& limits,
                                         PickleSink* sink);

class PickleData {
 public:
  enum class Type : uint8_t { None, Bool, Int, Float, Str, List, Dict };  // tuples are lists
  using Ref = uint32_t;

  Ref root() const { return root_; }
  Type type(Ref r) const { return nodes_[r].type; }
  bool isNone(Ref r) const { return type(r) == Type::None; }
  // Numbers read as either kind; strings, containers as 0.
  int64_t integer(Ref r) const;
  double number(Ref r) const;
  std::string_view str(Ref r) const;  // "" when not a string
  // Containers: a list's items; a dict's keys and values alternate. Empty for scalars.
  size_t size(Ref r) const;  // items of a list, entries of a dict
  Ref item(Ref list, size_t i) const;
  Ref key(Ref dict, size_t i) const { return slot(dict, 2 * i); }
  Ref value(Ref dict, size_t i) const { return slot(dict, 2 * i + 1); }
  // The value of a string key (the last one set), or nullopt.
  std::optional<Ref> get(Ref dict, std::string_view key) const;

  size_t valueCount() const { return nodes_.size(); }
  size_t bytesUsed() const;  // what the document holds, the pickle's bytes included

 private:
  friend class Unpickler;
  friend std::optional<PickleData> readPickleData(std::string bytes, std::string& error, const PickleLimits& limits,
                                                  PickleSink* sink);
  friend std::optional<PickleData> readPickleFile(const std::string& path, std::string& error,
                                                  const PickleLimits& limits, PickleSink* sink);
  struct Node {
    Type type = Type::None;
    bool chunked = false;  // a container filled in several batches: its slots in chunks_
    bool tuple = false;    // a list that is a tuple (APPENDS refused)
    uint32_t count = 0;    // slots of a container, length of a string
    uint64_t payload = 0;  // int / double bits / string offset / first slot / chunks_ index
  };
  Ref slot(Ref container, size_t i) const;

  std::string bytes_;  // the pickle's bytes; read from a file: its strings alone
  std::vector<Node> nodes_;
  std::vector<Ref> slots_;
  std::vector<std::vector<Ref>> chunks_;
  Ref root_ = 0;
};

// Reads `bytes` (moved into the document). On failure returns nullopt with `error` naming the
// opcode and byte offset ("opcode GLOBAL (0x63) at byte 12 would load a class: not read").
std::optional<PickleData> readPickleData(std::string bytes, std::string& error);

// Takes the items of lists as they are appended, so that a large pickle (a memory snapshot's
// millions of trace entries) never stands whole in memory: what the sink takes is left out of
// its list, and a batch it took whole (an APPENDS) gives its values back to the document, those
// the memo still names (strings, frames met first in the batch) moved and kept.
class PickleSink {
 public:
  virtual ~PickleSink() = default;
  // `item`, complete, appended to `list`: true when the sink took it.
  virtual bool take(const PickleData& doc, PickleData::Ref list, PickleData::Ref item) = 0;
  // Values at or above `from` were given back; those kept have the refs of `moved` (any other
  // ref at or above `from` the sink holds is gone).
  virtual void moved(PickleData::Ref from, const std::unordered_map<PickleData::Ref, PickleData::Ref>& moved) = 0;
  // A value of a batch given back that the memo still names: nullopt keeps it whole; its own ref
  // keeps a list or dict without its items (the sink has what it needs of it and finds it again
  // by its ref); the ref of an older value (below the batch) that means the same to the sink
  // has the memo name that one instead, and this one goes. Refs returned here are told to
  // `moved` like any other kept value.
  virtual std::optional<PickleData::Ref> keepAs(const PickleData& /*doc*/, PickleData::Ref /*value*/) {
    return std::nullopt;
  }
};

// Reads a pickle file in pieces (strings copied into the document, the file never held whole).
std::optional<PickleData> readPickleFile(const std::string& path, std::string& error, const PickleLimits& limits,
                                         PickleSink* sink);

}  // namespace sightline::ingest
