// Step times from a training log: each line read by the first family of trainer output it
// matches; the family with the most lines gives the step.
#include "analysis/ingest/step_log.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace sightline::ingest {
namespace {

// A reading of this many ns or more is no training step's (about 2.8 hours).
constexpr double kMaxReadingNs = 1e13;

// ASCII lower case (what std::tolower does in the C locale), into a buffer kept across lines.
void lowerInto(std::string_view s, std::string& out) {
  out.resize(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] + 32) : s[i];
}

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool isWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool contains(const std::string& line, std::string_view what) { return line.find(what) != std::string::npos; }

// The number starting at or after `i` (spaces, ':', '=' and a quote skipped; thousands commas
// read through), and where it ends; nullopt when none starts there.
std::optional<double> numberAt(const std::string& line, size_t& i) {
  while (i < line.size() &&
         (line[i] == ' ' || line[i] == '\t' || line[i] == ':' || line[i] == '=' || line[i] == '\'' || line[i] == '"'))
    ++i;
  size_t begin = i;
  std::string digits;
  while (i < line.size() &&
         (isDigit(line[i]) || line[i] == '.' ||
          (line[i] == ',' && i > begin && i + 1 < line.size() && isDigit(line[i + 1]) && isDigit(line[i - 1])))) {
    if (line[i] != ',') digits += line[i];
    ++i;
  }
  if (digits.empty() || digits == ".") return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The value after `key` where the key stands as a word of its own.
std::optional<double> valueAfter(const std::string& line, std::string_view key, size_t* after = nullptr) {
  for (size_t at = line.find(key); at != std::string::npos; at = line.find(key, at + 1)) {
    size_t end = at + key.size();
    if (at > 0 && isWordChar(line[at - 1]) && isWordChar(key.front())) continue;
    if (end < line.size() && isWordChar(line[end]) && isWordChar(key.back())) continue;
    size_t i = end;
    if (auto v = numberAt(line, i)) {
      if (after) *after = i;
      return v;
    }
  }
  return std::nullopt;
}

// A progress counter "N/M" (`[ 10/5005]`, `200/ 2983 batches`, `450/1000 [`): N, or -1. A
// number of more than 12 digits counts no steps (an id, a hash): it is not one.
int64_t counterIn(const std::string& line) {
  for (size_t slash = line.find('/'); slash != std::string::npos; slash = line.find('/', slash + 1)) {
    size_t a = slash;
    while (a > 0 && line[a - 1] == ' ') --a;
    size_t digits_end = a;
    while (a > 0 && isDigit(line[a - 1])) --a;
    size_t b = slash + 1;
    while (b < line.size() && line[b] == ' ') ++b;
    if (a == digits_end || b >= line.size() || !isDigit(line[b])) continue;
    if (a > 0 && (line[a - 1] == '/' || line[a - 1] == '-' || line[a - 1] == '.')) continue;  // a date, a path
    if (digits_end - a > 12) continue;
    return std::strtoll(line.substr(a, digits_end - a).c_str(), nullptr, 10);
  }
  return -1;
}

// ns per unit written after a time ("ms", "s", "us"); 0 when none.
double unitAt(const std::string& line, size_t i) {
  while (i < line.size() && line[i] == ' ') ++i;
  std::string_view rest = std::string_view(line).substr(i);
  if (rest.starts_with("ms")) return 1e6;
  if (rest.starts_with("us") || rest.starts_with("µs")) return 1e3;
  if (rest.starts_with("sec")) return 1e9;
  if (rest.starts_with("s") && (rest.size() == 1 || !std::isalpha(static_cast<unsigned char>(rest[1])))) return 1e9;
  return 0;
}

bool isEvaluation(const std::string& line) {
  for (const char* word : {"test:", "valid", "eval", "predict", "sanity checking"})
    if (contains(line, word)) return true;
  return false;
}

bool namesIteration(const std::string& line) {
  for (const char* word : {"iter", "step", "batch", "it "})
    if (contains(line, word)) return true;
  return counterIn(line) >= 0;
}

// One line's reading: its family, ns per step, the steps it stands for (0: say from its counter).
struct Reading {
  StepLogKind kind = StepLogKind::None;
  std::string family;
  double ns = 0;
  int64_t counter = -1;  // a progress counter on the line, for the steps an average covers
  int64_t weight = 1;
};

class Parser {
 public:
  // Lines come in order; `raw` as written.
  void line(const std::string& l, std::string_view raw) {
    if (auto b = valueAfter(l, "local batch size")) batch_ = *b;
    if (auto s = valueAfter(l, "sequence length")) seq_ = *s;
    auto r = read(l);
    if (!r) return;
    if (r->kind == StepLogKind::None) {
      set_aside_ += set_aside_ < INT_MAX ? 1 : 0;  // a log of billions of lines counts on no further
      return;
    }
    auto& f = families_[r->family];
    f.kind = r->kind;
    if (r->kind == StepLogKind::Averaged) {
      // The mean of the steps since this bar's or list's last line.
      int64_t steps = r->counter > f.last_counter && f.last_counter >= 0 ? r->counter - f.last_counter
                      : r->counter > 0                                   ? r->counter
                                                                         : 1;
      f.last_counter = r->counter;
      r->weight = steps;
    }
    r->weight = std::clamp<int64_t>(r->weight, 1, kMaxStepsPerLine);
    if (r->ns <= 0 || r->ns >= kMaxReadingNs || f.readings.size() >= kMaxStepLogLines) return;
    if (f.readings.empty()) f.first = std::string(raw.substr(0, 300));
    f.readings.push_back({r->ns, r->weight});
  }

  StepLog result() const {
    StepLog out;
    out.set_aside = set_aside_;
    // The family with the most lines; a per-step one before averages, averages before totals.
    const Family* best = nullptr;
    std::string best_name;
    auto rank = [](StepLogKind k) {
      return k == StepLogKind::PerStep ? 3 : k == StepLogKind::Averaged ? 2 : k == StepLogKind::Throughput ? 1 : 0;
    };
    for (const auto& [name, f] : families_) {
      if (f.readings.empty()) continue;
      if (!best || std::pair(rank(f.kind), f.readings.size()) > std::pair(rank(best->kind), best->readings.size()))
        best = &f, best_name = name;
    }
    if (!best) return out;
    for (const auto& [name, f] : families_)
      if (&f != best)
        out.set_aside =
            static_cast<int>(std::min<int64_t>(INT_MAX, int64_t{out.set_aside} + int64_t(f.readings.size())));
    out.kind = best->kind;
    out.format = best_name;
    out.first_line = best->first;
    // Unit-less per-step times: seconds where they are small (the ImageNet example's 0.220).
    std::vector<std::pair<double, int64_t>> values = best->readings;
    if (best->bare) {
      std::vector<double> v;
      for (const auto& [ns, w] : values) v.push_back(ns);
      std::sort(v.begin(), v.end());
      double unit = v[v.size() / 2] < 5 ? 1e9 : 1e6;
      for (auto& [ns, w] : values) ns *= unit;
    }
    // Under a nanosecond, or past the bound in its unit: no step's time (and no int64 holds it).
    std::erase_if(values, [](const auto& value) { return value.first < 1 || value.first >= kMaxReadingNs; });
    if (values.empty()) {
      StepLog none;
      none.set_aside = out.set_aside;
      return none;
    }
    for (const auto& [ns, w] : values) {
      out.steps_ns.push_back(static_cast<int64_t>(ns));
      out.weights.push_back(w);
    }
    // Warm-up: a tenth of per-step lines (at least the first of three or more), the first of
    // two or more averages (it holds the first steps).
    size_t skip = 0;
    if (best->kind == StepLogKind::PerStep)
      skip = std::max<size_t>(values.size() >= 3 ? 1 : 0, values.size() / 10);
    else if (best->kind == StepLogKind::Averaged || best->kind == StepLogKind::Throughput)
      skip = values.size() >= 2 ? 1 : 0;
    out.warmup_lines = static_cast<int>(skip);
    std::vector<std::pair<int64_t, int64_t>> steady;  // ns, weight
    for (size_t i = skip; i < values.size(); ++i) steady.emplace_back(out.steps_ns[i], out.weights[i]);
    if (steady.empty()) return out;
    std::sort(steady.begin(), steady.end());
    int64_t total = 0;
    for (const auto& [ns, w] : steady) total += w;
    // The weighted median; where it falls between two readings (an even count of equal
    // weights), the middle of the two, not the smaller.
    int64_t half = 0;
    for (size_t i = 0; i < steady.size(); ++i) {
      half += steady[i].second;
      if (2 * half < total) continue;
      out.median_ns = steady[i].first;
      if (2 * half == total && i + 1 < steady.size()) out.median_ns = (steady[i].first + steady[i + 1].first) / 2;
      break;
    }
    out.min_ns = steady.front().first, out.max_ns = steady.back().first;
    out.lines = static_cast<int>(steady.size());
    out.steps = total;
    return out;
  }

 private:
  struct Family {
    StepLogKind kind = StepLogKind::None;
    bool bare = false;  // times written without a unit
    int64_t last_counter = -1;
    std::string first;
    std::vector<std::pair<double, int64_t>> readings;  // ns (or bare value), steps
  };

  std::optional<Reading> read(const std::string& l) {
    // Hugging Face Trainer's summary of the whole run.
    if (auto rate = valueAfter(l, "train_steps_per_second"); rate && *rate > 0) {
      auto runtime = valueAfter(l, "train_runtime");
      Reading r{StepLogKind::WholeRun, "Hugging Face `train_steps_per_second` (the whole run)", 1e9 / *rate};
      double steps = runtime ? *runtime * *rate : 1;
      r.weight =
          steps < static_cast<double>(kMaxStepsPerLine) ? std::max<int64_t>(1, std::llround(steps)) : kMaxStepsPerLine;
      return r;
    }
    bool eval = isEvaluation(l);
    // torchtitan: tokens per second, and the tokens of a step from its start-up line.
    if (contains(l, "step:") && contains(l, "tps")) {
      auto tps = valueAfter(l, "tps");
      if (eval || !tps || *tps <= 0 || batch_ <= 0 || seq_ <= 0) return std::nullopt;
      return Reading{StepLogKind::Throughput, "torchtitan `tps` × local batch × sequence length",
                     1e9 * batch_ * seq_ / *tps};
    }
    // pytorch/examples: the mean of the batches since the last line.
    if (size_t at = l.find("ms/batch"); at != std::string::npos) {
      size_t i = at + 8;
      auto v = numberAt(l, i);
      if (!v) return std::nullopt;
      if (eval) return Reading{};
      Reading r{StepLogKind::Averaged, "`ms/batch` means", *v * 1e6};
      r.counter = counterIn(l.substr(0, at));
      return r;
    }
    // tqdm: `450/1000 [00:30<00:36, 15.00it/s]` (a smoothed rate).
    for (const char* unit : {"it/s", "s/it"}) {
      size_t at = l.find(unit);
      if (at == std::string::npos) continue;
      size_t b = at;
      while (b > 0 && (isDigit(l[b - 1]) || l[b - 1] == '.')) --b;
      if (b == at) continue;
      double rate = std::strtod(l.substr(b, at - b).c_str(), nullptr);
      int64_t counter = counterIn(l);
      if (!(rate > 0) || counter < 0) continue;
      if (eval) return Reading{};
      Reading r{StepLogKind::Averaged, "tqdm rates", unit[0] == 'i' ? 1e9 / rate : rate * 1e9};
      r.counter = counter;
      return r;
    }
    // `123.4 ms/step`, `0.12 s/iter`: one step's time by its unit.
    for (const char* unit : {"ms/step", "ms/iter", "s/step", "s/iter"}) {
      size_t at = l.find(unit);
      if (at == std::string::npos || (unit[0] == 's' && at > 0 && l[at - 1] == 'm')) continue;
      size_t b = at;
      while (b > 0 && l[b - 1] == ' ') --b;
      size_t e = b;
      while (b > 0 && (isDigit(l[b - 1]) || l[b - 1] == '.')) --b;
      if (b == e) continue;
      if (eval) return Reading{};
      double v = std::strtod(l.substr(b, e - b).c_str(), nullptr);
      return Reading{StepLogKind::PerStep, "per-step `time`", v * (unit[0] == 'm' ? 1e6 : 1e9)};
    }
    // A time on a line of one step.
    size_t after = 0;
    std::optional<double> t;
    for (const char* key : {"step_time", "iter_time", "batch_time", "time", "dt"})
      if ((t = valueAfter(l, key, &after))) break;
    if (!t) return trailingTime(l, eval);
    if (*t <= 0) return std::nullopt;
    // An epoch's or an evaluation's time is not a step's: set aside.
    if (eval || !namesIteration(l))
      return contains(l, "epoch") || eval ? std::optional<Reading>(Reading{}) : std::nullopt;
    double unit = unitAt(l, after);
    Reading r{StepLogKind::PerStep, unit > 0 ? "per-step `time`" : "per-step `time` (no unit)",
              *t * (unit > 0 ? unit : 1)};
    if (unit <= 0) families_[r.family].bare = true;
    return r;
  }

  // A step's line that ends in a time with its unit and no key (`step 7 loss 9.16 73.9 ms`, as
  // many small scripts print it): that time.
  static std::optional<Reading> trailingTime(const std::string& l, bool eval) {
    size_t end = l.size();
    while (end > 0 && std::isspace(static_cast<unsigned char>(l[end - 1]))) --end;
    size_t unit_at = end;
    while (unit_at > 0 && std::isalpha(static_cast<unsigned char>(l[unit_at - 1]))) --unit_at;
    std::string_view unit = std::string_view(l).substr(unit_at, end - unit_at);
    double scale = unit == "ms" ? 1e6 : unit == "s" || unit == "sec" ? 1e9 : 0;
    size_t num_end = unit_at;
    while (num_end > 0 && l[num_end - 1] == ' ') --num_end;
    size_t b = num_end;
    while (b > 0 && (isDigit(l[b - 1]) || l[b - 1] == '.')) --b;
    if (scale == 0 || b == num_end || (b > 0 && l[b - 1] != ' ')) return std::nullopt;
    bool steps = l.starts_with("step ") || l.starts_with("iter ") || l.starts_with("iteration ");
    if (!steps || contains(l, "epoch")) return std::nullopt;
    if (eval) return Reading{};
    double v = std::strtod(l.substr(b, num_end - b).c_str(), nullptr);
    if (!(v > 0)) return std::nullopt;
    return Reading{StepLogKind::PerStep, "per-step time at the line's end", v * scale};
  }

  std::map<std::string, Family> families_;
  double batch_ = 0, seq_ = 0;
  int set_aside_ = 0;
};

}  // namespace

