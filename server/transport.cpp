// Transports. The stdio reader polls stdin together with a wake-up pipe so close() can stop
// it without leaving a thread blocked in read().
#include "server/transport.h"

#include <poll.h>
#include <unistd.h>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include "server/log.h"

namespace sightline::server {
namespace {

namespace asio = boost::asio;

class StdioTransport final : public Transport {
 public:
  StdioTransport(asio::io_context& io, int in_fd, int out_fd) : io_(io), in_fd_(in_fd), out_fd_(out_fd) {
    if (::pipe(wake_) != 0) wake_[0] = wake_[1] = -1;
  }
  ~StdioTransport() override {
    close();
    if (wake_[0] >= 0) ::close(wake_[0]);
    if (wake_[1] >= 0) ::close(wake_[1]);
  }

  void start(OnBytes on_bytes, OnClosed on_closed) override {
    reader_ = std::thread([this, on_bytes = std::move(on_bytes), on_closed = std::move(on_closed)] {
      std::string chunk(size_t{1} << 16, '\0');
      for (;;) {
        pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        int n = ::poll(fds, wake_[0] >= 0 ? 2 : 1, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || (fds[1].revents & POLLIN) || stopping_) break;
        ssize_t got = ::read(in_fd_, chunk.data(), chunk.size());
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) break;
        asio::post(io_, [on_bytes, bytes = chunk.substr(0, static_cast<size_t>(got))]() mutable {
          on_bytes(std::move(bytes));
        });
      }
      if (!stopping_) asio::post(io_, on_closed);
    });
  }

  bool send(const std::string& bytes) override {
    std::lock_guard<std::mutex> lock(write_mutex_);
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::write(out_fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  void close() override {
    if (stopping_.exchange(true)) return;
    if (wake_[1] >= 0) {
      char c = 1;
      [[maybe_unused]] auto r = ::write(wake_[1], &c, 1);
    }
    if (reader_.joinable()) reader_.join();
  }

 private:
  asio::io_context& io_;
  int in_fd_;
  int out_fd_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::thread reader_;
  std::mutex write_mutex_;
};

class TcpTransport final : public Transport {
 public:
  TcpTransport(asio::io_context&, asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}
  ~TcpTransport() override { close(); }

  void start(OnBytes on_bytes, OnClosed on_closed) override {
    on_bytes_ = std::move(on_bytes);
    on_closed_ = std::move(on_closed);
    readMore();
  }

  bool send(const std::string& bytes) override {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(bytes), ec);
    return !ec;
  }

  void close() override {
    closed_ = true;
    boost::system::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  void readMore() {
    socket_.async_read_some(asio::buffer(chunk_), [this](const boost::system::error_code& ec, size_t n) {
      if (ec) {
        if (!closed_) on_closed_();
        return;
      }
      on_bytes_(std::string(chunk_.data(), n));
      if (!closed_) readMore();
    });
  }

  asio::ip::tcp::socket socket_;
  std::array<char, 1 << 16> chunk_{};
  OnBytes on_bytes_;
  OnClosed on_closed_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<Transport> makeStdioTransport(asio::io_context& io, int in_fd, int out_fd) {
  return std::make_unique<StdioTransport>(io, in_fd, out_fd);
}

std::unique_ptr<Transport> makeTcpTransport(asio::io_context& io, asio::ip::tcp::socket socket) {
  return std::make_unique<TcpTransport>(io, std::move(socket));
}

}  // namespace sightline::server
