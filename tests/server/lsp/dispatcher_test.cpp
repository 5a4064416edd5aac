// Dispatcher: lifecycle gates, error codes, cancellation, outgoing requests.
#include "server/lsp/dispatcher.h"

#include "protocol/lsp_types.h"

#include <gtest/gtest.h>

#include <vector>

namespace sightline::server {
namespace {

using nlohmann::json;
using protocol::ErrorCode;

struct Harness {
  std::vector<json> sent;
  Dispatcher d{[this](const json& m) { sent.push_back(m); }};
  Harness() {
    d.onRequest("initialize", [this](const json&) {
      d.setState(Dispatcher::State::Initialized);
      return json{{"capabilities", json::object()}};
    });
    d.onRequest("echo", [](const json& p) {
      auto pos = parseParams<protocol::Position>(p);
      return json{{"line", pos.line}};
    });
    d.onRequest("boom", [](const json&) -> json { throw std::runtime_error("kaput"); });
    d.onNotification("note", [this](const json&) { ++notes; });
  }
  void in(const std::string& body) { d.dispatch(d.receive(body)); }
  int errorCode() const { return sent.back()["error"]["code"].get<int>(); }
  int notes = 0;
};

TEST(Dispatcher, RequestsBeforeInitializeAreRefused) {
  Harness h;
  h.in(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"line":1,"character":0}})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::ServerNotInitialized));
  h.in(R"({"jsonrpc":"2.0","method":"note"})");
  EXPECT_EQ(h.notes, 0) << "notifications before initialize are dropped";
  h.in(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{}})");
  EXPECT_TRUE(h.sent.back().contains("result"));
  h.in(R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{}})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::InvalidRequest));
}

TEST(Dispatcher, ErrorCodes) {
  Harness h;
  h.in(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})");
  h.in("{not json");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::ParseError));
  EXPECT_TRUE(h.sent.back()["id"].is_null());
  h.in(R"({"jsonrpc":"2.0","id":5,"method":"nope"})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::MethodNotFound));
  EXPECT_EQ(h.sent.back()["id"], 5);
  size_t before = h.sent.size();
  h.in(R"({"jsonrpc":"2.0","method":"unknown/notification"})");
  EXPECT_EQ(h.sent.size(), before) << "unknown notifications are ignored";
  h.in(R"({"jsonrpc":"2.0","id":6,"method":"echo","params":{"line":"x","character":0}})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::InvalidParams));
  EXPECT_NE(h.sent.back()["error"]["message"].get<std::string>().find("params.line"), std::string::npos);
  h.in(R"({"jsonrpc":"2.0","id":7,"method":"boom"})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::InternalError));
  h.in(R"({"jsonrpc":"1.0","id":8,"method":"echo"})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::InvalidRequest));
  EXPECT_EQ(h.sent.back()["id"], 8);
  h.in(R"({"jsonrpc":"2.0","id":9,"method":"echo","params":{"line":4,"character":0}})");
  EXPECT_EQ(h.sent.back()["result"]["line"], 4);
}

TEST(Dispatcher, CancelReceivedBeforeDispatchWins) {
  Harness h;
  h.in(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})");
  auto request = h.d.receive(R"({"jsonrpc":"2.0","id":"r1","method":"echo","params":{"line":1,"character":0}})");
  auto cancel = h.d.receive(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"r1"}})");
  h.d.dispatch(request);
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::RequestCancelled));
  EXPECT_EQ(h.sent.back()["id"], "r1");
  h.d.dispatch(cancel);
  // A cancel for a request already answered changes nothing.
  h.in(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}})");
  h.in(R"({"jsonrpc":"2.0","id":99,"method":"echo","params":{"line":2,"character":0}})");
  EXPECT_EQ(h.sent.back()["result"]["line"], 2);
}

TEST(Dispatcher, ShutdownStateRefusesRequests) {
  Harness h;
  h.in(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})");
  h.d.setState(Dispatcher::State::ShutDown);
  h.in(R"({"jsonrpc":"2.0","id":2,"method":"echo","params":{"line":1,"character":0}})");
  EXPECT_EQ(h.errorCode(), static_cast<int>(ErrorCode::InvalidRequest));
}

TEST(Dispatcher, OutgoingRequestsGetTheirResponses) {
  Harness h;
  h.in(R"({"jsonrpc":"2.0","id":1,"method":"initialize"})");
  json got;
  h.d.sendRequest("workspace/configuration", json::object(), [&](const protocol::Message& m) { got = m.result; });
  ASSERT_EQ(h.sent.back()["method"], "workspace/configuration");
  json id = h.sent.back()["id"];
  h.in(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", json::array({1})}}.dump());
  EXPECT_EQ(got, json::array({1}));
  size_t before = h.sent.size();
  h.in(R"({"jsonrpc":"2.0","id":"unknown","result":null})");
  EXPECT_EQ(h.sent.size(), before);
}

}  // namespace
}  // namespace sightline::server
