// JSON-RPC 2.0 as LSP uses it: ids, error codes, message classification and builders.
// Works on already-parsed JSON values; framing and IO are the server's.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace sightline::protocol {

using RequestId = std::variant<int64_t, std::string>;
nlohmann::json toJson(const RequestId& id);
std::string describe(const RequestId& id);

enum class ErrorCode : int {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
  ServerNotInitialized = -32002,
  UnknownErrorCode = -32001,
  RequestFailed = -32803,
  ServerCancelled = -32802,
  ContentModified = -32801,
  RequestCancelled = -32800,
};

struct ResponseError {
  ErrorCode code = ErrorCode::InternalError;
  std::string message;
};

struct Message {
  enum class Kind { Request, Notification, Response };
  Kind kind = Kind::Notification;
  std::optional<RequestId> id;         // requests and responses
  std::string method;                  // requests and notifications
  nlohmann::json params;               // null when absent
  nlohmann::json result;               // responses
  std::optional<ResponseError> error;  // error responses
};

struct InvalidMessage {
  std::optional<RequestId> id;  // when the message had a usable id
  std::string reason;
};

// Sorts a JSON value into request / notification / response, or says why it is none.
std::variant<Message, InvalidMessage> classifyMessage(const nlohmann::json& value);

nlohmann::json makeResponse(const RequestId& id, nlohmann::json result);
// `id` is null in the response when the request's id could not be read (per JSON-RPC).
nlohmann::json makeErrorResponse(const std::optional<RequestId>& id, const ResponseError& error);
nlohmann::json makeNotification(const std::string& method, nlohmann::json params);
nlohmann::json makeRequest(const RequestId& id, const std::string& method, nlohmann::json params);

}  // namespace sightline::protocol
