// Content-Length framing: split input, several messages per chunk, garbage and bad lengths.
#include "server/lsp/framing.h"

#include <gtest/gtest.h>

#include <vector>

namespace sightline::server {
namespace {

std::vector<FrameEvent> drain(MessageFramer& f) {
  std::vector<FrameEvent> out;
  while (auto e = f.next()) out.push_back(*e);
  return out;
}

TEST(Framing, ByteByByteAndSeveralPerChunk) {
  MessageFramer f;
  std::string two = frameMessage("{\"a\":1}") + frameMessage("{\"b\":2}");
  for (char c : two.substr(0, 10)) f.feed(std::string(1, c));
  EXPECT_TRUE(drain(f).empty());
  f.feed(two.substr(10));
  auto events = drain(f);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].body, "{\"a\":1}");
  EXPECT_EQ(events[1].body, "{\"b\":2}");
  EXPECT_EQ(f.pendingBytes(), 0u);
}

TEST(Framing, AcceptsOtherHeadersAndAnyCase) {
  MessageFramer f;
  f.feed("content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
  auto events = drain(f);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FrameEvent::Kind::Message);
}

TEST(Framing, GarbageIsReportedThenSkipped) {
  MessageFramer f;
  f.feed("\x01\x02garbage here\r\n\r\n" + frameMessage("{}"));
  auto events = drain(f);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, FrameEvent::Kind::Error);
  EXPECT_EQ(events[1].body, "{}");
}

TEST(Framing, JunkBeforeAHeaderIsSkipped) {
  MessageFramer f;
  f.feed("xx}Content-Length: 2\r\n\r\n{}");
  auto events = drain(f);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].body, "{}");
}

TEST(Framing, MalformedLength) {
  MessageFramer f;
  f.feed("Content-Length: twelve\r\n\r\n" + frameMessage("[]"));
  auto events = drain(f);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, FrameEvent::Kind::Error);
  EXPECT_EQ(events[1].body, "[]");
}

TEST(Framing, TooShortALengthCutsTheBodyThenResynchronizes) {
  MessageFramer f;
  f.feed("Content-Length: 5\r\n\r\n{\"a\":12}" + frameMessage("{}"));
  auto events = drain(f);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].body, "{\"a\":");
  EXPECT_EQ(events[1].body, "{}");
}

TEST(Framing, OversizedMessagesAreSkippedAcrossChunks) {
  MessageFramer f(16);
  f.feed("Content-Length: 40\r\n\r\n0123456789");
  auto events = drain(f);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FrameEvent::Kind::Error);
  f.feed(std::string(30, 'z') + frameMessage("{}"));
  events = drain(f);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].body, "{}");
}

TEST(Framing, EndlessGarbageIsDropped) {
  MessageFramer f;
  f.feed(std::string(MessageFramer::kMaxHeaderBytes + 100, 'g'));
  auto events = drain(f);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, FrameEvent::Kind::Error);
  EXPECT_LE(f.pendingBytes(), 64u);
  f.feed(frameMessage("{}"));
  events = drain(f);
  ASSERT_EQ(events.size(), 1u) << "the kept tail of garbage is skipped as junk before the header";
  EXPECT_EQ(events.back().body, "{}");
}

TEST(Framing, TruncatedMessageStaysPending) {
  MessageFramer f;
  f.feed("Content-Length: 10\r\n\r\n{\"a\"");
  EXPECT_TRUE(drain(f).empty());
  EXPECT_EQ(f.pendingBytes(), 4u);
}

}  // namespace
}  // namespace sightline::server
