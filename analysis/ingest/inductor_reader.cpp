// Inductor's generated code: FX graph cache entries, wrapper modules and TORCH_TRACE logs.
#include "analysis/ingest/inductor_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include <cstdio>
#include <unordered_map>

#include "analysis/ingest/json_scanner.h"

namespace sightline::ingest {

namespace fs = std::filesystem;

namespace {

std::string_view trimLeft(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

bool isIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `text.find(needle, from)`, searching with memchr for the needle's rarest byte (a '.', a quote
// or a parenthesis): std::string_view's find compares at every match of the first byte, slow on
// the long lines of generated code where that byte is common.
size_t findIn(std::string_view text, std::string_view needle, size_t from = 0) {
  if (needle.empty() || from > text.size() || needle.size() > text.size() - from) return std::string_view::npos;
  size_t anchor = 0;
  for (size_t i = 0; i < needle.size(); ++i)
    if (char c = needle[i]; c == '.' || c == '\'' || c == '(' || c == '=') {
      anchor = i;
      break;
    }
  const char* data = text.data();
  const char* end = data + text.size();
  for (const char* p = data + from + anchor; p < end;) {
    const void* hit = std::memchr(p, needle[anchor], static_cast<size_t>(end - p));
    if (!hit) break;
    const char* h = static_cast<const char*>(hit);
    size_t start = static_cast<size_t>(h - data) - anchor;
    if (start + needle.size() > text.size()) break;
    size_t i = 0;
    while (i < needle.size() && data[start + i] == needle[i]) ++i;
    if (i == needle.size()) return start;
    p = h + 1;
  }
  return std::string_view::npos;
}

// The '\n' bytes of [begin, end), eight at a time.
size_t countNewlines(const char* begin, const char* end) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL, kNewlines = 0x0a0a0a0a0a0a0a0aULL;
  size_t n = 0;
  const char* p = begin;
  for (; end - p >= 8; p += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p, 8);
    uint64_t x = w ^ kNewlines;                                          // a zero byte where a newline was
    uint64_t t = ~(((x & kLow7) + kLow7) | x | kLow7);                   // the high bit of each zero byte, exactly
    n += static_cast<size_t>(((t >> 7) * 0x0101010101010101ULL) >> 56);  // its bytes' 0/1 summed
  }
  for (; p < end; ++p) n += *p == '\n';
  return n;
}

// Splits text into lines (without their '\n'), 1-based by position + 1.
std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

// "a, b, c" inside [...] after `prefix` on the line, as names.
std::vector<std::string_view> bracketList(std::string_view line, std::string_view prefix) {
  std::vector<std::string_view> out;
  size_t p = line.find(prefix);
  if (p == std::string_view::npos) return out;
  size_t open = line.find('[', p + prefix.size());
  size_t close = open == std::string_view::npos ? open : line.find(']', open);
  if (close == std::string_view::npos) return out;
  std::string_view list = line.substr(open + 1, close - open - 1);
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && !isIdentChar(list[i])) ++i;
    size_t j = i;
    while (j < list.size() && isIdentChar(list[j])) ++j;
    if (j > i) out.emplace_back(list.substr(i, j - i));
    i = j;
  }
  return out;
}

// ---- Pickle: the opcodes of protocols 0-5, walked without building objects ----

struct Token {
  enum Kind : uint8_t { Str, Int, Other } kind = Other;
  std::string_view text;
  int64_t value = 0;
};

template <class T>
bool readLe(std::string_view b, size_t& p, T& out) {
  if (p + sizeof(T) > b.size()) return false;
  std::memcpy(&out, b.data() + p, sizeof(T));
  p += sizeof(T);
  return true;
}

// Walks a pickle's opcodes (never running it), handing each object it pushes to `on` as a
// token; `on` returns false to stop.
template <class OnToken>
class PickleWalker {
 public:
  PickleWalker(std::string_view b, OnToken& on) : b_(b), on_(on) {}

  // 1: reached STOP; 0: stopped by `on`; -1: not a pickle or cut short.
  int run() {
    while (p_ < b_.size()) {
      auto op = static_cast<uint8_t>(b_[p_++]);
      if (op == '.') return 1;  // STOP
      std::optional<bool> ok = valueOp(op);
      if (!ok) ok = stateOp(op);
      if (!ok || !*ok) return -1;  // an unknown opcode, or cut short
      if (stopped_) return 0;
    }
    return -1;  // no STOP: truncated
  }

 private:
  void push(Token t) {
    last_ = t;
    stopped_ = stopped_ || !on_(last_);
  }
  void other() { push(Token{}); }
  bool line(std::string_view& out) {
    size_t e = b_.find('\n', p_);
    if (e == std::string_view::npos) return false;
    out = b_.substr(p_, e - p_);
    p_ = e + 1;
    return true;
  }
  bool string(uint64_t n) {
    if (n > b_.size() - p_) return false;
    push({Token::Str, b_.substr(p_, n), 0});
    p_ += n;
    return true;
  }
  template <class T>
  bool sized() {  // a string whose length comes first, as T
    T n = 0;
    return readLe(b_, p_, n) && string(n);
  }
  template <class T>
  bool integer() {
    T v = 0;
    if (!readLe(b_, p_, v)) return false;
    push({Token::Int, {}, static_cast<int64_t>(v)});
    return true;
  }
  template <class T>
  bool skipped() {  // an object this walk does not read: T bytes of argument
    T v = 0;
    bool ok = readLe(b_, p_, v);
    other();
    return ok;
  }
  template <class T>
  bool longInt() {  // LONG1, LONG4: a length, then that many bytes
    T n = 0;
    bool ok = readLe(b_, p_, n) && n <= b_.size() - p_;
    if (ok) p_ += n;
    other();
    return ok;
  }
  bool memoGet(uint64_t idx) {
    push(idx < memo_.size() ? memo_[idx] : Token{});
    return true;
  }
  bool memoPut(uint64_t idx) {
    if (idx > 10'000'000) return false;
    if (memo_.size() <= idx) memo_.resize(idx + 1);
    memo_[idx] = last_;
    return true;
  }
  template <class T>
  bool memoAt(bool put) {
    T idx = 0;
    return readLe(b_, p_, idx) && (put ? memoPut(idx) : memoGet(idx));
  }
  bool textIndex(bool put) {  // PUT, GET: the index as a text line
    std::string_view text;
    if (!line(text)) return false;
    auto idx = static_cast<uint64_t>(std::atoll(std::string(text).c_str()));
    return put ? memoPut(idx) : memoGet(idx);
  }
  bool textLines(int n) {  // opcodes whose argument is n text lines
    std::string_view text;
    bool ok = line(text) && (n < 2 || line(text));
    other();
    return ok;
  }

