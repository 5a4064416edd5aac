// The mcp verb: options, the stdin reader thread and the server's io loop.
#include "server/cli/mcp_command.h"

#include <unistd.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "server/cli/command_line.h"
#include "server/mcp/mcp_server.h"
#include "server/platform/log.h"
#include "server/workspace/local_files.h"

namespace sightline::server {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: sightline mcp [--root DIR] [--profile PATH]... [--settings JSON|FILE] [--log-level LEVEL]\n"
    "\n"
    "Runs the Model Context Protocol server for coding agents over stdin/stdout (one JSON-RPC\n"
    "message per line; logs on stderr). It loads the workspace's profile as the language server\n"
    "does: the newest one under --root (default: the current directory), or --profile's (relative\n"
    "to --root; given once per rank of a run), with the `sightline` settings from --settings (a\n"
    "JSON object, or a file holding one) or else from DIR/.vscode/settings.json. Tools:\n"
    "step_verdict, top_lines, line_cost, memory_at_peak, oom, ranks, compare, capture_command\n"
    "(docs/agents.md).\n";

// Reads standard input in blocks and posts each line to the server; a line past the limit is
// posted cut to the limit plus one byte (refused there), the rest of it dropped unread.
void readLines(asio::io_context& io, mcp::McpServer& server, size_t limit) {
  std::string line;
  bool overflow = false;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] == '\n') {
        asio::post(io, [&server, l = std::move(line)]() mutable { server.onLine(std::move(l)); });
        line.clear();
        overflow = false;
      } else if (line.size() <= limit) {
        line.push_back(buffer[i]);
      } else {
        overflow = true;
      }
    }
  }
  (void)overflow;
  if (!line.empty()) asio::post(io, [&server, l = std::move(line)]() mutable { server.onLine(std::move(l)); });
  asio::post(io, [&server] { server.onEnd(); });
}

}  // namespace

json sightlineSettingsOf(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded() || !doc.is_object()) return nullptr;
  json out = json::object();
  if (doc.contains("sightline") && doc["sightline"].is_object()) out = doc["sightline"];
  const std::string prefix = "sightline.";
  // "sightline.hints.enabled": VS Code's path into the section ({"hints": {"enabled": ...}}).
  for (const auto& [key, value] : doc.items()) {
    if (key.rfind(prefix, 0) != 0 || key.size() == prefix.size()) continue;
    json* at = &out;
    std::string rest = key.substr(prefix.size());
    for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) {
      json& next = (*at)[rest.substr(0, dot)];
      if (!next.is_object()) next = json::object();
      at = &next;
    }
    (*at)[rest] = value;
  }
  return out.empty() ? json(nullptr) : out;
}

int runMcpCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string root = fs::current_path().string(), settings_arg;
  std::vector<std::string> profiles;
  cli::CommandLine command_line("mcp", kUsage);
  command_line.option("--root", cli::valueInto(root))
      .option("--settings", cli::valueInto(settings_arg))
      .option("--profile",
              [&profiles](const std::string& v) -> std::string {
                profiles.push_back(v);
                return "";
              })
      .option("--log-level", [](const std::string& v) -> std::string {
        LogLevel level;
        if (!parseLogLevel(v, level)) return "unknown log level " + v;
        setLogLevel(level);
        return "";
      });
  if (auto code = command_line.parse(args, out, err)) return *code;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    err << "sightline mcp: --root " << root << ": not a folder\n";
    return 2;
  }
  mcp::McpOptions options;
  options.root = normalPath(root);
  json settings;
  if (!settings_arg.empty()) {
    std::string text = settings_arg;
    if (settings_arg.front() != '{') {
      auto read = readTextFile(settings_arg, 16u << 20);
      if (!read) {
        err << "sightline mcp: --settings: " << settings_arg << " is neither a JSON object nor a file it can read\n";
        return 2;
      }
      text = *read;
    }
    settings = json::parse(text, nullptr, false, true);
    if (settings.is_discarded() || !settings.is_object()) {
      err << "sightline mcp: --settings: not a JSON object\n";
      return 2;
    }
    // A whole settings file (keys "sightline.x") is read as VS Code's.
    if (json section = sightlineSettingsOf(text); !section.is_null()) settings = section;
  } else if (auto text = readTextFile(options.root + "/.vscode/settings.json", 16u << 20)) {
    settings = sightlineSettingsOf(*text);
  }
  if (!profiles.empty()) {
    if (!settings.is_object()) settings = json::object();
    json list = json::array();
    // Relative to the workspace: MCP clients start servers from anywhere.
    for (const auto& p : profiles)
      list.push_back(fs::path(p).is_absolute() ? p : (fs::path(options.root) / p).string());
    settings["profiles"] = list;
  }

  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  bool broken = false;
  mcp::McpServer server(
      io,
      [&](const std::string& line) {
        if (broken) return;
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fputc('\n', stdout);
        if (std::fflush(stdout) != 0) {
          broken = true;  // the client went away
          io.stop();
        }
      },
      options, settings);
  server.start();
  std::thread reader(readLines, std::ref(io), std::ref(server), options.max_message_bytes);
  reader.detach();  // blocked in read() until the client closes its end; the process exits anyway
  auto work = asio::make_work_guard(io);
  io.run();
  return 0;
}

}  // namespace sightline::server
