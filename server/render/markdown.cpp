// Escaping of profile text where Markdown is made.
#include "server/render/markdown.h"

#include <algorithm>
#include <cctype>

namespace sightline::server::md {
namespace {

// Control characters and line ends as spaces: one line, nothing a terminal or renderer acts on.
std::string oneLine(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

size_t longestBacktickRun(std::string_view s) {
  size_t longest = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

bool punctuation(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

// Whether the character at `i` of `s` may start markup: everywhere the marks of emphasis, links,
// images, HTML, tables and headings; an autolink's "://" and "www."; at the start any mark (a
// list, a heading, a rule). Dots, colons and the rest stay as they are: "model.py:27".
bool needsEscape(std::string_view s, size_t i) {
  char c = s[i];
  if (!punctuation(c)) return false;
  if (i == 0) return true;
  // Between two letters or digits `_` neither opens nor closes emphasis: "train_gpt.py".
  auto alnum = [](char x) { return std::isalnum(static_cast<unsigned char>(x)) != 0; };
  if (c == '_' && i + 1 < s.size() && alnum(s[i - 1]) && alnum(s[i + 1])) return false;
  static constexpr std::string_view kAlways = "\\`*_[]<>!|~#{}@";
  if (kAlways.find(c) != std::string_view::npos) return true;
  if (c == ':') return s.substr(i + 1, 2) == "//";
  if (c == '.' && i >= 3) {
    std::string_view www = s.substr(i - 3, 3);
    return (www[0] | 0x20) == 'w' && (www[1] | 0x20) == 'w' && (www[2] | 0x20) == 'w';
  }
  return false;
}

size_t runAt(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && s[j] == '`') ++j;
  return j - i;
}

}  // namespace

std::string code(std::string_view text) {
  std::string body = oneLine(text);
  std::string fence(longestBacktickRun(body) + 1, '`');
  // A span that starts or ends with a backtick (or is all spaces) needs a space inside its fence.
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`' || body.front() == ' ');
  if (body.empty()) body = " ";
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string cell(std::string_view text) {
  std::string span = code(text);
  std::string out;
  for (char c : span) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string text(std::string_view text) {
  std::string s = oneLine(text);
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '`') {
      // A code span: this run of backticks up to the next run of the same length.
      size_t n = runAt(s, i);
      size_t j = i + n;
      size_t close = std::string::npos;
      while (j < s.size()) {
        if (s[j] != '`') {
          ++j;
          continue;
        }
        size_t m = runAt(s, j);
        if (m == n) {
          close = j;
          break;
        }
        j += m;
      }
      if (close == std::string::npos) {
        for (size_t k = 0; k < n; ++k) out += "\\`";
        i += n;
        continue;
      }
      // Inside a table a `|` still splits the row: escaped, which GFM reads back as `|`.
      for (size_t k = i; k < close + n; ++k) {
        if (s[k] == '|') out += '\\';
        out += s[k];
      }
      i = close + n;
      continue;
    }
    if (needsEscape(s, i)) out += '\\';
    out += s[i];
    ++i;
  }
  return out;
}

std::string link(std::string_view label, std::string_view uri) {
  return "[" + text(label) + "](" + std::string(uri) + ")";
}

}  // namespace sightline::server::md
