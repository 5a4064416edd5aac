// The sightline binary: `serve` (LSP over stdio or one TCP client) and the command-line verbs.
#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/source/source_file.h"
#include "server/check_command.h"
#include "server/log.h"
#include "server/report_command.h"
#include "server/session.h"
#include "server/transport.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace {

namespace asio = boost::asio;
using namespace sightline::server;

constexpr const char* kMainUsage =
    "usage: sightline <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  serve    run the language server (LSP over stdio, or --listen HOST:PORT)\n"
    "  check    print GPU-performance diagnostics of Python files (text, json, sarif)\n"
    "  report   put the GPU time of a profile (nsys export) on the lines of Python files\n"
    "\n"
    "sightline --version prints the version; sightline <verb> --help explains a verb.\n";

constexpr const char* kServeUsage =
    "usage: sightline serve [--listen HOST:PORT] [--log-level error|warn|info|debug]\n"
    "                       [--diagnostics-delay-ms N]\n"
    "\n"
    "Runs the language server. Without --listen it speaks LSP over stdin/stdout; with it, it\n"
    "accepts one client on HOST:PORT (port 0 picks a free port; the address is logged).\n"
    "Logs go to stderr.\n";

int runServe(const std::vector<std::string>& args) {
  std::string listen;
  SessionOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << kServeUsage;
      return 0;
    }
    if (i + 1 >= args.size()) {
      std::cerr << "sightline serve: unknown or incomplete option " << a << "\n" << kServeUsage;
      return 2;
    }
    const std::string& v = args[++i];
    if (a == "--listen") {
      listen = v;
    } else if (a == "--log-level") {
      LogLevel level;
      if (!parseLogLevel(v, level)) {
        std::cerr << "sightline serve: unknown log level " << v << "\n";
        return 2;
      }
      setLogLevel(level);
    } else if (a == "--diagnostics-delay-ms") {
      options.diagnostics_delay = std::chrono::milliseconds(std::stoi(v));
    } else {
      std::cerr << "sightline serve: unknown option " << a << "\n" << kServeUsage;
      return 2;
    }
  }

  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  std::unique_ptr<Transport> transport;
  if (listen.empty()) {
    transport = makeStdioTransport(io, STDIN_FILENO, STDOUT_FILENO);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      std::cerr << "sightline serve: --listen expects HOST:PORT\n";
      return 2;
    }
    try {
      asio::ip::tcp::endpoint endpoint(asio::ip::make_address(listen.substr(0, colon)),
                                       static_cast<unsigned short>(std::stoi(listen.substr(colon + 1))));
      asio::ip::tcp::acceptor acceptor(io, endpoint);
      auto bound = acceptor.local_endpoint();
      SL_LOG(Info) << "listening on " << bound.address().to_string() << ":" << bound.port();
      asio::ip::tcp::socket socket(io);
      acceptor.accept(socket);
      SL_LOG(Info) << "client connected";
      transport = makeTcpTransport(io, std::move(socket));
    } catch (const std::exception& e) {
      std::cerr << "sightline serve: cannot listen on " << listen << ": " << e.what() << "\n";
      return 2;
    }
  }
  Session session(io, *transport, options);
  session.start();
  // Keeps run() going while the stdio reader thread has not posted anything yet.
  auto work = asio::make_work_guard(io);
  io.run();
  transport->close();
  return session.exitCode();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::string problem = sightline::source::checkGrammarCompatibility(); !problem.empty()) {
    std::cerr << "sightline: " << problem << "\n";
    return 3;
  }
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kMainUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "sightline " << SIGHTLINE_VERSION << "\n";
    return 0;
  }
  std::string verb = args[0];
  args.erase(args.begin());
  if (verb == "serve") return runServe(args);
  if (verb == "check") return runCheckCommand(args, std::cout, std::cerr);
  if (verb == "report") return runReportCommand(args, std::cout, std::cerr);
  std::cerr << "sightline: unknown verb \"" << verb << "\"\n" << kMainUsage;
  return 2;
}