  // Opcodes that push strings, numbers and the like; nullopt: not one of them.
  std::optional<bool> valueOp(uint8_t op) {
    switch (op) {
      case 0x8c:  // SHORT_BINUNICODE
      case 'U':   // SHORT_BINSTRING
      case 'C':   // SHORT_BINBYTES
        return sized<uint8_t>();
      case 'X':  // BINUNICODE
      case 'T':  // BINSTRING
      case 'B':  // BINBYTES
        return sized<uint32_t>();
      case 0x8d:  // BINUNICODE8
      case 0x8e:  // BINBYTES8
      case 0x96:  // BYTEARRAY8
        return sized<uint64_t>();
      case 'K':
        return integer<uint8_t>();
      case 'M':
        return integer<uint16_t>();
      case 'J':
        return integer<int32_t>();
      case 0x8a:
        return longInt<uint8_t>();
      case 0x8b:
        return longInt<uint32_t>();
      case 'G':  // BINFLOAT
        return skipped<uint64_t>();
      case 0x82:  // EXT1
        return skipped<uint8_t>();
      case 0x83:  // EXT2
        return skipped<uint16_t>();
      case 0x84:  // EXT4
        return skipped<uint32_t>();
      case 'c':  // GLOBAL
      case 'i':  // INST
        return textLines(2);
      case 'I':
      case 'L':
      case 'F':
      case 'S':
      case 'V':
      case 'P':
        return textLines(1);
      default:
        return std::nullopt;
    }
  }

  // Framing, the memo, and opcodes that build containers or call; nullopt: unknown.
  std::optional<bool> stateOp(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t v = 0;
        return readLe(b_, p_, v);
      }
      case 0x95: {  // FRAME
        uint64_t v = 0;
        return readLe(b_, p_, v);
      }
      case 0x94:  // MEMOIZE
        memo_.push_back(last_);
        return true;
      case 'q':
        return memoAt<uint8_t>(true);
      case 'r':
        return memoAt<uint32_t>(true);
      case 'h':
        return memoAt<uint8_t>(false);
      case 'j':
        return memoAt<uint32_t>(false);
      case 'p':
        return textIndex(true);
      case 'g':
        return textIndex(false);
      case '(':
      case 'e':
      case 'a':
      case 'u':
      case 's':
      case '0':
      case '1':
      case 0x90:
        return true;  // MARK, APPENDS, APPEND, SETITEMS, SETITEM, POP, POP_MARK, ADDITEMS: no new object
      case ')':
      case ']':
      case '}':
      case 0x8f:
      case 'N':
      case 0x88:
      case 0x89:
      case 't':
      case 0x85:
      case 0x86:
      case 0x87:
      case 'R':
      case 'b':
      case 0x81:
      case 0x92:
      case 'o':
      case '2':
      case 0x91:
      case 0x93:
      case 'Q':
      case 0x97:
      case 0x98:
      case 'l':
      case 'd':
        other();
        return true;
      default:
        return std::nullopt;
    }
  }

  std::string_view b_;
  OnToken& on_;
  std::vector<Token> memo_;
  Token last_;
  size_t p_ = 0;
  bool stopped_ = false;
};

// 1: reached STOP; 0: stopped by `on`; -1: not a pickle or cut short.
template <class OnToken>
int walkPickle(std::string_view b, OnToken&& on) {
  return PickleWalker<std::remove_reference_t<OnToken>>(b, on).run();
}

// ---- The post-grad graph: node name -> (graph order, innermost user line) ----

struct GraphNode {
  int order = 0;
  std::string_view file;  // empty: no stack trace
  int32_t line = 0;
  std::string_view function;
  std::string_view op;  // `torch.ops.aten.mm.default(...)`: "mm"
  model::SourceLine at() const { return {std::string(file), line, std::string(function)}; }
  bool sameLine(const model::SourceLine& l) const { return line == l.line && file == l.file; }
};

// Views into `graph`, which outlives them.
std::unordered_map<std::string_view, GraphNode> graphNodes(std::string_view graph) {
  std::unordered_map<std::string_view, GraphNode> nodes;
  nodes.reserve(graph.size() / 256);
  GraphNode current;
  int order = 0;
  for (size_t start = 0; start < graph.size();) {
    size_t end = graph.find('\n', start);
    if (end == std::string_view::npos) end = graph.size();
    std::string_view l = trimLeft(graph.substr(start, end - start));
    start = end + 1;
    if (l.empty()) {
      current = {};
      continue;
    }
    if (l[0] == '#') {
      if (l.starts_with("# File: ")) {
        std::string_view rest = l.substr(8);
        size_t in = rest.find(" in ");
        size_t colon = in == std::string_view::npos ? in : rest.rfind(':', in);
        current = {};
        if (colon != std::string_view::npos) {
          current.file = rest.substr(0, colon);
          std::from_chars(rest.data() + colon + 1, rest.data() + in, current.line);
          size_t comma = rest.find(',', in + 4);
          current.function = rest.substr(in + 4, comma == std::string_view::npos ? comma : comma - in - 4);
        }
      } else if (l.find("No stacktrace") != std::string_view::npos) {
        current = {};
      }
      continue;
    }
    size_t j = 0;
    while (j < l.size() && isIdentChar(l[j])) ++j;
    if (j == 0 || std::isdigit(static_cast<unsigned char>(l[0]))) continue;
    std::string_view after = l.substr(j);
    if (!(after.starts_with(": ") || after.starts_with(" = "))) continue;
    if (after.starts_with(": ") && findIn(after, " = ") == std::string_view::npos) continue;
    GraphNode node = current;
    node.order = order++;
    node.op = {};
    if (size_t t = findIn(after, "torch.ops.aten."); t != std::string_view::npos) {
      size_t b = t + 15, e = b;
      while (e < after.size() && isIdentChar(after[e])) ++e;
      node.op = after.substr(b, e - b);
    }
    nodes[l.substr(0, j)] = node;
  }
  return nodes;
}

