// The whitelisting unpickler: a stack machine over the plain-data opcodes of protocols 2-5.
#include "analysis/ingest/pickle_data.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_set>

namespace sightline::ingest {

int64_t PickleData::integer(Ref r) const {
  const Node& n = nodes_[r];
  if (n.type == Type::Int || n.type == Type::Bool) return static_cast<int64_t>(n.payload);
  if (n.type == Type::Float) {
    // A float where an integer was expected: its integer part when one fits, else 0 (NaN, huge).
    double d = number(r);
    return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : 0;
  }
  return 0;
}

double PickleData::number(Ref r) const {
  const Node& n = nodes_[r];
  if (n.type == Type::Float) {
    double d = 0;
    std::memcpy(&d, &n.payload, sizeof d);
    return d;
  }
  return n.type == Type::Int || n.type == Type::Bool ? static_cast<double>(static_cast<int64_t>(n.payload)) : 0;
}

std::string_view PickleData::str(Ref r) const {
  const Node& n = nodes_[r];
  if (n.type != Type::Str) return {};
  return std::string_view(bytes_).substr(n.payload, n.count);
}

size_t PickleData::size(Ref r) const {
  const Node& n = nodes_[r];
  if (n.type != Type::List && n.type != Type::Dict) return 0;
  size_t slots = n.chunked ? chunks_[n.payload].size() : n.count;
  return n.type == Type::Dict ? slots / 2 : slots;
}

PickleData::Ref PickleData::slot(Ref container, size_t i) const {
  const Node& n = nodes_[container];
  return n.chunked ? chunks_[n.payload][i] : slots_[n.payload + i];
}

PickleData::Ref PickleData::item(Ref list, size_t i) const { return slot(list, i); }

std::optional<PickleData::Ref> PickleData::get(Ref dict, std::string_view key) const {
  if (type(dict) != Type::Dict) return std::nullopt;
  for (size_t i = size(dict); i-- > 0;)
    if (type(this->key(dict, i)) == Type::Str && str(this->key(dict, i)) == key) return value(dict, i);
  return std::nullopt;
}

size_t PickleData::bytesUsed() const {
  size_t n = bytes_.capacity() + nodes_.capacity() * sizeof(Node) + slots_.capacity() * sizeof(Ref);
  for (const auto& c : chunks_) n += c.capacity() * sizeof(Ref) + sizeof c;
  return n;
}

class Unpickler {
  // Where things stood at a MARK: the stack's height and the document's sizes.
  struct Mark {
    size_t stack = 0;
    PickleData::Ref nodes = 0;
    uint64_t slots = 0, strings = 0;
    size_t memo_log = 0;
    uint64_t memo_size = 0;
    uint64_t chunk_writes = 0;
  };

 public:
  // From the document's bytes, or (with `file`) from a file read in pieces.
  Unpickler(PickleData& doc, const PickleLimits& limits, PickleSink* sink, std::istream* file = nullptr,
            uint64_t file_size = 0)
      : d_(doc), limits_(limits), sink_(sink), file_(file), file_size_(file_size) {
    in_ = file_ ? &buf_ : &d_.bytes_;
    // Room for what a snapshot of this size holds (about one value per 6 bytes, a slot per 4),
    // so the tables do not move while they grow: pages not used are never touched. A sink
    // gives most values back: no room is set aside.
    if (!sink_) {
      uint64_t size = file_ ? file_size_ : d_.bytes_.size();
      d_.nodes_.reserve(259 + size / 6);
      d_.slots_.reserve(size / 4);
    }
    // None, False, True, then the ints 0..255: shared by every use.
    d_.nodes_.push_back({PickleData::Type::None, false, false, 0, 0});
    d_.nodes_.push_back({PickleData::Type::Bool, false, false, 0, 0});
    d_.nodes_.push_back({PickleData::Type::Bool, false, false, 0, 1});
    for (uint64_t i = 0; i < 256; ++i) d_.nodes_.push_back({PickleData::Type::Int, false, false, 0, i});
  }

