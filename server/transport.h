// Byte transports for the LSP session: stdio (a reader thread posting into the io_context) and
// one TCP client (Asio async reads). Both deliver bytes and the close on the io_context thread.
// Framing is not done here (framing.h).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <string>

namespace sightline::server {

class Transport {
 public:
  using OnBytes = std::function<void(std::string bytes)>;
  using OnClosed = std::function<void()>;
  virtual ~Transport() = default;
  // Callbacks run on the io_context's thread.
  virtual void start(OnBytes on_bytes, OnClosed on_closed) = 0;
  // Writes all bytes (blocking); called on the io_context's thread. False once the peer is gone.
  virtual bool send(const std::string& bytes) = 0;
  virtual void close() = 0;
};

std::unique_ptr<Transport> makeStdioTransport(boost::asio::io_context& io, int in_fd, int out_fd);
std::unique_ptr<Transport> makeTcpTransport(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket);

}  // namespace sightline::server