// Ops that make a kernel what it is: reductions (a norm's statistics, a softmax's sums, a
// loss) and matmuls. A fused kernel's pointwise nodes before and after them are its passengers.
bool isMainOp(std::string_view op) {
  static constexpr std::string_view kOps[] = {"sum",
                                              "mean",
                                              "amax",
                                              "amin",
                                              "max",
                                              "min",
                                              "argmax",
                                              "argmin",
                                              "prod",
                                              "var_mean",
                                              "var",
                                              "std",
                                              "logsumexp",
                                              "any",
                                              "all",
                                              "cumsum",
                                              "norm",
                                              "linalg_vector_norm",
                                              "_log_softmax",
                                              "_softmax",
                                              "_log_softmax_backward_data",
                                              "_softmax_backward_data",
                                              "native_layer_norm",
                                              "native_layer_norm_backward",
                                              "native_group_norm",
                                              "native_batch_norm",
                                              "_native_batch_norm_legit",
                                              "_native_batch_norm_legit_functional",
                                              "nll_loss_forward",
                                              "nll_loss_backward",
                                              "mm",
                                              "bmm",
                                              "addmm",
                                              "baddbmm",
                                              "_scaled_mm",
                                              "_int_mm",
                                              "convolution",
                                              "convolution_backward"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

// A fused kernel's main node: of the lines its main ops are on, the one with most of them (the
// later one on a tie), its last such node; without main ops, its last node.
const GraphNode* mainNode(const std::vector<const GraphNode*>& located) {
  const GraphNode* last = nullptr;
  std::map<std::pair<std::string_view, int32_t>, std::pair<int, const GraphNode*>> lines;
  for (const GraphNode* n : located) {
    if (!last || n->order > last->order) last = n;
    if (!isMainOp(n->op)) continue;
    auto& [count, latest] = lines[{n->file, n->line}];
    ++count;
    if (!latest || n->order > latest->order) latest = n;
  }
  const GraphNode* best = nullptr;
  int best_count = 0;
  for (const auto& [line, entry] : lines)
    if (entry.first > best_count || (entry.first == best_count && entry.second->order > best->order))
      best = entry.second, best_count = entry.first;
  return best ? best : last;
}

// A whole stack for `main`'s line: one the module has for it (sharing most frames with
// `charged`, the stack of the kernel's last node), else `charged` or another of its stacks cut
// at that line, else that line alone.
std::vector<model::SourceLine> stackAt(
    const GraphNode& main, const std::vector<model::SourceLine>& charged,
    const std::map<std::pair<std::string, int32_t>, std::vector<const std::vector<model::SourceLine>*>>& stacks_at) {
  if (auto it = stacks_at.find({std::string(main.file), main.line}); it != stacks_at.end()) {
    const std::vector<model::SourceLine>* best = nullptr;
    size_t best_shared = 0;
    for (const auto* stack : it->second) {
      size_t shared = 0;
      while (shared < stack->size() && shared < charged.size() && (*stack)[shared] == charged[shared]) ++shared;
      if (!best || shared > best_shared) best = stack, best_shared = shared;
    }
    return *best;
  }
  auto cut = [&](const std::vector<model::SourceLine>& stack) -> std::vector<model::SourceLine> {
    for (size_t i = stack.size(); i-- > 0;)
      if (main.sameLine(stack[i])) return {stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(i) + 1};
    return {};
  };
  if (auto own = cut(charged); !own.empty()) return own;
  for (const auto& [at, stacks] : stacks_at)
    for (const auto* stack : stacks)
      if (auto other = cut(*stack); !other.empty()) return other;
  return {main.at()};
}

// Calls `on(line, number, quoted)` for each line of a wrapper module outside its triple-quoted
// strings (1-based numbers); `quoted`: the line opens or closes one. Lines inside a string are
// skipped in one search for its end.
template <class OnLine>
void forEachCodeLine(std::string_view text, OnLine&& on) {
  constexpr std::string_view kQuotes = "\'\'\'";
  bool in_string = false;
  int32_t number = 1;
  for (size_t start = 0; start <= text.size();) {
    if (in_string) {  // jump to the line that closes the string
      size_t close = findIn(text, kQuotes, start);
      if (close == std::string_view::npos) return;
      number += static_cast<int32_t>(countNewlines(text.data() + start, text.data() + close));
      size_t nl = text.rfind('\n', close);
      if (nl != std::string_view::npos && nl >= start) start = nl + 1;
    }
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    size_t quotes = 0;
    for (size_t q = findIn(l, kQuotes); q != std::string_view::npos; q = findIn(l, kQuotes, q + 3)) ++quotes;
    bool was_in_string = in_string;
    if (quotes % 2 == 1) in_string = !in_string;
    if (!was_in_string || quotes > 0) on(l, number, was_in_string || quotes > 0);
    if (end == text.size()) break;
    start = end + 1, ++number;
  }
}

struct RawLaunch {
  int32_t line = 0;
  std::string kernel;
  bool triton = false;
  std::vector<std::string_view> nodes;  // the launch's `Source Nodes` (views into the module)
  std::string handle;                   // provenance debug handle, "kernel:N"
};

// The launched kernel of a call() line, or "".
std::string launchedKernel(std::string_view l, bool& triton) {
  triton = false;
  size_t run = findIn(l, ".run(");
  if (run != std::string_view::npos && run > 0) {
    size_t s = run;
    while (s > 0 && isIdentChar(l[s - 1])) --s;
    if (s == 0 || l[s - 1] == ' ') {
      triton = true;
      return std::string(l.substr(s, run - s));
    }
  }
  for (std::string_view prefix : {std::string_view("extern_kernels."), std::string_view("torch.ops.aten.")}) {
    size_t p = findIn(l, prefix);
    if (p == std::string_view::npos || (p > 0 && isIdentChar(l[p - 1]))) continue;
    size_t s = p + prefix.size(), e = s;
    while (e < l.size() && isIdentChar(l[e])) ++e;
    if (e == s) continue;
    size_t call = e;  // a call, not a name in a string: `torch.ops.aten.mm.default(`
    if (call < l.size() && l[call] == '.') {
      ++call;
      while (call < l.size() && isIdentChar(l[call])) ++call;
    }
    if (call >= l.size() || l[call] != '(') continue;
    std::string head = prefix.starts_with("extern") ? "extern_kernels." : "aten.";
    return head + std::string(l.substr(s, e - s));
  }
  return "";
}

}  // namespace

std::vector<model::SourceLine> parseStackText(std::string_view text) {
  std::vector<model::SourceLine> out;
  for (std::string_view raw : splitLines(text)) {
    std::string_view l = trimLeft(raw);
    if (!l.starts_with("File \"")) continue;
    size_t q = l.find('"', 6);
    if (q == std::string_view::npos) continue;
    model::SourceLine f;
    f.file = std::string(l.substr(6, q - 6));
    size_t ln = l.find(", line ", q);
    if (ln == std::string_view::npos) continue;
    f.line = std::atoi(std::string(l.substr(ln + 7)).c_str());
    size_t in = l.find(", in ", ln);
    if (in != std::string_view::npos) f.function = std::string(l.substr(in + 5));
    if (f.line > 0) out.push_back(std::move(f));
  }
  return out;
}

std::optional<FxGraphEntry> parseFxGraphEntry(std::string_view bytes) {
  if (bytes.size() < 2 || static_cast<uint8_t>(bytes[0]) != 0x80) return std::nullopt;
  // The four fields lie near the start, before Triton's binaries: stop once they are read.
  FxGraphEntry e;
  enum class Next { Key, CacheKey, Source, Graph, LinemapLine, LinemapText } next = Next::Key;
  bool source = false, graph = false, linemap = false, in_linemap = false;
  int32_t line = 0;
  auto on = [&](const Token& t) {
    auto text = [&] { return t.kind == Token::Str ? std::string(t.text) : std::string(); };
    switch (next) {
      case Next::CacheKey:
        if (e.cache_key.empty()) e.cache_key = text();
        next = Next::Key;
        return true;
      case Next::Source:
        e.source_code = text(), source = true, next = Next::Key;
        break;
      case Next::Graph:
        e.post_grad_graph = text(), graph = true, next = Next::Key;
        break;
      case Next::LinemapText:
        if (t.kind == Token::Str) {
          e.linemap.emplace_back(line, std::string(t.text));
          next = Next::LinemapLine;
          return true;
        }
        next = Next::LinemapLine;
        [[fallthrough]];
      case Next::LinemapLine:
        if (t.kind == Token::Int) {
          line = static_cast<int32_t>(t.value), next = Next::LinemapText;
          return true;
        }
        if (t.kind != Token::Str) return true;
        in_linemap = false, linemap = true, next = Next::Key;
        [[fallthrough]];
      case Next::Key:
        if (t.kind != Token::Str) break;
        if (t.text == "cache_key")
          next = Next::CacheKey;
        else if (t.text == "source_code" && !source)
          next = Next::Source;
        else if (t.text == "inductor_post_grad_graph_str" && !graph)
          next = Next::Graph;
        else if (t.text == "cache_linemap" && !linemap && !in_linemap)
          in_linemap = true, next = Next::LinemapLine;
        break;
    }
    return !(source && graph && linemap && !e.cache_key.empty());
  };
  if (walkPickle(bytes, on) < 0 && !(source && graph && linemap)) return std::nullopt;
  if (!source || e.cache_key.empty()) return std::nullopt;
  return e;
}

namespace {

// The launches of a wrapper module and what its comments say of their nodes.
struct WrapperScan {
  // Views into the source: triton kernel -> post-grad nodes, and pre-grad -> post-grad (module-wide).
  std::unordered_map<std::string_view, std::vector<std::string_view>> kernel_nodes, pre_to_post;
  std::vector<RawLaunch> raw;
};

WrapperScan scanWrapper(std::string_view source) {
  // One pass over the lines outside the kernels' source strings (most of the module, skipped
  // whole). Kernel definitions: `# Source node to ATen node mapping:`, `#   pre => post, post`,
  // then `name = async_compile.triton('...', '''`. Launches: in call() and in the graph
  // partitions it calls (`def partition_0(args):`), in functions' bodies, each with the Source
  // Nodes comment before it.
  WrapperScan out;
  auto& kernel_nodes = out.kernel_nodes;
  auto& pre_to_post = out.pre_to_post;
  auto& raw = out.raw;
  std::vector<std::string_view> pending;
  bool in_mapping = false;
  std::vector<std::string_view> nodes;
  std::string handle;
  forEachCodeLine(source, [&](std::string_view l, int32_t number, bool quoted) {
    if (l.starts_with("# Source node to ATen node mapping:")) {
      in_mapping = true, pending.clear();
      return;
    }
    if (in_mapping && l.starts_with("#   ")) {
      size_t arrow = findIn(l, " => ");
      if (arrow == std::string_view::npos) return;
      std::string_view pre = trimLeft(l.substr(1, arrow - 1));
      auto& posts = pre_to_post[pre];
      std::string_view rest = l.substr(arrow + 4);
      size_t p = 0;
      while (p < rest.size()) {
        while (p < rest.size() && !isIdentChar(rest[p])) ++p;
        size_t q = p;
        while (q < rest.size() && isIdentChar(rest[q])) ++q;
        if (q > p) {
          posts.emplace_back(rest.substr(p, q - p));
          pending.emplace_back(rest.substr(p, q - p));
        }
        p = q;
      }
      return;
    }
    in_mapping = false;
    size_t eq = quoted ? findIn(l, " = async_compile.triton('") : std::string_view::npos;
    if (eq != std::string_view::npos && !pending.empty()) {
      kernel_nodes[l.substr(0, eq)] = std::move(pending);
      pending.clear();
    }
    if (quoted) return;
    std::string_view t = trimLeft(l);
    if (t.empty() || t.size() == l.size()) return;  // functions' bodies only
    if (t.starts_with("# Topologically Sorted Source Nodes:")) {
      nodes = bracketList(t, "Source Nodes:");
      return;
    }
    if (t.starts_with("# [Provenance debug handles] ")) {
      handle = std::string(t.substr(29));
      while (!handle.empty() && (handle.back() == ' ' || handle.back() == '\r')) handle.pop_back();
      return;
    }
    if (t.starts_with("#")) return;
    bool triton = false;
    std::string kernel = launchedKernel(t, triton);
    if (kernel.empty()) return;
    raw.push_back({number, kernel, triton, std::move(nodes), std::move(handle)});
    nodes.clear(), handle.clear();
  });
  return out;
}

// A launch's graph nodes and the one it computes foremost.
struct Placed {
  const GraphNode* main = nullptr;  // a Triton kernel's main node, an extern call's op node
  std::vector<const GraphNode*> located;
  bool triton = false;
};

// A fused kernel goes to the line of its main op (its reductions or matmul) rather than of its
// last node (Inductor's line map's rule): a layer norm's backward fused with the dropout
// backward that follows it is the layer norm's. Its whole stack is one the module has for that
// line (the one sharing most of the last node's), else the last node's cut at that line.
void moveToMainOps(model::CompiledModule& m, const std::vector<Placed>& placed) {
  std::map<std::pair<std::string, int32_t>, std::vector<const std::vector<model::SourceLine>*>> stacks_at;
  for (const auto& l : m.launches)
    if (!l.stack.empty()) stacks_at[{l.stack.back().file, l.stack.back().line}].push_back(&l.stack);
  for (size_t i = 0; i < m.launches.size(); ++i) {
    auto& launch = m.launches[i];
    const auto& [main, located, triton] = placed[i];
    if (launch.stack.empty()) continue;
    if (main && !main->sameLine(launch.stack.back())) launch.stack = stackAt(*main, launch.stack, stacks_at);
    if (main && triton) {
      const auto& charged = launch.stack.back();
      for (const GraphNode* n : located) {
        if (n->sameLine(charged)) continue;
        if (std::find_if(launch.fused.begin(), launch.fused.end(),
                         [&](const model::SourceLine& f) { return n->sameLine(f); }) == launch.fused.end())
          launch.fused.push_back(n->at());
      }
      std::sort(launch.fused.begin(), launch.fused.end(),
                [](const auto& a, const auto& b) { return std::tie(a.file, a.line) < std::tie(b.file, b.line); });
    }
  }
}

}  // namespace

model::CompiledModule parseWrapper(std::string_view name, std::string_view source, std::string_view post_grad_graph,
                                   const std::vector<std::pair<int32_t, std::string>>& linemap,
                                   const std::vector<std::pair<std::string, std::string>>& provenance) {
  model::CompiledModule m;
  m.name = std::string(name);
  std::string_view first_line = source.substr(0, source.find('\n'));
  if (first_line.starts_with("# AOT ID: ")) {
    auto ids = bracketList(first_line, "# AOT ID:");
    if (!ids.empty()) m.graph = ids[0];
    m.backward = first_line.find("backward") != std::string_view::npos;
  }
  auto [kernel_nodes, pre_to_post, raw] = scanWrapper(source);
  auto graph = graphNodes(post_grad_graph);
  std::map<std::string, std::vector<std::string_view>> stacks_by_handle;
  for (const auto& [key, stack] : provenance) stacks_by_handle[key].push_back(stack);
  // Launch sites per kernel, and each op's nodes in graph order ("extern_kernels.mm" -> mm nodes).
  std::map<std::string, size_t> sites, ordinal;
  for (const auto& r : raw) ++sites[r.kernel];
  std::unordered_map<std::string_view, std::vector<const GraphNode*>> ops;  // "mm" -> its nodes
  {
    std::vector<const GraphNode*> by_order;
    for (const auto& [n, node] : graph)
      if (!node.op.empty() && !node.file.empty()) by_order.push_back(&node);
    std::sort(by_order.begin(), by_order.end(), [](auto* a, auto* b) { return a->order < b->order; });
    for (const GraphNode* node : by_order) ops[node->op].push_back(node);
  }
  // An extern call's op: "extern_kernels.mm" and "aten.mm" are calls of "mm".
  auto opOf = [](std::string_view kernel) {
    for (std::string_view prefix : {std::string_view("extern_kernels."), std::string_view("aten.")})
      if (kernel.starts_with(prefix)) return kernel.substr(prefix.size());
    return std::string_view();
  };
  std::vector<Placed> placed;
  placed.reserve(raw.size());
  for (const auto& r : raw) {
    model::CompiledLaunch launch;
    launch.line = r.line;
    launch.kernel = r.kernel;
    // The launch's graph nodes: its own Source Nodes (names of the graph, or pre-grad names
    // through the module's mappings), else its Triton kernel's definition (a kernel launched
    // from several places lists the first place's nodes).
    std::vector<const GraphNode*> located;
    auto add = [&](std::string_view n) {
      auto it = graph.find(n);
      if (it != graph.end() && !it->second.file.empty()) located.push_back(&it->second);
    };
    auto k = r.triton ? kernel_nodes.find(r.kernel) : kernel_nodes.end();
    if (k != kernel_nodes.end() && sites[r.kernel] == 1) {
      for (const auto& n : k->second) add(n);
    } else if (auto op = r.triton ? ops.end() : ops.find(opOf(r.kernel));
               op != ops.end() && op->second.size() == sites[r.kernel]) {
      located.push_back(op->second[ordinal[r.kernel]]);  // the k-th call of an op is its k-th node
    } else {
      for (const auto& n : r.nodes) {
        if (auto pp = pre_to_post.find(n); pp != pre_to_post.end()) {
          for (const auto& post : pp->second) add(post);
        } else {
          add(n);
        }
      }
      if (located.empty() && k != kernel_nodes.end())
        for (const auto& n : k->second) add(n);
    }
    ++ordinal[r.kernel];
    const GraphNode* last = nullptr;
    for (const GraphNode* n : located)
      if (!last || n->order > last->order) last = n;
    // Whole stacks: Inductor's line map (the entry at or before the launch), else provenance.
    auto lm = std::upper_bound(linemap.begin(), linemap.end(), r.line,
                               [](int32_t line, const auto& e) { return line < e.first; });
    if (lm != linemap.begin()) launch.stack = parseStackText(std::prev(lm)->second);
    const GraphNode* main = r.triton ? mainNode(located) : last;
    if (launch.stack.empty() && !r.handle.empty()) {
      // Of the handle's stacks (one per line its nodes are on), the main node's, else the last.
      if (auto s = stacks_by_handle.find(r.handle); s != stacks_by_handle.end()) {
        for (std::string_view text : s->second) {
          launch.stack = parseStackText(text);
          if (main && !launch.stack.empty() && main->sameLine(launch.stack.back())) break;
        }
      }
    }
    if (!launch.stack.empty()) {
      m.provenance = true;
    } else if (last) {
      launch.stack.push_back(last->at());
    }
    m.launches.push_back(std::move(launch));
    placed.push_back({main, std::move(located), r.triton});
  }
  moveToMainOps(m, placed);
  return m;
}

namespace {

struct TraceRecord {
  std::string kind;      // the header's first key ("artifact", "inductor_output_code", ...)
  std::string artifact;  // artifact name
  std::string filename;  // inductor_output_code's
  model::CompileRecord compile;
  int64_t frame_id = -1, frame_compile_id = -1;
  std::string_view payload;
  std::string payload_text;
};

// A compilation's stack entry: "Line: 48, Name: main, Filename: /w/train.py".
std::optional<model::SourceLine> parseStackEntry(std::string_view text) {
  auto field = [&](std::string_view key, std::string_view until) -> std::optional<std::string_view> {
    size_t at = text.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    at += key.size();
    size_t end = until.empty() ? text.size() : text.find(until, at);
    if (end == std::string_view::npos) return std::nullopt;
    return text.substr(at, end - at);
  };
  auto line = field("Line: ", ", Name: ");
  auto name = field(", Name: ", ", Filename: ");
  auto file = field(", Filename: ", "");
  if (!line || !name || !file) return std::nullopt;
  int32_t n = 0;
  auto [ptr, ec] = std::from_chars(line->data(), line->data() + line->size(), n);
  if (ec != std::errc() || ptr != line->data() + line->size() || n <= 0) return std::nullopt;
  return model::SourceLine{std::string(*file), n, std::string(*name)};
}

// A graph break artifact's payload: "Graph break in user code at /w/m.py:22\nGraph Break Reason:
// <text>\n\nUser code traceback: ..." -> the line and the reason.
std::optional<model::GraphBreak> parseGraphBreak(std::string_view text) {
  constexpr std::string_view kAt = "Graph break in user code at ";
  size_t at = text.find(kAt);
  if (at == std::string_view::npos) return std::nullopt;
  size_t eol = text.find('\n', at);
  std::string_view where =
      text.substr(at + kAt.size(), (eol == std::string_view::npos ? text.size() : eol) - at - kAt.size());
  size_t colon = where.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  int32_t line = 0;
  auto [ptr, ec] = std::from_chars(where.data() + colon + 1, where.data() + where.size(), line);
  if (ec != std::errc() || line <= 0) return std::nullopt;
  model::GraphBreak out;
  out.at = {std::string(where.substr(0, colon)), line, ""};
  if (eol != std::string_view::npos) {
    std::string_view rest = text.substr(eol + 1);
    constexpr std::string_view kReason = "Graph Break Reason: ";
    if (rest.starts_with(kReason)) rest.remove_prefix(kReason.size());
    size_t tb = rest.find("\nUser code traceback:");
    out.reason = std::string(rest.substr(0, tb));
    while (!out.reason.empty() && (out.reason.back() == '\n' || out.reason.back() == ' ')) out.reason.pop_back();
  }
  return out;
}

// "0/1" from a record's frame ids ("" when it has none).
std::string compileIdOf(const TraceRecord& r) {
  if (r.frame_id < 0 || r.frame_compile_id < 0) return "";
  return std::to_string(r.frame_id) + "/" + std::to_string(r.frame_compile_id);
}

// The process of a log line ("V1123 21:37:47.933000 479 torch/_dynamo/...] {...}"), 0 if none.
uint32_t pidOf(std::string_view line) {
  size_t a = line.find(' ');
  size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos) return 0;
  uint32_t pid = 0;
  std::from_chars(line.data() + b + 1, line.data() + line.size(), pid);
  return pid;
}

// The header JSON of a TORCH_TRACE line.
bool parseHeader(std::string_view json, TraceRecord& r) {
  using namespace kineto;
  Cursor c{json.data(), json.data() + json.size()};
  std::string scratch;
  auto stringMember = [&](std::string& out) {
    std::string_view v;
    if (skipSpace(c) != Status::Ok) return Status::Short;
    if (*c.p != '"') return skipValue(c);
    Status s = parseString(c, v, scratch);
    if (s == Status::Ok) out = std::string(v);
    return s;
  };
  Status s = forEachMember(c, [&](std::string_view key) {
    if (r.kind.empty() && !keyIs(key, "frame_id") && !keyIs(key, "frame_compile_id") && !keyIs(key, "attempt") &&
        !keyIs(key, "has_payload"))
      r.kind = std::string(key);
    if (keyIs(key, "frame_id") || keyIs(key, "frame_compile_id")) {
      std::string_view v;
      Status st = scalarText(c, v);
      int64_t n = -1;
      if (st == Status::Ok && std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc())
        (keyIs(key, "frame_id") ? r.frame_id : r.frame_compile_id) = n;
      return st;
    }
    if (keyIs(key, "artifact") || keyIs(key, "inductor_output_code") || keyIs(key, "compilation_metrics")) {
      bool metrics = keyIs(key, "compilation_metrics");
      if (skipSpace(c) != Status::Ok) return Status::Short;
      if (*c.p != '{') return skipValue(c);
      return forEachMember(c, [&](std::string_view k) {
        if (keyIs(k, "name")) return stringMember(r.artifact);
        if (keyIs(k, "filename")) return stringMember(r.filename);
        if (!metrics) return skipValue(c);
        if (keyIs(k, "compile_id")) return stringMember(r.compile.id);
        if (keyIs(k, "co_name")) return stringMember(r.compile.function.function);
        if (keyIs(k, "co_filename")) return stringMember(r.compile.function.file);
        if (keyIs(k, "fail_reason")) return stringMember(r.compile.fail_reason);
        if (keyIs(k, "fail_type")) return stringMember(r.compile.fail_type);
        if (keyIs(k, "recompile_reason")) return stringMember(r.compile.recompile_reason);
        if (keyIs(k, "restart_reasons") || keyIs(k, "stack_trace")) {
          bool stack = keyIs(k, "stack_trace");
          if (skipSpace(c) != Status::Ok) return Status::Short;
          if (*c.p != '[') return skipValue(c);
          return forEachElement(c, [&] {
            std::string text;
            Status st = stringMember(text);
            if (st != Status::Ok || text.empty()) return st;
            if (!stack) {
              r.compile.restart_reasons.push_back(std::move(text));
            } else if (auto frame = parseStackEntry(text)) {
              r.compile.stack.push_back(std::move(*frame));
            }
            return st;
          });
        }
        if (keyIs(k, "co_firstlineno") || keyIs(k, "entire_frame_compile_time_s") || keyIs(k, "start_time")) {
          std::string_view v;
          Status st = scalarText(c, v);
          if (st == Status::Ok && v != "null") {
            double d = std::atof(std::string(v).c_str());
            if (!std::isfinite(d)) return st;  // "Infinity", "NaN": nothing to keep
            if (keyIs(k, "co_firstlineno"))
              r.compile.function.line = d >= 1 && d < 1e9 ? static_cast<int32_t>(d) : 0;
            else if (keyIs(k, "start_time"))
              r.compile.start_s = d;
            else
              r.compile.seconds = d;
          }
          return st;
        }
        return skipValue(c);
      });
    }
    return skipValue(c);
  });
  return s == Status::Ok;
}

// A provenance artifact's payload: {"kernel:handle": ["stack text", ...], ...}: a pair per stack
// (a kernel computing nodes of several lines has one for each), in order.
std::vector<std::pair<std::string, std::string>> parseProvenance(std::string_view json) {
  using namespace kineto;
  std::vector<std::pair<std::string, std::string>> out;
  Cursor c{json.data(), json.data() + json.size()};
  std::string scratch;
  (void)forEachMember(c, [&](std::string_view key) {
    std::string k(key);
    std::vector<std::string> stacks;
    Status s = forEachElement(c, [&] {
      std::string_view v;
      if (skipSpace(c) != Status::Ok) return Status::Short;
      if (*c.p != '"') return skipValue(c);
      Status st = parseString(c, v, scratch);
      if (st == Status::Ok && !v.empty()) stacks.emplace_back(v);
      return st;
    });
    if (s == Status::Ok)
      for (auto& stack : stacks) out.emplace_back(k, std::move(stack));
    return s;
  });
  return out;
}

std::string stemOf(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  return stem;
}

// A file's bytes (a cache entry's Triton binaries are skipped, never read).
class FileBytes {
 public:
  // Read, not mapped: a log that shrinks while it is read (a run still writing it, or someone
  // truncating it) must end the read early, not fault the process.
  explicit FileBytes(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      data_.resize(static_cast<size_t>(st.st_size));
      size_t have = 0;
      while (have < data_.size()) {
        ssize_t n = ::read(fd, data_.data() + have, data_.size() - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += static_cast<size_t>(n);
      }
      data_.resize(have);
    }
    ::close(fd);
    ok_ = true;
  }
  bool ok() const { return ok_; }
  std::string_view bytes() const { return data_; }

 private:
  std::string data_;
  bool ok_ = false;
};

size_t resolved(const model::CompiledModule& m) {
  return static_cast<size_t>(
      std::count_if(m.launches.begin(), m.launches.end(), [](const auto& l) { return !l.stack.empty(); }));
}

// Keeps one module per name: the one with whole stacks, else the one resolving more launches.
void addModule(model::CompiledCode& out, model::CompiledModule m) {
  for (auto& have : out.modules) {
    if (have.name != m.name) continue;
    if (std::pair(m.provenance, resolved(m)) > std::pair(have.provenance, resolved(have))) have = std::move(m);
    return;
  }
  out.modules.push_back(std::move(m));
}

}  // namespace

