// MCP messages through the real server (server/mcp): each line of the input is one message to
// an McpServer whose workspace holds the bundled example and its capture, loaded once (the tools
// then answer from a real profile). Whatever the lines hold, every request gets an answer (a
// result, an error, or a tool error), every answer is one line of valid JSON, and nothing crashes.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "server/mcp/mcp_server.h"
#include "server/platform/log.h"

namespace {

namespace fs = std::filesystem;
using namespace sightline::server;

struct World {
  boost::asio::io_context io;
  // Keeps the context from stopping when it runs out of work (poll) while a load runs.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work = boost::asio::make_work_guard(io);
  std::unique_ptr<mcp::McpServer> server;
  size_t answers = 0;
};
World* world = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setLogLevel(LogLevel::Error);
  // A workspace of the example script and its capture, as a user has it.
  fs::path root = fs::temp_directory_path() / ("sightline-mcp-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(root);
  fs::path source = fs::path(SIGHTLINE_SOURCE_DIR) / "examples";
  fs::copy_file(source / "train_small.py", root / "train_small.py", fs::copy_options::overwrite_existing);
  std::string unpack = "xz -dc '" + (source / "train_small_capture.sqlite.xz").string() + "' > '" +
                       (root / "train_small_capture.sqlite").string() + "'";
  if (std::system(unpack.c_str()) != 0) std::abort();
  fs::copy_file(source / "train_small_capture.steps.json", root / "train_small_capture.steps.json",
                fs::copy_options::overwrite_existing);
  world = new World;
  mcp::McpOptions options;
  options.root = root.string();
  options.max_message_bytes = 1u << 20;
  world->server = std::make_unique<mcp::McpServer>(
      world->io,
      [](const std::string& line) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || line.find('\n') != std::string::npos) std::abort();  // one valid JSON line
        ++world->answers;
      },
      options);
  world->server->start();
  world->server->onLine(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})");
  while (!world->server->workspace().profile() && world->server->workspace().profileError().empty())
    world->io.run_one_for(std::chrono::seconds(1));
  world->io.poll();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  for (size_t at = 0; at <= input.size();) {
    size_t end = input.find('\n', at);
    if (end == std::string_view::npos) end = input.size();
    if (end > at) world->server->onLine(std::string(input.substr(at, end - at)));
    at = end + 1;
  }
  // A call that opened a script with NVTX ranges may start a reload: answered once it ends.
  while (!world->server->idle()) world->io.run_one_for(std::chrono::seconds(1));
  world->io.poll();
  return 0;
}
