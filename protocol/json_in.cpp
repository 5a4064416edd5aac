// JsonIn implementation: every accessor checks the JSON type before reading it.
#include "protocol/json_in.h"

#include <algorithm>

#include <limits>

namespace sightline::protocol {

void JsonIn::fail(const std::string& message) const { throw detail::JsonInError{{path_, message}}; }

void JsonIn::requireObject() const {
  if (!value_.is_object()) fail("expected an object");
}

JsonIn JsonIn::field(const char* key) const {
  requireObject();
  auto it = value_.find(key);
  if (it == value_.end()) throw detail::JsonInError{{path_ + "." + key, "missing required field"}};
  return JsonIn(*it, path_ + "." + key);
}

std::optional<JsonIn> JsonIn::optionalField(const char* key) const {
  requireObject();
  auto it = value_.find(key);
  if (it == value_.end() || it->is_null()) return std::nullopt;
  return JsonIn(*it, path_ + "." + key);
}

std::vector<JsonIn> JsonIn::elements() const {
  if (!value_.is_array()) fail("expected an array");
  std::vector<JsonIn> out;
  out.reserve(value_.size());
  for (size_t i = 0; i < value_.size(); ++i) out.emplace_back(value_[i], path_ + "[" + std::to_string(i) + "]");
  return out;
}

std::string JsonIn::asString() const {
  if (!value_.is_string()) fail("expected a string");
  return value_.get<std::string>();
}

int64_t JsonIn::asInt() const {
  if (!value_.is_number_integer()) fail("expected an integer");
  return value_.get<int64_t>();
}

uint32_t JsonIn::asUInt() const {
  if (!value_.is_number_integer()) fail("expected an unsigned integer");
  if (value_.is_number_unsigned()) {
    auto v = value_.get<uint64_t>();
    if (v > std::numeric_limits<uint32_t>::max()) fail("integer out of range");
    return static_cast<uint32_t>(v);
  }
  auto v = value_.get<int64_t>();
  if (v < 0 || v > std::numeric_limits<uint32_t>::max()) fail("expected an unsigned integer");
  return static_cast<uint32_t>(v);
}

bool JsonIn::asBool() const {
  if (!value_.is_boolean()) fail("expected a boolean");
  return value_.get<bool>();
}

std::string dumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

size_t jsonNestingDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace sightline::protocol