// The longest compile time taken as measured (a day).
constexpr double kMaxCompileSeconds = 86400;

void parseTraceLog(std::string_view text, const std::string& path, model::CompiledCode& out) {
  auto lines = splitLines(text);
  std::string graph, name, source;
  std::vector<std::pair<std::string, std::string>> provenance;
  auto flush = [&] {
    if (!name.empty() && !source.empty()) {
      auto m = parseWrapper(name, source, graph, {}, provenance);
      m.path = path;
      addModule(out, std::move(m));
    }
    name.clear(), source.clear(), graph.clear(), provenance.clear();
  };
  size_t implausible = 0;
  for (size_t i = 0; i < lines.size();) {
    std::string_view l = lines[i++];
    if (l.empty() || l[0] == '\t') continue;
    size_t brace = l.find("] {");
    if (brace == std::string_view::npos) continue;
    TraceRecord r;
    if (!parseHeader(l.substr(brace + 2), r)) continue;
    std::string payload;
    while (i < lines.size() && !lines[i].empty() && lines[i][0] == '\t') {
      payload.append(lines[i].substr(1));
      payload.push_back('\n');
      ++i;
    }
    if (r.kind == "inductor_post_grad_graph" || (r.kind == "artifact" && r.artifact == "inductor_post_grad_graph")) {
      if (!name.empty()) flush();
      graph = std::move(payload);
    } else if (r.kind == "inductor_output_code") {
      if (!name.empty()) {
        std::string keep = std::move(graph);
        flush();
        graph = std::move(keep);
      }
      name = stemOf(r.filename), source = std::move(payload);
    } else if (r.kind == "artifact" && r.artifact == "inductor_provenance_tracking_kernel_stack_traces") {
      provenance = parseProvenance(payload);
    } else if (r.kind == "compilation_metrics") {
      r.compile.pid = pidOf(l);
      r.compile.log = path;
      // A compile time below zero or over a day is no measurement (a crafted log summed to
      // "-inf s"): the compilation counts, its time does not.
      if (r.compile.seconds < 0 || r.compile.seconds > kMaxCompileSeconds) {
        r.compile.seconds = 0;
        ++implausible;
      }
      out.compiles.push_back(std::move(r.compile));
    } else if (r.kind == "artifact" && r.artifact == "dynamo_graph_break_reason") {
      if (auto b = parseGraphBreak(payload)) {
        b->compile_id = compileIdOf(r);
        b->pid = pidOf(l);
        b->log = path;
        out.graph_breaks.push_back(std::move(*b));
      }
    }
  }
  flush();
  if (implausible > 0)
    out.warnings.push_back(std::to_string(implausible) +
                           (implausible == 1 ? " compilation has" : " compilations have") +
                           " an implausible compile time (below zero or over a day), not counted: " + path);
}

