// JsonIn: reads fields out of an nlohmann::json value while tracking the JSON path, so that a
// type error reports "params.contentChanges[0].range.start.line: expected an unsigned integer".
// fromJson functions use it and throw; parse<T>() turns that into a Result at the boundary.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/result.h"

namespace sightline::protocol {

class JsonIn {
 public:
  JsonIn(const nlohmann::json& value, std::string path) : value_(value), path_(std::move(path)) {}

  const nlohmann::json& raw() const { return value_; }
  const std::string& path() const { return path_; }
  bool isNull() const { return value_.is_null(); }
  bool has(const char* key) const { return value_.is_object() && value_.contains(key) && !value_[key].is_null(); }

  JsonIn field(const char* key) const;  // required
  std::optional<JsonIn> optionalField(const char* key) const;
  std::vector<JsonIn> elements() const;  // requires an array
  std::string asString() const;
  int64_t asInt() const;
  uint32_t asUInt() const;
  bool asBool() const;
  void requireObject() const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  const nlohmann::json& value_;
  std::string path_;
};

namespace detail {
struct JsonInError {
  FieldError error;
};
}  // namespace detail

// Parses `json` into T with `fromJson(JsonIn, T&)`; errors name the path under `root`.
template <class T>
Result<T> parse(const nlohmann::json& json, const std::string& root = "params") {
  try {
    T out{};
    fromJson(JsonIn(json, root), out);
    return out;
  } catch (const detail::JsonInError& e) {
    return e.error;
  }
}

// Serializes without ever throwing on invalid UTF-8 (bad bytes become U+FFFD).
std::string dumpJson(const nlohmann::json& value);

// Messages nested deeper than this are rejected before they are parsed: nlohmann's parser and
// destructor recurse once per level, so 100,000 levels would overflow the stack.
inline constexpr size_t kMaxJsonDepth = 256;
// The deepest nesting of arrays and objects in `text` (brackets inside strings not counted).
size_t jsonNestingDepth(std::string_view text);

}  // namespace sightline::protocol