const char* stepLogKindName(StepLogKind k) {
  switch (k) {
    case StepLogKind::None:
      return "none";
    case StepLogKind::PerStep:
      return "per-step";
    case StepLogKind::Averaged:
      return "averaged";
    case StepLogKind::WholeRun:
      return "whole-run";
    case StepLogKind::Throughput:
      return "throughput";
  }
  return "?";
}

// Bytes to lines: the encoding decided on the first four bytes, UTF-16 decoded to UTF-8, lines
// cut at "\r" and "\n" (tqdm redraws its bar with carriage returns: each is a line of its own),
// one line held at a time.
class StepLogReader::Impl {
 public:
  void feed(std::string_view bytes) {
    if (encoding_ == Encoding::Undecided) {
      size_t take = std::min(bytes.size(), 4 - head_.size());
      head_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (head_.size() < 4) return;
      decide();
      std::string head = std::move(head_);
      head_.clear();
      decode(std::string_view(head).substr(bom_));
    }
    if (!bytes.empty()) decode(bytes);
  }

  StepLog finish() {
    if (encoding_ == Encoding::Undecided) {
      decide();
      decode(std::string_view(head_).substr(std::min(bom_, head_.size())));
      head_.clear();
    }
    if (high_surrogate_) appendCodePoint(0xfffd);
    high_surrogate_ = 0;
    odd_byte_.reset();
    if (!line_.empty() && !too_long_) endLine();
    line_.clear();
    too_long_ = false;
    StepLog out = parser_.result();
    if (encoding_ == Encoding::Utf16Le || encoding_ == Encoding::Utf16Be) {
      out.encoding = encoding_ == Encoding::Utf16Le ? "UTF-16LE" : "UTF-16BE";
      if (!out.format.empty()) out.format += " (" + out.encoding + ")";
    }
    return out;
  }