bool holdsCompiledCode(const std::string& folder) {
  std::error_code ec;
  if (fs::is_directory(fs::path(folder) / "fxgraph", ec)) return true;
  if (fs::is_directory(fs::path(folder) / "torch_compile_debug", ec)) return true;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (n.starts_with("dedicated_log_torch_trace") && n.ends_with(".log")) return true;
  }
  return false;
}

CompiledCodeFiles listCompiledCode(const std::vector<std::string>& folders, const std::atomic<bool>* stop) {
  CompiledCodeFiles out;
  constexpr size_t kMaxFiles = 200'000;
  constexpr uintmax_t kMaxBytes = 1ull << 30;
  for (const auto& folder : folders) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
      out.warnings.push_back("no such folder: " + folder);
      continue;
    }
    out.sources.push_back(folder);
    size_t seen = 0;
    auto opts = fs::directory_options::skip_permission_denied;
    for (fs::recursive_directory_iterator it(folder, opts, ec), end; !ec && it != end; it.increment(ec)) {
      if (stop && stop->load(std::memory_order_relaxed)) break;
      if (++seen > kMaxFiles) {
        out.warnings.push_back("stopped after " + std::to_string(kMaxFiles) + " files in " + folder);
        break;
      }
      if (it.depth() > 6) it.disable_recursion_pending();
      std::error_code fe;
      if (!it->is_regular_file(fe)) continue;
      const fs::path& p = it->path();
      std::string file = p.filename().string();
      std::string parent = p.parent_path().parent_path().parent_path().filename().string();
      bool fx_entry = parent == "fxgraph";
      bool trace_log = file.starts_with("dedicated_log_torch_trace") && file.ends_with(".log");
      PlainCode plain = fx_entry || trace_log ? PlainCode::None : plainCodeKind(p);
      if (!fx_entry && !trace_log && plain == PlainCode::None) continue;
      if (it->file_size(fe) > kMaxBytes) {
        out.warnings.push_back("skipped (over 1 GiB): " + p.string());
        continue;
      }
      out.files.push_back({p.string(), trace_log, plain});
      if (fx_entry) ++out.entries;
    }
    if (ec) out.warnings.push_back("cannot list " + folder + ": " + ec.message());
  }
  return out;
}

