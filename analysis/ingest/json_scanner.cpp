// The JSON scanner.
#include "analysis/ingest/json_scanner.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "analysis/ingest/kineto_reader.h"

namespace sightline::ingest::kineto {
namespace {

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hexValue(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

// The end of the string whose opening quote is at c.p: the position after its closing quote.
// One pass: a backslash escapes the character after it, whatever it is.
inline Status stringEnd(Cursor& c, bool& escaped) {
  const char* s = c.p + 1;
  escaped = false;
  for (;;) {
    const char* q = quoteOrBackslash(s, c.end);
    if (!q) return Status::Short;
    if (*q == '"') {
      c.p = q + 1;
      return Status::Ok;
    }
    escaped = true;
    if (c.end - q < 2) return Status::Short;
    s = q + 2;
  }
}

// Characters that end a number or literal: , } ] and whitespace.
constexpr std::array<bool, 256> kScalarEnd = [] {
  std::array<bool, 256> t{};
  for (unsigned char ch : {',', '}', ']', ' ', '\n', '\r', '\t'}) t[ch] = true;
  return t;
}();

inline const char* scalarEnd(const char* p, const char* end) {
  while (p < end && !kScalarEnd[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

}  // namespace

Status parseStringSlow(Cursor& c, std::string_view& out, std::string& scratch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != '"') return Status::Bad;
  const char* begin = c.p + 1;
  bool escaped = false;
  if (Status s = stringEnd(c, escaped); s != Status::Ok) return s;
  const char* last = c.p - 1;  // the closing quote
  if (!escaped) {
    out = std::string_view(begin, static_cast<size_t>(last - begin));
    return Status::Ok;
  }
  scratch.clear();
  for (const char* p = begin; p < last; ++p) {
    if (*p != '\\') {
      scratch += *p;
      continue;
    }
    if (++p >= last) return Status::Bad;
    switch (*p) {
      case 'n':
        scratch += '\n';
        break;
      case 't':
        scratch += '\t';
        break;
      case 'r':
        scratch += '\r';
        break;
      case 'b':
        scratch += '\b';
        break;
      case 'f':
        scratch += '\f';
        break;
      case 'u': {
        if (last - p < 5) return Status::Bad;
        uint32_t cp = 0;
        for (int i = 1; i <= 4; ++i) {
          int h = hexValue(p[i]);
          if (h < 0) return Status::Bad;
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && last - p >= 7 && p[1] == '\\' && p[2] == 'u') {
          uint32_t lo = 0;
          bool ok = true;
          for (int i = 3; i <= 6; ++i) {
            int h = hexValue(p[i]);
            ok = ok && h >= 0;
            lo = lo * 16 + static_cast<uint32_t>(std::max(h, 0));
          }
          if (ok && lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
          }
        }
        appendUtf8(scratch, cp);
        break;
      }
      default:  // \" \\ \/ and anything else: the character itself
        scratch += *p;
    }
  }
  out = scratch;
  return Status::Ok;
}

Status skipValue(Cursor& c) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  char first = *c.p;
  if (first == '"') {
    bool escaped;
    return stringEnd(c, escaped);
  }
  if (first == '{' || first == '[') {
    int depth = 0;
    while (c.p < c.end) {
      char ch = *c.p;
      if (ch == '"') {
        bool escaped;
        if (Status s = stringEnd(c, escaped); s != Status::Ok) return s;
        continue;
      }
      if (ch == '{' || ch == '[') {
        ++depth;
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) {
          ++c.p;
          return Status::Ok;
        }
      }
      ++c.p;
    }
    return Status::Short;
  }
  // Number or literal: up to the next delimiter.
  const char* start = c.p;
  c.p = scalarEnd(c.p, c.end);
  if (c.p == c.end) return Status::Short;
  return c.p > start ? Status::Ok : Status::Bad;
}

Status scalarText(Cursor& c, std::string_view& out) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  const char* start = c.p;
  c.p = scalarEnd(c.p, c.end);
  if (c.p == c.end) return Status::Short;
  out = std::string_view(start, static_cast<size_t>(c.p - start));
  return out.empty() ? Status::Bad : Status::Ok;
}

Status parseInteger(Cursor& c, int64_t& out, std::string& scratch, int64_t missing) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  // The common case first: plain digits up to a delimiter, read in place.
  {
    const char* p = c.p;
    uint64_t v = 0;
    int digits = 0;
    while (p < c.end && *p >= '0' && *p <= '9' && digits < 18) {
      v = v * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
      ++digits;
    }
    if (digits > 0 && p < c.end && kScalarEnd[static_cast<unsigned char>(*p)]) {
      out = static_cast<int64_t>(v);
      c.p = p;
      return Status::Ok;
    }
  }
  std::string_view text;
  if (*c.p == '"') {
    if (Status s = parseString(c, text, scratch); s != Status::Ok) return s;
    auto digit = std::find_if(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    text = text.substr(static_cast<size_t>(digit - text.begin()));
  } else if (Status s = scalarText(c, text); s != Status::Ok) {
    return s;
  }
  bool negative = !text.empty() && text[0] == '-';
  size_t i = negative ? 1 : 0;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') {
    out = missing;
    return Status::Ok;
  }
  uint64_t v = 0;
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) v = v > kMax / 10 ? kMax : v * 10 + (text[i] - '0');
  v = std::min(v, kMax);
  out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return Status::Ok;
}

Status parseMicros(Cursor& c, int64_t& ns, bool& ok) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  // The common case first: "123456.789" (up to 15 digits, up to 3 decimals) read in place.
  {
    const char* p = c.p;
    uint64_t whole = 0;
    int digits = 0;
    while (p < c.end && *p >= '0' && *p <= '9' && digits < 15) {
      whole = whole * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
      ++digits;
    }
    int64_t frac = 0;
    if (digits > 0 && p < c.end && *p == '.') {
      ++p;
      int places = 0;
      while (p < c.end && *p >= '0' && *p <= '9' && places < 3) {
        frac = frac * 10 + (*p - '0');
        ++p;
        ++places;
      }
      if (places == 0) digits = 0;  // "12." : the slow path decides
      for (; places < 3; ++places) frac *= 10;
    }
    if (digits > 0 && p < c.end && kScalarEnd[static_cast<unsigned char>(*p)]) {
      ns = static_cast<int64_t>(whole) * 1000 + frac;
      ok = true;
      c.p = p;
      return Status::Ok;
    }
  }
  std::string_view text;
  if (Status s = scalarText(c, text); s != Status::Ok) return s;
  auto v = microsToNs(text);
  ok = v.has_value();
  if (ok) ns = *v;
  return Status::Ok;
}

Status parseTriple(Cursor& c, std::array<uint32_t, 3>& out, std::string& scratch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != '[') return skipValue(c);
  size_t i = 0;
  return forEachElement(c, [&] {
    int64_t v = 0;
    Status s = parseInteger(c, v, scratch, 0);
    if (s == Status::Ok && i < 3) out[i] = static_cast<uint32_t>(std::clamp<int64_t>(v, 0, UINT32_MAX));
    ++i;
    return s;
  });
}

}  // namespace sightline::ingest::kineto
