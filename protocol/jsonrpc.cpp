// JSON-RPC classification and builders.
#include "protocol/jsonrpc.h"

#include <climits>

namespace sightline::protocol {
namespace {

std::optional<RequestId> readId(const nlohmann::json& v) {
  if (v.is_number_integer()) return RequestId{v.get<int64_t>()};
  if (v.is_string()) return RequestId{v.get<std::string>()};
  return std::nullopt;
}

}  // namespace

nlohmann::json toJson(const RequestId& id) {
  if (const auto* n = std::get_if<int64_t>(&id)) return *n;
  return std::get<std::string>(id);
}

std::string describe(const RequestId& id) {
  if (const auto* n = std::get_if<int64_t>(&id)) return std::to_string(*n);
  return "\"" + std::get<std::string>(id) + "\"";
}

std::variant<Message, InvalidMessage> classifyMessage(const nlohmann::json& v) {
  if (!v.is_object()) return InvalidMessage{std::nullopt, "a JSON-RPC message must be an object"};
  std::optional<RequestId> id;
  bool has_id = v.contains("id") && !v["id"].is_null();
  if (has_id) {
    id = readId(v["id"]);
    if (!id) return InvalidMessage{std::nullopt, "id must be an integer or a string"};
  }
  auto version = v.find("jsonrpc");
  if (version == v.end() || *version != "2.0") return InvalidMessage{id, "jsonrpc must be \"2.0\""};
  Message m;
  m.id = id;
  auto method = v.find("method");
  if (method != v.end()) {
    if (!method->is_string()) return InvalidMessage{id, "method must be a string"};
    m.method = method->get<std::string>();
    m.kind = has_id ? Message::Kind::Request : Message::Kind::Notification;
    auto params = v.find("params");
    if (params != v.end()) {
      if (!params->is_object() && !params->is_array() && !params->is_null())
        return InvalidMessage{id, "params must be an object or an array"};
      m.params = *params;
    }
    return m;
  }
  if (!has_id && !(v.contains("id") && v["id"].is_null()))
    return InvalidMessage{std::nullopt, "a message needs a method, or an id for a response"};
  m.kind = Message::Kind::Response;
  if (auto err = v.find("error"); err != v.end() && err->is_object()) {
    // A client's error may carry anything: only an integer code and a string message are read.
    ResponseError e;
    e.code = ErrorCode::UnknownErrorCode;
    if (auto code = err->find("code"); code != err->end() && code->is_number_integer() &&
                                       code->get<int64_t>() >= INT32_MIN && code->get<int64_t>() <= INT32_MAX)
      e.code = static_cast<ErrorCode>(code->get<int64_t>());
    if (auto message = err->find("message"); message != err->end() && message->is_string())
      e.message = message->get<std::string>();
    m.error = e;
  } else if (auto res = v.find("result"); res != v.end()) {
    m.result = *res;
  }
  return m;
}

nlohmann::json makeResponse(const RequestId& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", toJson(id)}, {"result", std::move(result)}};
}

nlohmann::json makeErrorResponse(const std::optional<RequestId>& id, const ResponseError& error) {
  return {{"jsonrpc", "2.0"},
          {"id", id ? toJson(*id) : nlohmann::json(nullptr)},
          {"error", {{"code", static_cast<int>(error.code)}, {"message", error.message}}}};
}

nlohmann::json makeNotification(const std::string& method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

nlohmann::json makeRequest(const RequestId& id, const std::string& method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"id", toJson(id)}, {"method", method}, {"params", std::move(params)}};
}

}  // namespace sightline::protocol
