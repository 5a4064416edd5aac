// JSON-RPC dispatch: parses message bodies, enforces the LSP lifecycle, routes requests and
// notifications to handlers, answers errors with the right codes, tracks cancellations and
// the server's own requests to the client. Every handler runs inside one catch-all here.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include "protocol/json_in.h"
#include "protocol/jsonrpc.h"
#include "protocol/result.h"

namespace sightline::server {

// Thrown by handlers to answer a request with an error.
struct RequestError {
  protocol::ErrorCode code;
  std::string message;
};

// Parses params into T or throws InvalidParams naming the failing JSON path.
template <class T>
T parseParams(const nlohmann::json& params) {
  auto parsed = protocol::parse<T>(params, "params");
  if (!parsed) throw RequestError{protocol::ErrorCode::InvalidParams, parsed.error().describe()};
  return std::move(parsed.value());
}

// One parsed body, ready to dispatch (or the error to answer).
struct IncomingMessage {
  std::variant<protocol::Message, protocol::InvalidMessage> message;
  bool parse_error = false;
  std::string parse_error_text;
};

class Dispatcher {
 public:
  enum class State { Uninitialized, Initialized, ShutDown };
  using Send = std::function<void(const nlohmann::json&)>;
  using RequestHandler = std::function<nlohmann::json(const nlohmann::json& params)>;
  using NotificationHandler = std::function<void(const nlohmann::json& params)>;
  using ResponseHandler = std::function<void(const protocol::Message& response)>;

  explicit Dispatcher(Send send) : send_(std::move(send)) {}

  void onRequest(const std::string& method, RequestHandler handler) { requests_[method] = std::move(handler); }
  void onNotification(const std::string& method, NotificationHandler handler) {
    notifications_[method] = std::move(handler);
  }

  // Step 1, as bytes arrive: parse, remember request ids, and apply `$/cancelRequest` at once
  // so that a cancel read together with its request wins.
  IncomingMessage receive(const std::string& body);
  // Step 2, in order: run the handler (or answer the error).
  void dispatch(const IncomingMessage& incoming);

  void sendNotification(const std::string& method, nlohmann::json params);
  void sendRequest(const std::string& method, nlohmann::json params, ResponseHandler on_response);

  State state() const { return state_; }
  void setState(State state) { state_ = state; }

 private:
  void answer(const protocol::RequestId& id, const std::string& method, const nlohmann::json& params);

  Send send_;
  State state_ = State::Uninitialized;
  std::map<std::string, RequestHandler> requests_;
  std::map<std::string, NotificationHandler> notifications_;
  std::set<protocol::RequestId> pending_;    // received, not yet answered
  std::set<protocol::RequestId> cancelled_;  // pending ones the client cancelled
  std::map<protocol::RequestId, ResponseHandler> outgoing_;
  int64_t next_outgoing_id_ = 1;
};

}  // namespace sightline::server
