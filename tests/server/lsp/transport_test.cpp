// The transports' input limit: what they delivered and the receiver still holds bounds what they
// read; letting it go reads on. The end-to-end check (a client that reads no replies) is in
// tests/e2e/bad_input_test.cpp.
#include "server/lsp/transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace sightline::server {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr size_t kLimit = size_t{1} << 20;
// Far more than the limit and a pipe's buffer (64 KiB) or a loopback socket's (a few MiB).
constexpr size_t kSentToPipe = size_t{4} << 20;
constexpr size_t kSentToSocket = size_t{64} << 20;

// Delivered bytes, and their holds until `letGo`.
struct Receiver {
  size_t bytes = 0;
  bool closed = false;
  std::vector<Transport::InputHold> holds;
  void start(Transport& t) {
    t.start(
        [this](const std::string& b, Transport::InputHold hold) {
          bytes += b.size();
          holds.push_back(std::move(hold));
        },
        [this] { closed = true; });
  }
  void letGo() { holds.clear(); }
};

// Writes up to `total` bytes to `fd` (non-blocking) as far as the reader takes them; how many
// have gone, `already` included.
size_t writeWhatFits(int fd, size_t already, size_t total) {
  static const std::string block(64u << 10, 'x');
  size_t done = already;
  while (done < total) {
    ssize_t n = ::write(fd, block.data(), std::min(block.size(), total - done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

TEST(Transport, StdioReadsNoMoreWhileTheLimitIsHeld) {
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  asio::io_context io;
  auto work = asio::make_work_guard(io);  // the reader thread posts: run_for would return at once
  auto transport = makeStdioTransport(io, in[0], out[1], kLimit);
  Receiver r;
  r.start(*transport);
  size_t written = 0;
  for (int i = 0; i < 20; ++i) {
    written = writeWhatFits(in[1], written, kSentToPipe);
    io.run_for(20ms);
    io.restart();
  }
  // Past the limit by one read at most, and the rest waits in the pipe (or was never written).
  EXPECT_LE(r.bytes, kLimit + (64u << 10));
  EXPECT_LT(written, kSentToPipe);
  for (int rounds = 0; r.bytes < kSentToPipe; ++rounds) {
    ASSERT_LT(rounds, 5000) << "reading did not go on once the holds were let go";
    r.letGo();
    written = writeWhatFits(in[1], written, kSentToPipe);
    io.run_for(20ms);
    io.restart();
  }
  EXPECT_EQ(r.bytes, kSentToPipe);
  transport->close();
  for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
}

TEST(Transport, TcpReadsNoMoreWhileTheLimitIsHeld) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket client(io), server(io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server);
  client.non_blocking(true);
  auto transport = makeTcpTransport(io, std::move(server), kLimit);
  Receiver r;
  r.start(*transport);
  size_t written = 0;
  for (int i = 0; i < 20; ++i) {
    written = writeWhatFits(client.native_handle(), written, kSentToSocket);
    io.run_for(20ms);
    io.restart();
  }
  EXPECT_LE(r.bytes, kLimit + (64u << 10));
  EXPECT_LT(written, kSentToSocket);
  for (int rounds = 0; r.bytes < kSentToSocket; ++rounds) {
    ASSERT_LT(rounds, 5000) << "reading did not go on once the holds were let go";
    r.letGo();
    written = writeWhatFits(client.native_handle(), written, kSentToSocket);
    io.run_for(20ms);
    io.restart();
  }
  EXPECT_EQ(r.bytes, kSentToSocket);
  transport->close();
}

}  // namespace
}  // namespace sightline::server
