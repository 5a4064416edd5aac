// Result<T>: a value or an error message with the JSON path that failed. Parsing of protocol
// messages returns it instead of throwing across layers.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace sightline::protocol {

struct FieldError {
  std::string path;     // JSON path of the failing value: "params.textDocument.uri"
  std::string message;  // what was wrong: "expected a string"
  std::string describe() const { return path + ": " + message; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(FieldError error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const FieldError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, FieldError> v_;
};

}  // namespace sightline::protocol