 private:
  enum class Encoding : uint8_t { Undecided, Utf8, Utf16Le, Utf16Be };

  // On the first four bytes (fewer: a log that short): a byte-order mark, else UTF-16's zero
  // bytes around ASCII text.
  void decide() {
    auto at = [&](size_t i) { return i < head_.size() ? static_cast<unsigned char>(head_[i]) : 0x100u; };
    encoding_ = Encoding::Utf8;
    bom_ = 0;
    if (at(0) == 0xef && at(1) == 0xbb && at(2) == 0xbf) {
      bom_ = 3;
    } else if (at(0) == 0xff && at(1) == 0xfe) {
      encoding_ = Encoding::Utf16Le, bom_ = 2;
    } else if (at(0) == 0xfe && at(1) == 0xff) {
      encoding_ = Encoding::Utf16Be, bom_ = 2;
    } else if (head_.size() == 4 && at(0) != 0 && at(1) == 0 && at(2) != 0 && at(3) == 0) {
      encoding_ = Encoding::Utf16Le;
    } else if (head_.size() == 4 && at(0) == 0 && at(1) != 0 && at(2) == 0 && at(3) != 0) {
      encoding_ = Encoding::Utf16Be;
    }
  }

  void decode(std::string_view bytes) {
    if (encoding_ == Encoding::Utf8) {
      text(bytes);
      return;
    }
    bool little = encoding_ == Encoding::Utf16Le;
    auto unitOf = [little](unsigned char a, unsigned char b) {
      return little ? static_cast<uint32_t>(a | (b << 8)) : static_cast<uint32_t>((a << 8) | b);
    };
    size_t i = 0;
    if (odd_byte_ && !bytes.empty()) {
      unit(unitOf(*odd_byte_, static_cast<unsigned char>(bytes[0])));
      odd_byte_.reset();
      i = 1;
    }
    for (; i + 1 < bytes.size(); i += 2)
      unit(unitOf(static_cast<unsigned char>(bytes[i]), static_cast<unsigned char>(bytes[i + 1])));
    if (i < bytes.size()) odd_byte_ = static_cast<unsigned char>(bytes[i]);
    flushDecoded();
  }

