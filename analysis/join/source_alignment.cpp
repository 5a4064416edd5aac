// Shifts scored by the profile's function names and the lines its costs fall on.
#include "analysis/join/source_alignment.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <tuple>
#include <unordered_map>

namespace sightline::join {

bool isCodeLine(const source::SourceFile& file, int32_t line) {
  if (line < 1 || static_cast<uint32_t>(line) > file.lines().lineCount()) return false;
  auto r = file.lines().lineRange(static_cast<uint32_t>(line - 1));
  std::string_view text(file.text().data() + r.begin, r.end - r.begin);
  size_t first = text.find_first_not_of(" \t\r");
  return first != std::string_view::npos && text[first] != '#';
}

namespace {

constexpr int32_t kMaxDelta = 200;    // lines added or removed above the code
constexpr size_t kMaxAnchors = 4000;  // checked, evenly sampled

// Per function name, the line ranges (1-based, decorators included) of its defs; module level is
// every code line outside all defs.
class Defs {
 public:
  Defs(const source::SourceFile& file, const source::SourceIndex& index) : file_(file) {
    inside_.assign(file.lines().lineCount() + 2, false);
    for (const auto& f : index.functions) {
      auto first = static_cast<int32_t>(f.def_line) + 1, last = static_cast<int32_t>(f.end_line) + 1;
      while (first > 1 && startsWith(first - 1, '@')) --first;
      by_name_[f.name].emplace_back(first, last, static_cast<int32_t>(f.def_line) + 1);
      for (int32_t l = first + 1; l <= last && static_cast<size_t>(l) < inside_.size(); ++l) inside_[l] = true;
    }
  }
  // Whether a frame of `function` at `line` fits the file: 0 no, 1 inside a def of its name (or
  // at module level), 2 on that def's first or last line (a traced call's def line, a `return`
  // run at the end: where a block of lines moved, these pin the shift among the ones that fit).
  int fits(const std::string& function, int32_t line) const {
    if (line < 1 || static_cast<size_t>(line) >= inside_.size() || !isCodeLine(file_, line)) return 0;
    if (function == "<module>") return inside_[static_cast<size_t>(line)] ? 0 : 1;
    auto it = by_name_.find(function);
    if (it == by_name_.end()) return 0;
    int best = 0;
    for (const auto& [first, last, def] : it->second)
      if (first <= line && line <= last) best = std::max(best, line == def || line == last ? 2 : 1);
    return best;
  }
  bool known(const std::string& function) const { return function == "<module>" || by_name_.count(function); }

 private:
  bool startsWith(int32_t line, char c) const {
    auto r = file_.lines().lineRange(static_cast<uint32_t>(line - 1));
    std::string_view text(file_.text().data() + r.begin, r.end - r.begin);
    size_t first = text.find_first_not_of(" \t");
    return first != std::string_view::npos && text[first] == c;
  }
  const source::SourceFile& file_;
  std::unordered_map<std::string, std::vector<std::tuple<int32_t, int32_t, int32_t>>> by_name_;  // first, last, def
  std::vector<bool> inside_;  // per 1-based line: inside a def's body
};

// Words of the operators a line ran (`aten::batch_norm` -> batch, norm; `aten::conv2d` ->
// conv2d), three letters or more.
std::vector<std::string> opWords(const attribution::LineCost& c, const model::Profile& profile) {
  std::vector<std::string> words;
  for (const auto& [op, count] : c.autograd_ops) {
    std::string name(profile.strings[op]);
    if (size_t colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
    std::string word;
    for (char ch : name + "_") {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      } else {
        if (word.size() >= 3) words.push_back(word);
        word.clear();
      }
    }
  }
  return words;
}

// Whether a line's text names one of the operators it ran (`self.conv(x)` for conv2d, `F.relu`
// for relu): identifiers of three letters or more that an operator's word starts with.
bool namesAnOp(const source::SourceFile& file, int32_t line, const std::vector<std::string>& words) {
  if (words.empty() || line < 1 || static_cast<uint32_t>(line) > file.lines().lineCount()) return false;
  auto r = file.lines().lineRange(static_cast<uint32_t>(line - 1));
  std::string text(file.text().data() + r.begin, r.end - r.begin);
  std::string ident;
  for (char ch : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      ident += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      continue;
    }
    if (ident.size() >= 3)
      for (const auto& w : words)
        if (w.starts_with(ident) || ident.starts_with(w)) return true;
    ident.clear();
  }
  return false;
}

bool checkable(const std::string& function) {
  if (function.starts_with("torch_dynamo_resume_in_")) return false;
  return !function.empty() && (function[0] != '<' || function == "<module>");
}

}  // namespace

