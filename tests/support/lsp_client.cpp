// LspClient: posix_spawn with pipes; reads use poll() with deadlines so a hung server fails
// the test instead of hanging it.
#include "tests/support/lsp_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/test_paths.h"

extern char** environ;

namespace sightline::testing {
namespace {

int spawnServer(const std::vector<std::string>& args, int stdin_fd, int stdout_fd, const std::string& stderr_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all = {binaryPath(), "serve", "--log-level", "debug"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot start " + all[0]);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

std::string tempPath(const char* stem) {
  char name[] = "/tmp/sightline-test-XXXXXX";
  int fd = mkstemp(name);
  if (fd >= 0) close(fd);
  return std::string(name) + "-" + stem;
}

}  // namespace

std::unique_ptr<LspClient> LspClient::spawnStdio(const std::vector<std::string>& extra_args) {
  std::unique_ptr<LspClient> c(new LspClient());
  int to_server[2], from_server[2];
  if (pipe2(to_server, O_CLOEXEC) != 0 || pipe2(from_server, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  c->stderr_path_ = tempPath("stderr");
  c->pid_ = spawnServer(extra_args, to_server[0], from_server[1], c->stderr_path_);
  close(to_server[0]);
  close(from_server[1]);
  c->write_fd_ = to_server[1];
  c->read_fd_ = from_server[0];
  signal(SIGPIPE, SIG_IGN);
  return c;
}

std::unique_ptr<LspClient> LspClient::spawnTcp(const std::vector<std::string>& extra_args) {
  std::unique_ptr<LspClient> c(new LspClient());
  c->stderr_path_ = tempPath("stderr");
  std::vector<std::string> args = {"--listen", "127.0.0.1:0"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  c->pid_ = spawnServer(args, devnull, devnull, c->stderr_path_);
  close(devnull);
  signal(SIGPIPE, SIG_IGN);
  std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
  for (int attempt = 0; attempt < 500; ++attempt) {
    std::smatch m;
    std::string err = c->stderrText();
    if (std::regex_search(err, m, listening)) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(std::stoi(m[1])));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) throw std::runtime_error("connect failed");
      c->write_fd_ = c->read_fd_ = fd;
      c->socket_ = true;
      return c;
    }
    std::this_thread::sleep_for(10ms);
  }
  throw std::runtime_error("server did not report a port: " + c->stderrText());
}

LspClient::~LspClient() {
  if (write_fd_ >= 0) close(write_fd_);
  if (read_fd_ >= 0 && read_fd_ != write_fd_) close(read_fd_);
  if (!exit_code_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (!stderr_path_.empty()) std::remove(stderr_path_.c_str());
}

void LspClient::sendRaw(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(write_fd_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) throw std::runtime_error("write to server failed");
    done += static_cast<size_t>(n);
  }
}

void LspClient::send(const json& message) { sendRaw(server::frameMessage(message.dump())); }

int64_t LspClient::request(const std::string& method, json params) {
  int64_t id = next_id_++;
  send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
  return id;
}

void LspClient::notify(const std::string& method, json params) {
  send({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void LspClient::respond(const json& id, json result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::optional<json> LspClient::read(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    while (auto event = framer_.next()) {
      if (event->kind != server::FrameEvent::Kind::Message) continue;
      json value = json::parse(event->body, nullptr, false);
      if (!value.is_discarded()) return value;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{read_fd_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n <= 0) return std::nullopt;
    char buf[65536];
    ssize_t got = ::read(read_fd_, buf, sizeof buf);
    if (got <= 0) return std::nullopt;
    framer_.feed(std::string_view(buf, static_cast<size_t>(got)));
  }
}

std::optional<json> LspClient::waitFor(const std::function<bool(const json&)>& match,
                                       std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    auto m = read(left);
    if (!m) return std::nullopt;
    if (match(*m)) return m;
    seen_.push_back(*m);
  }
}

std::optional<json> LspClient::waitForResponse(int64_t id, std::chrono::milliseconds timeout) {
  return waitFor([id](const json& m) { return m.contains("id") && m["id"] == id && !m.contains("method"); }, timeout);
}

std::optional<json> LspClient::waitForNotification(const std::string& method, std::chrono::milliseconds timeout) {
  return waitFor([&](const json& m) { return m.value("method", "") == method && !m.contains("id"); }, timeout);
}

json LspClient::handshake(json capabilities) {
  int64_t id = request("initialize", {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", capabilities}});
  auto reply = waitForResponse(id);
  if (!reply) throw std::runtime_error("no initialize response; stderr: " + stderrText());
  notify("initialized", json::object());
  return (*reply)["result"];
}

void LspClient::closeInput() {
  if (socket_) {
    shutdown(write_fd_, SHUT_WR);
  } else if (write_fd_ >= 0) {
    close(write_fd_);
    write_fd_ = -1;
  }
}

std::optional<int> LspClient::waitExit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    std::this_thread::sleep_for(5ms);
  }
  return std::nullopt;
}

bool LspClient::running() {
  if (exit_code_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

std::string LspClient::stderrText() const {
  std::ifstream in(stderr_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace sightline::testing
