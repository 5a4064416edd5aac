// Transports. The stdio reader polls stdin together with a wake-up pipe so close() can stop
// it without leaving a thread blocked in read(); it waits for room in the input budget before
// each read, as the TCP transport waits before it starts the next async read.
#include "server/lsp/transport.h"

#include <poll.h>
#include <unistd.h>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "server/platform/log.h"

namespace sightline::server {
namespace {

namespace asio = boost::asio;

// The bytes read and still held (Transport::InputHold), shared with the holds, which may
// outlive the transport in the io_context's queue.
class InputBudget : public std::enable_shared_from_this<InputBudget> {
 public:
  explicit InputBudget(size_t limit) : limit_(limit) {}

  // A hold on `bytes` just read, given back when its last copy goes.
  Transport::InputHold hold(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ += bytes;
    }
    return std::make_shared<const Release>(shared_from_this(), bytes);
  }

  // Blocks while the limit is reached; false once stopped.
  bool waitForRoom() {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return held_ < limit_ || stopped_; });
    return !stopped_;
  }

  // When the limit is reached: true, and `resume` runs (once, where the hold that made room goes)
  // when it no longer is, unless stop() came first.
  bool pauseIfFull(std::function<void()> resume) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_ < limit_ || stopped_) return false;
    resume_ = std::move(resume);
    return true;
  }

  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    resume_ = nullptr;
    room_.notify_all();
  }

 private:
  struct Release {
    Release(std::shared_ptr<InputBudget> budget, size_t bytes) : budget(std::move(budget)), bytes(bytes) {}
    ~Release() { budget->release(bytes); }
    Release(const Release&) = delete;
    Release& operator=(const Release&) = delete;
    std::shared_ptr<InputBudget> budget;
    size_t bytes;
  };

  void release(size_t bytes) {
    std::function<void()> resume;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held_ -= bytes;
      if (held_ >= limit_) return;
      resume = std::exchange(resume_, nullptr);
      room_.notify_all();
    }
    if (resume) resume();
  }

  const size_t limit_;
  std::mutex mutex_;
  std::condition_variable room_;
  size_t held_ = 0;  // bytes
  bool stopped_ = false;
  std::function<void()> resume_;
};

class StdioTransport final : public Transport {
 public:
  StdioTransport(asio::io_context& io, int in_fd, int out_fd, size_t max_held_input)
      : io_(io), in_fd_(in_fd), out_fd_(out_fd), budget_(std::make_shared<InputBudget>(max_held_input)) {
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
        // Unhandled input past the limit: read nothing until it is handled (the client's writes
        // then block on the full pipe).
        if (!budget_->waitForRoom()) break;
        pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
        int n = ::poll(fds, wake_[0] >= 0 ? 2 : 1, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || (fds[1].revents & POLLIN) || stopping_) break;
        ssize_t got = ::read(in_fd_, chunk.data(), chunk.size());
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) break;
        asio::post(io_, [on_bytes, bytes = chunk.substr(0, static_cast<size_t>(got)),
                         hold = budget_->hold(static_cast<size_t>(got))]() mutable {
          on_bytes(std::move(bytes), std::move(hold));
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
    budget_->stop();
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
  std::shared_ptr<InputBudget> budget_;
  std::thread reader_;
  std::mutex write_mutex_;
};

class TcpTransport final : public Transport {
 public:
  TcpTransport(asio::io_context&, asio::ip::tcp::socket socket, size_t max_held_input)
      : socket_(std::move(socket)), budget_(std::make_shared<InputBudget>(max_held_input)) {}
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
    budget_->stop();  // no resume after this: it would name a transport that may be gone
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
      on_bytes_(std::string(chunk_.data(), n), budget_->hold(n));
      if (closed_) return;
      // Past the limit, the next read starts where the hold that makes room goes: on this thread,
      // since the session lets its holds go in handlers of this io_context.
      if (!budget_->pauseIfFull([this] {
            if (!closed_) readMore();
          }))
        readMore();
    });
  }

  asio::ip::tcp::socket socket_;
  std::array<char, 1 << 16> chunk_{};
  OnBytes on_bytes_;
  OnClosed on_closed_;
  bool closed_ = false;
  std::shared_ptr<InputBudget> budget_;
};

}  // namespace

std::unique_ptr<Transport> makeStdioTransport(asio::io_context& io, int in_fd, int out_fd, size_t max_held_input) {
  return std::make_unique<StdioTransport>(io, in_fd, out_fd, max_held_input);
}

std::unique_ptr<Transport> makeTcpTransport(asio::io_context& io, asio::ip::tcp::socket socket, size_t max_held_input) {
  return std::make_unique<TcpTransport>(io, std::move(socket), max_held_input);
}

}  // namespace sightline::server
