// A small JSON scanner over one in-memory block (internal to analysis/ingest): every function
// returns a Status, and Short means the unit ran past the block (the caller refills and retries
// the whole unit). Strings are views into the block or into a scratch string.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace sightline::ingest::kineto {

enum class Status { Ok, Short, Bad };

struct Cursor {
  const char* p;
  const char* end;
};

inline bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline Status skipSpace(Cursor& c) {
  while (c.p < c.end && isSpace(*c.p)) ++c.p;
  return c.p < c.end ? Status::Ok : Status::Short;
}

inline Status expect(Cursor& c, char ch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (*c.p != ch) return Status::Bad;
  ++c.p;
  return Status::Ok;
}

// The first '"' or '\\' in [s, end), or nullptr: sixteen bytes at a time where SSE2 is there
// (every x86-64), so long names cost a compare per block and short ones no call.
inline const char* quoteOrBackslash(const char* s, const char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  while (end - s >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
    if (mask != 0) return s + __builtin_ctz(static_cast<unsigned>(mask));
    s += 16;
  }
#endif
  for (; s < end; ++s)
    if (*s == '"' || *s == '\\') return s;
  return nullptr;
}

// A string without escapes, inline (object keys, the scanner's commonest string); false leaves
// the cursor where it was for parseString.
inline bool plainString(Cursor& c, std::string_view& out) {
  if (c.p >= c.end || *c.p != '"') return false;
  const char* q = quoteOrBackslash(c.p + 1, c.end);
  if (!q || *q != '"') return false;
  out = std::string_view(c.p + 1, static_cast<size_t>(q - c.p - 1));
  c.p = q + 1;
  return true;
}

// A string value: a view into the block when it has no escapes, else decoded into `scratch`.
Status parseStringSlow(Cursor& c, std::string_view& out, std::string& scratch);
inline Status parseString(Cursor& c, std::string_view& out, std::string& scratch) {
  if (skipSpace(c) != Status::Ok) return Status::Short;
  if (plainString(c, out)) return Status::Ok;
  return parseStringSlow(c, out, scratch);
}
// Skips any value: string, number, literal, object or array.
Status skipValue(Cursor& c);
// The text of a scalar (number or literal) value.
Status scalarText(Cursor& c, std::string_view& out);
// An integer, from a number ("12", "12.0", huge values saturate) or from the digits of a string
// ("25738", "stream 7"); `null`, "" and other strings give `missing`.
Status parseInteger(Cursor& c, int64_t& out, std::string& scratch, int64_t missing = -1);
// A number of microseconds as integer ns (`ok` false when it is not one).
Status parseMicros(Cursor& c, int64_t& ns, bool& ok);
// [x, y, z] of integers.
Status parseTriple(Cursor& c, std::array<uint32_t, 3>& out, std::string& scratch);

// The elements of the array at the cursor: `element()` parses each one.
template <class F>
Status forEachElement(Cursor& c, F&& element) {
  if (Status s = expect(c, '['); s != Status::Ok) return s;
  for (;;) {
    if (skipSpace(c) != Status::Ok) return Status::Short;
    if (*c.p == ']') {
      ++c.p;
      return Status::Ok;
    }
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    if (Status s = element(); s != Status::Ok) return s;
  }
}

// The members of the object at the cursor: `member(key)` parses each value.
template <class F>
Status forEachMember(Cursor& c, F&& member) {
  if (Status s = expect(c, '{'); s != Status::Ok) return s;
  std::string key_scratch;
  for (;;) {
    if (skipSpace(c) != Status::Ok) return Status::Short;
    if (*c.p == '}') {
      ++c.p;
      return Status::Ok;
    }
    if (*c.p == ',') {
      ++c.p;
      continue;
    }
    std::string_view key;
    if (Status s = parseString(c, key, key_scratch); s != Status::Ok) return s;
    if (Status s = expect(c, ':'); s != Status::Ok) return s;
    if (Status s = member(key); s != Status::Ok) return s;
  }
}

// Compares a key with a string literal.
template <size_t N>
inline bool keyIs(std::string_view key, const char (&lit)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), lit, N - 1) == 0;
}

}  // namespace sightline::ingest::kineto
