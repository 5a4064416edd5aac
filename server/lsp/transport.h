// Byte transports for the LSP session: stdio (a reader thread posting into the io_context) and
// one TCP client (Asio async reads). Both deliver bytes and the close on the io_context thread,
// and both stop reading while what they delivered is not yet handled past a limit, so a client
// that sends faster than the server answers, or reads no answers at all, is held back by its own
// pipe or socket instead of growing the server. Framing is not done here (framing.h).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <string>

namespace sightline::server {

class Transport {
 public:
  // The bytes of one read count against the transport's input limit until the last copy of
  // their hold is gone: the receiver keeps it with the messages it made of them until they are
  // handled. Safe to let go on any thread, and after the transport is gone.
  using InputHold = std::shared_ptr<const void>;
  using OnBytes = std::function<void(std::string bytes, InputHold hold)>;
  using OnClosed = std::function<void()>;
  // Input read and still held beyond which no more is read: 64 reads ahead of the io thread.
  static constexpr size_t kDefaultMaxHeldInput = size_t{4} << 20;
  virtual ~Transport() = default;
  // Callbacks run on the io_context's thread.
  virtual void start(OnBytes on_bytes, OnClosed on_closed) = 0;
  // Writes all bytes (blocking); called on the io_context's thread. False once the peer is gone.
  virtual bool send(const std::string& bytes) = 0;
  virtual void close() = 0;
};

std::unique_ptr<Transport> makeStdioTransport(boost::asio::io_context& io, int in_fd, int out_fd,
                                              size_t max_held_input = Transport::kDefaultMaxHeldInput);
std::unique_ptr<Transport> makeTcpTransport(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket,
                                            size_t max_held_input = Transport::kDefaultMaxHeldInput);

}  // namespace sightline::server
