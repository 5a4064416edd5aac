// JSON-RPC through the real server: a Session (the LSP layer, its handlers and the workspace)
// over an in-memory transport. After `initialize`, each line of the input is one message body,
// framed and delivered as a client would send it; then the input closes. Whatever the bodies
// hold, the session answers or ignores them and stops when the input ends, without crashing.
#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/lsp/framing.h"
#include "server/lsp/session.h"
#include "server/lsp/transport.h"
#include "server/platform/log.h"

namespace {

using namespace sightline::server;

class MemoryTransport final : public Transport {
 public:
  void start(OnBytes on_bytes, OnClosed on_closed) override {
    on_bytes_ = std::move(on_bytes);
    on_closed_ = std::move(on_closed);
  }
  bool send(const std::string&) override { return true; }  // replies are not checked: crashes are
  void close() override {}
  void deliver(std::string bytes) { on_bytes_(std::move(bytes), nullptr); }  // no input limit here
  void closeInput() { on_closed_(); }

 private:
  OnBytes on_bytes_;
  OnClosed on_closed_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setLogLevel(LogLevel::Error);  // the session logs every bad message; keep the fuzzer's output readable
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boost::asio::io_context io;
  MemoryTransport transport;
  SessionOptions options;
  options.diagnostics_delay = std::chrono::milliseconds(0);
  options.profile_poll = std::chrono::milliseconds(60'000);
  options.max_message_bytes = size_t{1} << 20;
  Session session(io, transport, options);
  session.start();
  transport.deliver(frameMessage(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}})"));
  transport.deliver(frameMessage(R"({"jsonrpc":"2.0","method":"initialized","params":{}})"));
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at <= input.size();) {
    size_t end = input.find('\n', at);
    if (end == std::string_view::npos) end = input.size();
    if (end > at) transport.deliver(frameMessage(input.substr(at, end - at)));
    at = end + 1;
  }
  transport.closeInput();
  io.run();
  return 0;
}
