// Dispatcher: lifecycle gates and error mapping per the LSP specification.
#include "server/lsp/dispatcher.h"

#include "protocol/json_in.h"
#include "protocol/lsp_types.h"
#include "server/platform/log.h"

namespace sightline::server {

using protocol::ErrorCode;

IncomingMessage Dispatcher::receive(const std::string& body) {
  IncomingMessage in;
  auto parseError = [&](std::string text) {
    in.parse_error = true;
    in.parse_error_text = std::move(text);
    in.message = protocol::InvalidMessage{};
    return in;
  };
  if (protocol::jsonNestingDepth(body) > protocol::kMaxJsonDepth)
    return parseError("a message nested deeper than " + std::to_string(protocol::kMaxJsonDepth) + " levels");
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return parseError("invalid JSON in a message of " + std::to_string(body.size()) + " bytes");
  try {
    in.message = protocol::classifyMessage(value);
  } catch (const std::exception& e) {  // a shape classifyMessage did not foresee: answered, not fatal
    return parseError(std::string("unreadable message: ") + e.what());
  }
  if (auto* m = std::get_if<protocol::Message>(&in.message)) {
    if (m->kind == protocol::Message::Kind::Request) {
      pending_.insert(*m->id);
    } else if (m->kind == protocol::Message::Kind::Notification && m->method == "$/cancelRequest") {
      auto params = protocol::parse<protocol::CancelParams>(m->params);
      const nlohmann::json* id = params ? &params->id : nullptr;
      if (id && (id->is_string() || id->is_number_integer())) {
        protocol::RequestId rid =
            id->is_string() ? protocol::RequestId{id->get<std::string>()} : protocol::RequestId{id->get<int64_t>()};
        if (pending_.count(rid)) cancelled_.insert(rid);
      }
    }
  }
  return in;
}

void Dispatcher::dispatch(const IncomingMessage& in) {
  if (in.parse_error) {
    SL_LOG(Warn) << "parse error: " << in.parse_error_text;
    send_(protocol::makeErrorResponse(std::nullopt, {ErrorCode::ParseError, in.parse_error_text}));
    return;
  }
  if (const auto* bad = std::get_if<protocol::InvalidMessage>(&in.message)) {
    SL_LOG(Warn) << "invalid message: " << bad->reason;
    send_(protocol::makeErrorResponse(bad->id, {ErrorCode::InvalidRequest, bad->reason}));
    if (bad->id) pending_.erase(*bad->id);
    return;
  }
  const auto& m = std::get<protocol::Message>(in.message);
  switch (m.kind) {
    case protocol::Message::Kind::Response: {
      if (!m.id) return;
      auto it = outgoing_.find(*m.id);
      if (it == outgoing_.end()) {
        SL_LOG(Debug) << "response to unknown request " << protocol::describe(*m.id);
        return;
      }
      auto handler = std::move(it->second);
      outgoing_.erase(it);
      try {
        handler(m);
      } catch (const std::exception& e) {
        SL_LOG(Error) << "handling the response to " << protocol::describe(*m.id) << ": " << e.what();
      }
      return;
    }
    case protocol::Message::Kind::Notification: {
      if (m.method == "$/cancelRequest") return;  // applied in receive()
      if (state_ == State::Uninitialized && m.method != "exit") {
        SL_LOG(Debug) << "dropped notification before initialize: " << m.method;
        return;
      }
      auto it = notifications_.find(m.method);
      if (it == notifications_.end()) {
        SL_LOG(Debug) << "ignored notification " << m.method;
        return;
      }
      try {
        it->second(m.params);
      } catch (const RequestError& e) {
        SL_LOG(Warn) << m.method << ": " << e.message;
      } catch (const std::exception& e) {
        SL_LOG(Error) << m.method << " failed: " << e.what();
      }
      return;
    }
    case protocol::Message::Kind::Request:
      answer(*m.id, m.method, m.params);
      pending_.erase(*m.id);
      cancelled_.erase(*m.id);
      return;
  }
}

void Dispatcher::answer(const protocol::RequestId& id, const std::string& method, const nlohmann::json& params) {
  if (cancelled_.count(id)) {
    send_(protocol::makeErrorResponse(id, {ErrorCode::RequestCancelled, method + " was cancelled"}));
    return;
  }
  if (state_ == State::Uninitialized && method != "initialize") {
    send_(protocol::makeErrorResponse(id, {ErrorCode::ServerNotInitialized, "the server is not initialized"}));
    return;
  }
  if (state_ != State::Uninitialized && method == "initialize") {
    send_(protocol::makeErrorResponse(id, {ErrorCode::InvalidRequest, "initialize was already received"}));
    return;
  }
  if (state_ == State::ShutDown) {
    send_(protocol::makeErrorResponse(id, {ErrorCode::InvalidRequest, "the server is shutting down"}));
    return;
  }
  auto it = requests_.find(method);
  if (it == requests_.end()) {
    send_(protocol::makeErrorResponse(id, {ErrorCode::MethodNotFound, "unknown method " + method}));
    return;
  }
  try {
    nlohmann::json result = it->second(params);
    send_(protocol::makeResponse(id, std::move(result)));
  } catch (const RequestError& e) {
    send_(protocol::makeErrorResponse(id, {e.code, e.message}));
  } catch (const std::exception& e) {
    SL_LOG(Error) << method << " failed: " << e.what();
    send_(protocol::makeErrorResponse(id, {ErrorCode::InternalError, method + " failed: " + e.what()}));
  }
}

void Dispatcher::sendNotification(const std::string& method, nlohmann::json params) {
  send_(protocol::makeNotification(method, std::move(params)));
}

void Dispatcher::sendRequest(const std::string& method, nlohmann::json params, ResponseHandler on_response) {
  protocol::RequestId id{"sightline-" + std::to_string(next_outgoing_id_++)};
  outgoing_[id] = std::move(on_response);
  send_(protocol::makeRequest(id, method, std::move(params)));
}

}  // namespace sightline::server