  // One UTF-16 code unit: a surrogate pair joined, a lone surrogate U+FFFD.
  void unit(uint32_t u) {
    if (high_surrogate_) {
      uint32_t high = high_surrogate_;
      high_surrogate_ = 0;
      if (u >= 0xdc00 && u <= 0xdfff) {
        appendCodePoint(0x10000 + ((high - 0xd800) << 10) + (u - 0xdc00));
        return;
      }
      appendCodePoint(0xfffd);
    }
    if (u >= 0xd800 && u <= 0xdbff) {
      high_surrogate_ = u;
      return;
    }
    appendCodePoint(u >= 0xdc00 && u <= 0xdfff ? 0xfffd : u);
  }

  void appendCodePoint(uint32_t c) {
    if (c < 0x80) {
      decoded_ += static_cast<char>(c);
    } else if (c < 0x800) {
      decoded_ += static_cast<char>(0xc0 | (c >> 6));
      decoded_ += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      decoded_ += static_cast<char>(0xe0 | (c >> 12));
      decoded_ += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      decoded_ += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      decoded_ += static_cast<char>(0xf0 | (c >> 18));
      decoded_ += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      decoded_ += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      decoded_ += static_cast<char>(0x80 | (c & 0x3f));
    }
    if (decoded_.size() >= (1u << 16)) flushDecoded();
  }

