// JSON-RPC classification and builders.
#include "protocol/jsonrpc.h"

#include <gtest/gtest.h>

namespace sightline::protocol {
namespace {

using nlohmann::json;

TEST(JsonRpc, ClassifiesRequestsNotificationsAndResponses) {
  auto req = classifyMessage(json::parse(R"({"jsonrpc":"2.0","id":7,"method":"shutdown"})"));
  ASSERT_TRUE(std::holds_alternative<Message>(req));
  EXPECT_EQ(std::get<Message>(req).kind, Message::Kind::Request);
  EXPECT_EQ(std::get<Message>(req).id, RequestId{int64_t{7}});

  auto note = classifyMessage(json::parse(R"({"jsonrpc":"2.0","method":"initialized","params":{}})"));
  EXPECT_EQ(std::get<Message>(note).kind, Message::Kind::Notification);

  auto resp = classifyMessage(json::parse(R"({"jsonrpc":"2.0","id":"s-1","result":[{"a":1}]})"));
  EXPECT_EQ(std::get<Message>(resp).kind, Message::Kind::Response);
  EXPECT_EQ(std::get<Message>(resp).id, RequestId{std::string("s-1")});

  auto err = classifyMessage(json::parse(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}})"));
  ASSERT_TRUE(std::get<Message>(err).error);
  EXPECT_EQ(std::get<Message>(err).error->code, ErrorCode::MethodNotFound);
}

TEST(JsonRpc, RejectsMalformedMessages) {
  for (const char* text : {R"([1,2])", R"({"jsonrpc":"1.0","id":1,"method":"x"})",
                           R"({"jsonrpc":"2.0","id":1,"method":3})", R"({"jsonrpc":"2.0","id":{"a":1},"method":"x"})",
                           R"({"jsonrpc":"2.0"})", R"({"jsonrpc":"2.0","id":1,"method":"x","params":"str"})"}) {
    auto r = classifyMessage(json::parse(text));
    EXPECT_TRUE(std::holds_alternative<InvalidMessage>(r)) << text;
  }
  auto with_id = classifyMessage(json::parse(R"({"jsonrpc":"1.0","id":4,"method":"x"})"));
  EXPECT_EQ(std::get<InvalidMessage>(with_id).id, RequestId{int64_t{4}});
}

TEST(JsonRpc, BuildsResponses) {
  EXPECT_EQ(makeResponse(RequestId{int64_t{1}}, nullptr), json::parse(R"({"jsonrpc":"2.0","id":1,"result":null})"));
  EXPECT_EQ(makeErrorResponse(std::nullopt, {ErrorCode::ParseError, "bad"}),
            json::parse(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})"));
  EXPECT_EQ(makeRequest(RequestId{std::string("a")}, "m", json::object())["id"], "a");
}

}  // namespace
}  // namespace sightline::protocol