model::CompiledCode readCompiledFile(const CompiledCodeFiles::File& file, const std::set<std::string>& want) {
  if (file.plain != PlainCode::None) return readPlainCode(file.path, file.plain, want);
  model::CompiledCode part;
  FileBytes mapped(file.path);
  if (!mapped.ok()) {
    part.warnings.push_back("cannot read " + file.path);
    return part;
  }
  std::string_view bytes = mapped.bytes();
  if (file.trace) {
    parseTraceLog(bytes, file.path, part);
    return part;
  }
  // An entry names its module near its start (`cache_key`): skip the ones not wanted.
  if (!want.empty() &&
      std::none_of(want.begin(), want.end(),
                   [&](const std::string& w) { return bytes.substr(0, 4096).find(w) != std::string_view::npos; }) &&
      bytes.substr(0, 4096).find("cache_key") != std::string_view::npos)
    return part;
  auto entry = parseFxGraphEntry(bytes);
  if (!entry) {
    part.warnings.push_back("not an FX graph cache entry: " + file.path);
    return part;
  }
  if (!want.empty() && !want.count(entry->cache_key)) return part;
  auto m = parseWrapper(entry->cache_key, entry->source_code, entry->post_grad_graph, entry->linemap);
  m.path = file.path;
  part.modules.push_back(std::move(m));
  return part;
}