  void flushDecoded() {
    std::string pieces = std::move(decoded_);
    decoded_.clear();
    text(pieces);
  }

  // UTF-8 text into lines; a line of kMaxStepLogLineBytes or more is skipped whole.
  void text(std::string_view bytes) {
    while (!bytes.empty()) {
      size_t end = bytes.find_first_of("\r\n");
      std::string_view piece = bytes.substr(0, end);
      if (!too_long_) {
        if (line_.size() + piece.size() >= kMaxStepLogLineBytes) {
          too_long_ = true;
          line_.clear();
        } else {
          line_.append(piece);
        }
      }
      if (end == std::string_view::npos) return;
      if (!too_long_) endLine();
      line_.clear();
      too_long_ = false;
      bytes.remove_prefix(end + 1);
    }
  }

  void endLine() {
    lowerInto(line_, lower_);
    parser_.line(lower_, line_);
  }

  Parser parser_;
  std::string lower_;  // the line in lower case
  Encoding encoding_ = Encoding::Undecided;
  std::string head_;                       // the first bytes, until four decide the encoding
  size_t bom_ = 0;                         // the byte-order mark's length
  std::optional<unsigned char> odd_byte_;  // UTF-16: the first byte of a unit the last piece cut
  uint32_t high_surrogate_ = 0;            // UTF-16: a high surrogate waiting for its low one
  std::string decoded_;                    // UTF-16 decoded, not yet cut into lines
  std::string line_;                       // the line read so far
  bool too_long_ = false;                  // the line is past kMaxStepLogLineBytes: skipped
};

StepLogReader::StepLogReader() : impl_(std::make_unique<Impl>()) {}
StepLogReader::~StepLogReader() = default;
void StepLogReader::feed(std::string_view bytes) { impl_->feed(bytes); }
StepLog StepLogReader::finish() { return impl_->finish(); }

StepLog parseStepLog(std::string_view text) {
  StepLogReader reader;
  reader.feed(text);
  return reader.finish();
}

}  // namespace sightline::ingest