  bool run(std::string& error) {
    while (need(1)) {
      at_ = consumed_ + p_;
      auto op = static_cast<uint8_t>((*in_)[p_++]);
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty())
          return fail(error, "STOP with " + std::to_string(stack_.size()) + " values on the stack");
        d_.root_ = stack_.back();
        return true;
      }
      if (!step(op)) {
        if (error_.empty()) error_ = "the pickle is cut short";
        return fail(error, error_);
      }
    }
    return fail(error, "no STOP: the pickle is cut short");
  }

 private:
  using Type = PickleData::Type;
  using Ref = PickleData::Ref;

  bool fail(std::string& error, const std::string& why) {
    error = why + " (at byte " + std::to_string(at_) + ")";
    return false;
  }
  bool refuse(uint8_t op, const char* name) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    error_ = std::string("opcode ") + name + " (" + hex + ")" +
             (std::strcmp(name, "unknown") == 0 ? " is not one plain data needs"
                                                : " would load a class or build an object") +
             ": not read";
    return false;
  }
  // At least n bytes of input from p_ on (reading more of the file where there is one).
  bool need(uint64_t n) {
    if (in_->size() - p_ >= n) return true;
    uint64_t pos = consumed_ + p_;
    if (!file_ || pos > file_size_ || n > file_size_ - pos) return false;
    buf_.erase(0, p_);
    consumed_ += p_;
    p_ = 0;
    size_t have = buf_.size(), want = std::max<uint64_t>(n, std::max<uint64_t>(1, limits_.read_size));
    buf_.resize(have + want);
    file_->read(buf_.data() + have, static_cast<std::streamsize>(want));
    buf_.resize(have + static_cast<size_t>(std::max<std::streamsize>(0, file_->gcount())));
    return buf_.size() >= n;
  }
  template <class T>
  bool le(T& out) {
    if (!need(sizeof(T))) return false;
    std::memcpy(&out, in_->data() + p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  // A value read (not fetched from the memo) onto the stack.
  void made(Ref r) {
    stack_.push_back(r);
    ++made_;
  }
  bool node(Type type, uint32_t count, uint64_t payload) {
    if (d_.nodes_.size() >= limits_.max_values || d_.nodes_.size() >= UINT32_MAX) {
      error_ = "more than " + std::to_string(limits_.max_values) + " values";
      return false;
    }
    made(static_cast<Ref>(d_.nodes_.size()));
    d_.nodes_.push_back({type, false, false, count, payload});
    return true;
  }
  bool integer(int64_t v) {
    if (v >= 0 && v < 256) {
      made(static_cast<Ref>(3 + v));
      return true;
    }
    return node(Type::Int, 0, static_cast<uint64_t>(v));
  }
  template <class T>
  bool string() {
    T n = 0;
    if (!le(n)) return false;
    if (n > UINT32_MAX || !need(n)) {
      error_ = "a string of " + std::to_string(static_cast<uint64_t>(n)) + " bytes runs past the end";
      return false;
    }
    uint64_t offset = p_;
    if (file_) {  // the input does not stay: the string is kept in the document
      offset = d_.bytes_.size();
      d_.bytes_.append(*in_, p_, n);
    }
    p_ += n;
    return node(Type::Str, static_cast<uint32_t>(n), offset);
  }
  template <class T>
  bool longInt() {  // LONG1, LONG4: little-endian two's complement of n bytes
    T n = 0;
    if (!le(n)) return false;
    if (n > 8) {
      error_ = "an integer of " + std::to_string(static_cast<uint64_t>(n)) + " bytes (more than 64 bits)";
      return false;
    }
    if (!need(n)) return false;
    uint64_t v = 0;
    for (T i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>((*in_)[p_ + i])) << (8 * i);
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign
    p_ += n;
    return integer(static_cast<int64_t>(v));
  }
  bool pop(Ref& out) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back().stack)) {
      error_ = "a value was taken from an empty stack";
      return false;
    }
    out = stack_.back();
    stack_.pop_back();
    return true;
  }
  // Another MARK open: within the limit, and closable by the bytes left (each open MARK needs
  // one): 20 MB of MARKs once took 2.4 GB before the end said they were never closed.
  bool markFits() {
    uint64_t left = file_ ? file_size_ - std::min<uint64_t>(file_size_, consumed_ + p_) : in_->size() - p_;
    if (marks_.size() >= limits_.max_marks) {
      error_ = "MARKs nested deeper than " + std::to_string(limits_.max_marks);
      return false;
    }
    if (marks_.size() >= left) {
      error_ =
          std::to_string(marks_.size() + 1) + " MARKs open with " + std::to_string(left) + " bytes left to close them";
      return false;
    }
    return true;
  }
  bool popMark(Mark& mark) {
    if (marks_.empty()) {
      error_ = "no MARK";
      return false;
    }
    mark = marks_.back();
    marks_.pop_back();
    return true;
  }
  bool memoPut(uint64_t idx) {
    if (stack_.empty()) return false;
    if (idx >= limits_.max_memo) {
      error_ = "memo index " + std::to_string(idx) + " is too large";
      return false;
    }
    // Python numbers what it memoizes in order, so an index names at most one of the values read
    // so far: a larger one would grow the memo past what the bytes read can fill (a 9-byte
    // pickle once took 1 GB).
    if (idx >= made_) {
      error_ = "memo index " + std::to_string(idx) + " is beyond the " + std::to_string(made_) + " values read so far";
      return false;
    }
    if (memo_.size() <= idx)
      memo_.resize(idx + 1, kUnset);
    else if (sink_)
      memo_log_.push_back(idx);  // an index written again (Python's pickler never does)
    memo_[idx] = stack_.back();
    return true;
  }
  bool memoGet(uint64_t idx) {
    if (idx >= memo_.size() || memo_[idx] == kUnset) {
      error_ = "memo entry " + std::to_string(idx) + " was never set";
      return false;
    }
    stack_.push_back(memo_[idx]);
    return true;
  }
  // A new list, tuple or dict of the values above `from` on the stack.
  bool container(Type type, bool tuple, size_t from) {
    if (from > stack_.size()) {
      error_ = "a MARK above the stack";
      return false;
    }
    size_t n = stack_.size() - from;
    if (type == Type::Dict && n % 2) {
      error_ = "a dict with a key and no value";
      return false;
    }
    uint64_t first = d_.slots_.size();
    d_.slots_.insert(d_.slots_.end(), stack_.begin() + static_cast<ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    if (!node(type, static_cast<uint32_t>(n), first)) return false;
    d_.nodes_.back().tuple = tuple;
    return true;
  }
  // APPEND(S), SETITEM(S): the values above `from` added to the container below them (a list's
  // offered to the sink first). `mark`: the APPENDS's MARK.
  bool extend(Type type, size_t from, const Mark* mark = nullptr) {
    // The container lies inside the current MARK's frame, as in Python's unpickler.
    size_t floor = marks_.empty() ? 0 : marks_.back().stack;
    if (from == 0 || from > stack_.size() || from - 1 < floor) {
      error_ = "no container to add to";
      return false;
    }
    Ref target = stack_[from - 1];
    if (d_.nodes_[target].type != type || d_.nodes_[target].tuple) {
      error_ = type == Type::Dict ? "SETITEMS on a value that is not a dict" : "APPENDS on a value that is not a list";
      return false;
    }
    if (type == Type::Dict && (stack_.size() - from) % 2) {
      error_ = "a dict item with a key and no value";
      return false;
    }
    if (sink_ && type == Type::List) {
      auto keep = stack_.begin() + static_cast<ptrdiff_t>(from);
      for (auto it = keep; it != stack_.end(); ++it) {
        if (sink_->take(d_, target, *it))
          taken_.push_back(*it);
        else
          *keep++ = *it;
      }
      stack_.erase(keep, stack_.end());
    }
    size_t n = stack_.size() - from;
    PickleData::Node& c = d_.nodes_[target];
    auto items_begin = stack_.begin() + static_cast<ptrdiff_t>(from);
    if (n == 0) {
      // all taken (or none given)
    } else if (!c.chunked && (c.count == 0 || c.payload + c.count == d_.slots_.size())) {
      if (c.count == 0) c.payload = d_.slots_.size();
      d_.slots_.insert(d_.slots_.end(), items_begin, stack_.end());
      c.count += static_cast<uint32_t>(n);
    } else {
      if (!c.chunked) {
        std::vector<Ref> items(d_.slots_.begin() + static_cast<ptrdiff_t>(c.payload),
                               d_.slots_.begin() + static_cast<ptrdiff_t>(c.payload + c.count));
        c.chunked = true;
        c.payload = d_.chunks_.size();
        d_.chunks_.push_back(std::move(items));
      }
      d_.chunks_[c.payload].insert(d_.chunks_[c.payload].end(), items_begin, stack_.end());
      ++chunk_writes_;
    }
    stack_.resize(from);
    if (!taken_.empty() && n == 0 && mark) reclaim(*mark);
    taken_.clear();
    return true;
  }

  // A batch the sink took whole: the values made since its MARK are given back, but those the
  // memo names (moved down, their refs told to the sink). Left alone when something older than
  // the MARK was filled meanwhile (it may hold a value of the batch).
  void reclaim(const Mark& m) {
    const Ref base = m.nodes;
    if (chunk_writes_ != m.chunk_writes) return;
    uint64_t owned = 0;
    for (size_t r = base; r < d_.nodes_.size(); ++r) {
      const auto& node = d_.nodes_[r];
      if (node.type != Type::List && node.type != Type::Dict) continue;
      if (node.chunked) return;
      owned += node.count;
    }
    if (owned != d_.slots_.size() - m.slots) return;
    std::unordered_set<Ref> taken(taken_.begin(), taken_.end());
    std::unordered_map<Ref, Ref> moved;
    std::vector<Ref> order;  // kept values, in their new order
    auto keep = [&](Ref r) {
      if (r >= base && moved.emplace(r, static_cast<Ref>(base + order.size())).second) order.push_back(r);
    };
    std::unordered_set<Ref> emptied;  // kept without their items: the sink has what it needs
    // What the memo names of the batch: the indices set since the MARK, and those set again.
    auto root = [&](uint64_t idx) {
      Ref& r = memo_[idx];
      if (r == kUnset || r < base) return;
      if (taken.count(r)) {
        r = 0;  // what the sink took is gone: None
        return;
      }
      if (auto as = sink_->keepAs(d_, r)) {
        if (*as < base) {
          r = *as;  // an older value that means the same: the memo names it
          return;
        }
        if (d_.nodes_[r].type == Type::List || d_.nodes_[r].type == Type::Dict) emptied.insert(r);
      }
      keep(r);
    };
    forEachMemoSince(m, root);
    for (size_t k = 0; k < order.size(); ++k) {
      const auto& node = d_.nodes_[order[k]];
      if ((node.type == Type::List || node.type == Type::Dict) && !emptied.count(order[k]))
        for (uint32_t i = 0; i < node.count; ++i) keep(d_.slots_[node.payload + i]);
    }
    std::vector<PickleData::Node> nodes;
    std::vector<Ref> slots;
    std::string strings;
    nodes.reserve(order.size());
    for (Ref old : order) {
      PickleData::Node node = d_.nodes_[old];
      if (emptied.count(old)) {
        node.count = 0;
        node.payload = m.slots + slots.size();
      } else if (node.type == Type::List || node.type == Type::Dict) {
        uint64_t first = m.slots + slots.size();
        for (uint32_t i = 0; i < node.count; ++i) {
          Ref child = d_.slots_[node.payload + i];
          auto kept = child >= base ? moved.find(child) : moved.end();
          slots.push_back(child < base ? child : kept != moved.end() ? kept->second : 0);
        }
        node.payload = first;
      } else if (node.type == Type::Str && file_) {
        uint64_t offset = m.strings + strings.size();
        strings.append(d_.bytes_, node.payload, node.count);
        node.payload = offset;
      }
      nodes.push_back(node);
    }
    d_.nodes_.resize(base);
    d_.nodes_.insert(d_.nodes_.end(), nodes.begin(), nodes.end());
    d_.slots_.resize(m.slots);
    d_.slots_.insert(d_.slots_.end(), slots.begin(), slots.end());
    if (file_) {
      d_.bytes_.resize(m.strings);
      d_.bytes_ += strings;
    }
    // A memo entry of the batch that was not kept (a crafted pickle can name one no root reached)
    // is gone: None, as what the sink took.
    auto rename = [&](uint64_t idx) {
      if (memo_[idx] == kUnset || memo_[idx] < base) return;
      auto it = moved.find(memo_[idx]);
      memo_[idx] = it != moved.end() ? it->second : 0;
    };
    forEachMemoSince(m, rename);
    sink_->moved(base, moved);
  }
  // Each memo index set since the MARK `m`: those past the memo's size then, and older ones set
  // again (an index may come twice).
  template <class F>
  void forEachMemoSince(const Mark& m, F&& f) {
    for (uint64_t idx = m.memo_size; idx < memo_.size(); ++idx) f(idx);
    for (size_t i = m.memo_log; i < memo_log_.size(); ++i)
      if (memo_log_[i] < m.memo_size) f(memo_log_[i]);
  }

  bool step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t v = 0;
        if (!le(v)) return false;
        if (v < 2 || v > 5) {
          error_ = "pickle protocol " + std::to_string(v) + " (2 to 5 are read)";
          return false;
        }
        return true;
      }
      case 0x95: {  // FRAME
        uint64_t v = 0;
        return le(v);
      }
      case '(':
        if (!markFits()) return false;
        marks_.push_back({stack_.size(), static_cast<Ref>(d_.nodes_.size()), d_.slots_.size(),
                          file_ ? d_.bytes_.size() : 0, memo_log_.size(), memo_.size(), chunk_writes_});
        return true;
      case '0': {
        Ref r = 0;
        return pop(r);
      }
      case '1': {
        Mark mark;
        if (!popMark(mark)) return false;
        stack_.resize(mark.stack);
        return true;
      }
      case 0x94:
        return memoPut(memo_.size());
      case 'q': {
        uint8_t i = 0;
        return le(i) && memoPut(i);
      }
      case 'r': {
        uint32_t i = 0;
        return le(i) && memoPut(i);
      }
      case 'h': {
        uint8_t i = 0;
        return le(i) && memoGet(i);
      }
      case 'j': {
        uint32_t i = 0;
        return le(i) && memoGet(i);
      }
      case 'N':
        made(0);
        return true;
      case 0x89:
        made(1);
        return true;
      case 0x88:
        made(2);
        return true;
      case 'K': {
        uint8_t v = 0;
        return le(v) && integer(v);
      }
      case 'M': {
        uint16_t v = 0;
        return le(v) && integer(v);
      }
      case 'J': {
        int32_t v = 0;
        return le(v) && integer(v);
      }
      case 0x8a:
        return longInt<uint8_t>();
      case 0x8b:
        return longInt<uint32_t>();
      case 'G': {  // BINFLOAT: big-endian
        uint64_t v = 0;
        if (!le(v)) return false;
        return node(Type::Float, 0, __builtin_bswap64(v));
      }
      case 0x8c:
      case 'U':
      case 'C':
        return string<uint8_t>();
      case 'X':
      case 'T':
      case 'B':
        return string<uint32_t>();
      case 0x8d:
      case 0x8e:
        return string<uint64_t>();
      case ']':
        return container(Type::List, false, stack_.size());
      case ')':
        return container(Type::List, true, stack_.size());
      case '}':
        return container(Type::Dict, false, stack_.size());
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = op - 0x84u;
        size_t floor = marks_.empty() ? 0 : marks_.back().stack;
        if (stack_.size() < floor + n) {
          error_ = "a tuple of values the stack does not hold";
          return false;
        }
        return container(Type::List, true, stack_.size() - n);
      }
      case 'l':
      case 't':
      case 'd': {
        Mark mark;
        return popMark(mark) && container(op == 'd' ? Type::Dict : Type::List, op == 't', mark.stack);
      }
      case 'a':
        return extend(Type::List, stack_.size() - 1);
      case 's':
        return extend(Type::Dict, stack_.size() - 2);
      case 'e':
      case 'u': {
        Mark mark;
        return popMark(mark) && extend(op == 'u' ? Type::Dict : Type::List, mark.stack, &mark);
      }
      default:
        return refuse(op, opName(op));
    }
  }

  static const char* opName(uint8_t op) {
    switch (op) {
      case 'c':
        return "GLOBAL";
      case 0x93:
        return "STACK_GLOBAL";
      case 'R':
        return "REDUCE";
      case 'b':
        return "BUILD";
      case 'i':
        return "INST";
      case 'o':
        return "OBJ";
      case 0x81:
        return "NEWOBJ";
      case 0x92:
        return "NEWOBJ_EX";
      case 'P':
      case 'Q':
        return "PERSID";
      case 0x82:
      case 0x83:
      case 0x84:
        return "EXT";
      case 0x97:
        return "NEXT_BUFFER";
      case 0x98:
        return "READONLY_BUFFER";
      case 0x90:
        return "ADDITEMS";
      case 0x8f:
        return "EMPTY_SET";
      case 0x91:
        return "FROZENSET";
      default:
        return "unknown";
    }
  }

  static constexpr Ref kUnset = UINT32_MAX;
  PickleData& d_;
  const PickleLimits& limits_;
  PickleSink* sink_;
  std::istream* file_;
  uint64_t file_size_;
  std::string buf_;        // the file's bytes not yet read (from a file)
  const std::string* in_;  // the input: buf_, or the document's bytes
  uint64_t consumed_ = 0;  // bytes of the file before in_'s first
  std::vector<Ref> stack_;
  std::vector<Mark> marks_;
  std::vector<Ref> memo_;
  std::vector<uint64_t> memo_log_;  // memo indices written again after they were set (with a sink)
  std::vector<Ref> taken_;          // by the sink, in the APPENDS being run
  uint64_t chunk_writes_ = 0;
  uint64_t made_ = 0;  // values read onto the stack (memo fetches aside)
  std::string error_;
  size_t p_ = 0, at_ = 0;
};

std::optional<PickleData> readPickleData(std::string bytes, std::string& error) {
  return readPickleData(std::move(bytes), error, PickleLimits{}, nullptr);
}

std::optional<PickleData> readPickleData(std::string bytes, std::string& error, const PickleLimits& limits) {
  return readPickleData(std::move(bytes), error, limits, nullptr);
}

std::optional<PickleData> readPickleData(std::string bytes, std::string& error, const PickleLimits& limits,
                                         PickleSink* sink) {
  PickleData doc;
  doc.bytes_ = std::move(bytes);
  Unpickler u(doc, limits, sink);
  if (!u.run(error)) return std::nullopt;
  return doc;
}

std::optional<PickleData> readPickleFile(const std::string& path, std::string& error, const PickleLimits& limits,
                                         PickleSink* sink) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (!in || ec) {
    error = "cannot open " + path;
    return std::nullopt;
  }
  PickleData doc;
  Unpickler u(doc, limits, sink, &in, size);
  if (!u.run(error)) {
    if (in.bad()) error = "cannot read " + path;
    return std::nullopt;
  }
  return doc;
}

}  // namespace sightline::ingest
