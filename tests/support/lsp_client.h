// A scripted LSP client for end-to-end tests: runs the real sightline binary (stdio pipes or
// one TCP connection on 127.0.0.1), writes framed messages, reads and matches replies.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/lsp/framing.h"

namespace sightline::testing {

using nlohmann::json;
using namespace std::chrono_literals;

class LspClient {
 public:
  // `sightline serve` + extra args over stdio.
  static std::unique_ptr<LspClient> spawnStdio(const std::vector<std::string>& extra_args = {});
  // `sightline serve --listen 127.0.0.1:0`, connected over TCP once it logs its port.
  static std::unique_ptr<LspClient> spawnTcp(const std::vector<std::string>& extra_args = {});
  ~LspClient();

  void sendRaw(const std::string& bytes);
  void send(const json& message);
  int64_t request(const std::string& method, json params);
  void notify(const std::string& method, json params);
  void respond(const json& id, json result);

  std::optional<json> read(std::chrono::milliseconds timeout = 5s);
  // Reads until `match` accepts a message; earlier ones stay in seen().
  std::optional<json> waitFor(const std::function<bool(const json&)>& match, std::chrono::milliseconds timeout = 5s);
  std::optional<json> waitForResponse(int64_t id, std::chrono::milliseconds timeout = 5s);
  std::optional<json> waitForNotification(const std::string& method, std::chrono::milliseconds timeout = 5s);
  const std::vector<json>& seen() const { return seen_; }

  // initialize (with the given capabilities) + initialized; returns the initialize result.
  json handshake(json capabilities = json::object());

  void closeInput();
  // The exit code, or nullopt if the process did not end in time.
  std::optional<int> waitExit(std::chrono::milliseconds timeout = 5s);
  bool running();
  std::string stderrText() const;

 private:
  LspClient() = default;
  int pid_ = -1;

 public:
  int pid() const { return pid_; }

 private:
  int write_fd_ = -1;
  int read_fd_ = -1;
  bool socket_ = false;
  std::string stderr_path_;
  server::MessageFramer framer_;
  std::vector<json> seen_;
  int64_t next_id_ = 1;
  std::optional<int> exit_code_;
};

}  // namespace sightline::testing
