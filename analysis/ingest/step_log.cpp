// Step times from a training log: each line read by the first family of trainer output it
// matches; the family with the most lines gives the step.
#include "analysis/ingest/step_log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <string>

namespace sightline::ingest {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

// A progress counter "N/M" (`[ 10/5005]`, `200/ 2983 batches`, `450/1000 [`): N, or -1.
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
      ++set_aside_;
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
    if (r->ns <= 0 || r->ns >= 1e13) return;
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
      if (&f != best) out.set_aside += static_cast<int>(f.readings.size());
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
      r.weight = runtime ? std::max<int64_t>(1, std::llround(*runtime * *rate)) : 1;
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

StepLog parseStepLog(std::string_view text) {
  Parser parser;
  size_t start = 0;
  while (start < text.size()) {
    // tqdm redraws its bar with carriage returns: each is a line of its own.
    size_t end = text.find_first_of("\r\n", start);
    if (end == std::string_view::npos) end = text.size();
    if (end - start < 4096) {  // a line of a training log, not a dump
      std::string_view raw = text.substr(start, end - start);
      parser.line(lower(raw), raw);
    }
    start = end + 1;
  }
  return parser.result();
}

}  // namespace sightline::ingest