model::CompiledCode readCompiledFiles(const CompiledCodeFiles& files, const std::vector<std::string>& wanted) {
  model::CompiledCode out;
  out.sources = files.sources;
  out.warnings = files.warnings;
  std::set<std::string> want(wanted.begin(), wanted.end());
  const auto& jobs = files.files;
  // Each file on its own (entries are megabytes of pickle, a few of them wanted), on a few
  // threads; merged in listing order so the result does not depend on the threads.
  std::vector<model::CompiledCode> parts(jobs.size());
  size_t threads = std::min<size_t>(jobs.size(), std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8));
  if (threads <= 1) {
    for (size_t i = 0; i < jobs.size(); ++i) parts[i] = readCompiledFile(jobs[i], want);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < jobs.size();) parts[i] = readCompiledFile(jobs[i], want);
      });
    for (auto& t : pool) t.join();
  }
  for (auto& part : parts) mergeCompiledCode(out, std::move(part));
  keepModules(out, wanted);
  return out;
}

void mergeCompiledCode(model::CompiledCode& into, model::CompiledCode from) {
  for (auto& s : from.sources)
    if (std::find(into.sources.begin(), into.sources.end(), s) == into.sources.end()) into.sources.push_back(s);
  into.warnings.insert(into.warnings.end(), from.warnings.begin(), from.warnings.end());
  for (auto& m : from.modules) addModule(into, std::move(m));
  into.compiles.insert(into.compiles.end(), from.compiles.begin(), from.compiles.end());
  into.graph_breaks.insert(into.graph_breaks.end(), from.graph_breaks.begin(), from.graph_breaks.end());
  std::sort(into.modules.begin(), into.modules.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

void keepModules(model::CompiledCode& code, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return;
  std::set<std::string> want(wanted.begin(), wanted.end());
  std::erase_if(code.modules, [&](const model::CompiledModule& m) { return !want.count(m.name); });
}

model::CompiledCode readCompiledCode(const std::vector<std::string>& folders, const std::vector<std::string>& wanted) {
  return readCompiledFiles(listCompiledCode(folders), wanted);
}

}  // namespace sightline::ingest