SourceShift findSourceShift(const source::SourceFile& file, const source::SourceIndex& index,
                            const std::vector<FunctionAnchor>& anchors, const model::Profile& profile,
                            const std::map<int32_t, attribution::LineCost>& costs) {
  SourceShift out;
  Defs defs(file, index);
  // The pairs of functions this file defines (or its module level), evenly sampled.
  std::vector<std::pair<const std::string*, int32_t>> pairs;
  for (const auto& a : anchors) {
    const std::string& f = profile.strings[a.function];
    if (checkable(f) && defs.known(f)) pairs.emplace_back(&f, a.line);
  }
  if (pairs.size() > kMaxAnchors) {
    std::vector<std::pair<const std::string*, int32_t>> sampled;
    for (size_t i = 0; i < kMaxAnchors; ++i) sampled.push_back(pairs[i * pairs.size() / kMaxAnchors]);
    pairs = std::move(sampled);
  }
  std::vector<int32_t> costed;
  std::vector<std::pair<int32_t, std::vector<std::string>>> with_ops;  // lines and the words of their operators
  for (const auto& [line, c] : costs) {
    if (c.gpu_ns > 0 || c.oneoff_ns > 0 || c.idle_ns > 0 || c.sync_ns > 0 || c.memory_peak_bytes > 0)
      costed.push_back(line);
    if (auto words = opWords(c, profile); !words.empty()) with_ops.emplace_back(line, std::move(words));
  }
  out.anchors = pairs.size(), out.costed = costed.size();
  auto score = [&](int32_t d, size_t& matched, size_t& on_code) {
    matched = on_code = 0;
    size_t pinned = 0;
    for (const auto& [f, line] : pairs) {
      int fit = defs.fits(*f, line + d);
      matched += fit > 0 ? 1 : 0;
      pinned += fit == 2 ? 1 : 0;
    }
    for (int32_t line : costed) on_code += isCodeLine(file, line + d) ? 1 : 0;
    size_t named = 0;
    for (const auto& [line, words] : with_ops) named += namesAnOp(file, line + d, words) ? 1 : 0;
    // Fitting first, then costs on code, then lines naming their operators, then the pairs on a
    // def's first or last line.
    size_t p = pairs.size() + 1, o = with_ops.size() + 1;
    return p * o * (costed.size() + 1) * matched + p * o * on_code + p * named + pinned;
  };
  size_t matched0 = 0, code0 = 0;
  size_t best_score = score(0, matched0, code0);
  out.matched_before = out.matched_after = matched0;
  out.on_code_before = out.on_code_after = code0;
  // Where it is, some pairs fall outside their functions (two, and a thirtieth of them) or a cost
  // on a line without code.
  size_t misfits0 = pairs.size() - matched0;
  bool differs = (misfits0 >= 2 && 30 * misfits0 >= pairs.size()) || code0 < costed.size();
  if (!differs || (pairs.empty() && costed.empty())) return out;
  int32_t best = 0;
  for (int32_t d = -kMaxDelta; d <= kMaxDelta; ++d) {
    if (d == 0) continue;
    size_t matched = 0, on_code = 0;
    size_t s = score(d, matched, on_code);
    if (s > best_score || (s == best_score && best != 0 && std::abs(d) < std::abs(best))) {
      best_score = s, best = d;
      out.matched_after = matched, out.on_code_after = on_code;
    }
  }
  // Only a shift that explains the file: (nearly) every pair fits, every cost on code.
  if (best == 0 || 100 * (pairs.size() - out.matched_after) > pairs.size() || out.on_code_after < costed.size() ||
      out.matched_after + out.on_code_after <= matched0 + code0) {
    out.matched_after = matched0, out.on_code_after = code0;
    return out;
  }
  out.delta = best;
  return out;
}

}  // namespace sightline::join
