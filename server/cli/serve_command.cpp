// The serve verb: options, the transport, and the session's io loop.
#include "server/cli/serve_command.h"

#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <csignal>
#include <cstdlib>

#include "server/cli/command_line.h"
#include "server/lsp/session.h"
#include "server/lsp/transport.h"
#include "server/platform/log.h"

namespace sightline::server {
namespace {

namespace asio = boost::asio;

constexpr const char* kUsage =
    "usage: sightline serve [--listen HOST:PORT [--allow-remote]] [--log-level error|warn|info|debug]\n"
    "                       [--diagnostics-delay-ms N]\n"
    "\n"
    "Runs the language server. Without --listen it speaks LSP over stdin/stdout; with it, it\n"
    "accepts one client on HOST:PORT (port 0 picks a free port; the address is logged). The\n"
    "server has no authentication: HOST must be a loopback address unless --allow-remote is\n"
    "given. Logs go to stderr. Diagnostics follow an edit after a delay that follows what the\n"
    "file's last diagnostics cost (20 to 500 ms); --diagnostics-delay-ms fixes it.\n";

// A whole non-negative decimal number no larger than `max`, or -1.
long parseCount(const std::string& text, long max) {
  if (text.empty() || text.size() > 9) return -1;
  for (char c : text)
    if (c < '0' || c > '9') return -1;
  long n = std::strtol(text.c_str(), nullptr, 10);
  return n <= max ? n : -1;
}

// Accepts one client on `listen` (HOST:PORT); nullptr after telling `err` why not.
std::unique_ptr<Transport> acceptOneClient(asio::io_context& io, const std::string& listen, bool allow_remote,
                                           std::ostream& err) {
  auto colon = listen.rfind(':');
  long port = colon == std::string::npos ? -1 : parseCount(listen.substr(colon + 1), 65535);
  if (port < 0) {
    err << "sightline serve: --listen expects HOST:PORT with a port from 0 to 65535, got \"" << listen << "\"\n";
    return nullptr;
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(listen.substr(0, colon), ec);
  if (ec) {
    err << "sightline serve: --listen: \"" << listen.substr(0, colon) << "\" is not an IP address\n";
    return nullptr;
  }
  if (!address.is_loopback() && !allow_remote) {
    err << "sightline serve: --listen " << listen
        << ": not a loopback address, and the server has no authentication; use 127.0.0.1, or add "
           "--allow-remote if the network is yours\n";
    return nullptr;
  }
  try {
    asio::ip::tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    asio::ip::tcp::acceptor acceptor(io, endpoint);
    auto bound = acceptor.local_endpoint();
    SL_LOG(Info) << "listening on " << bound.address().to_string() << ":" << bound.port();
    asio::ip::tcp::socket socket(io);
    acceptor.accept(socket);
    SL_LOG(Info) << "client connected";
    return makeTcpTransport(io, std::move(socket));
  } catch (const std::exception& e) {
    err << "sightline serve: cannot listen on " << listen << ": " << e.what() << "\n";
    return nullptr;
  }
}

}  // namespace

int runServeCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string listen;
  bool allow_remote = false;
  SessionOptions options;
  cli::CommandLine command_line("serve", kUsage);
  command_line.option("--listen", cli::valueInto(listen))
      .flag("--allow-remote", [&allow_remote] { allow_remote = true; })
      .option("--log-level",
              [](const std::string& v) -> std::string {
                LogLevel level;
                if (!parseLogLevel(v, level)) return "unknown log level " + v;
                setLogLevel(level);
                return "";
              })
      .option("--diagnostics-delay-ms", [&options](const std::string& v) -> std::string {
        long ms = parseCount(v, 60'000);
        if (ms < 0) return "--diagnostics-delay-ms expects milliseconds from 0 to 60000, got \"" + v + "\"";
        options.diagnostics_delay = std::chrono::milliseconds(ms);
        return "";
      });
  if (auto code = command_line.parse(args, out, err)) return *code;

  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  std::unique_ptr<Transport> transport = listen.empty() ? makeStdioTransport(io, STDIN_FILENO, STDOUT_FILENO)
                                                        : acceptOneClient(io, listen, allow_remote, err);
  if (!transport) return 2;
  Session session(io, *transport, options);
  session.start();
  // Keeps run() going while the stdio reader thread has not posted anything yet.
  auto work = asio::make_work_guard(io);
  io.run();
  transport->close();
  return session.exitCode();
}

}  // namespace sightline::server
