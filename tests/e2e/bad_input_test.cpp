// Bad input over the wire: each case is answered per the spec or ignored, and the server keeps
// serving (checked by a request that must still be answered). scripts/test.sh also runs these
// against the ASan+UBSan build.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "server/lsp/framing.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

// The server still answers: a codeAction on an unknown document gives InvalidParams.
void expectStillServing(LspClient& client) {
  int64_t id =
      client.request("textDocument/codeAction",
                     {{"textDocument", {{"uri", "file:///none.py"}}},
                      {"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}},
                      {"context", {{"diagnostics", json::array()}}}});
  auto reply = client.waitForResponse(id, 10s);
  ASSERT_TRUE(reply) << "server stopped answering; stderr:\n" << client.stderrText();
  EXPECT_EQ((*reply)["error"]["code"], -32602);
  EXPECT_TRUE(client.running());
}

std::unique_ptr<LspClient> initialized() {
  auto c = LspClient::spawnStdio();
  c->handshake();
  return c;
}

TEST(BadInput, RequestBeforeInitialize) {
  auto c = LspClient::spawnStdio();
  int64_t id = c->request("textDocument/codeAction", json::object());
  auto reply = c->waitForResponse(id);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32002);
  c->handshake();
  expectStillServing(*c);
}

TEST(BadInput, GarbageBytes) {
  auto c = initialized();
  static const char kGarbage[] = "\x00\x01\xff garbage\r\n\r\n";
  c->sendRaw(std::string(kGarbage, sizeof kGarbage - 1));
  c->sendRaw("more garbage without any header end");
  c->sendRaw("\r\n\r\n");
  expectStillServing(*c);
}

TEST(BadInput, InvalidJsonGetsParseError) {
  auto c = initialized();
  c->sendRaw(server::frameMessage("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "));
  auto reply = c->waitFor([](const json& m) { return m.contains("error"); });
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32700);
  EXPECT_TRUE((*reply)["id"].is_null());
  expectStillServing(*c);
}

TEST(BadInput, WrongContentLength) {
  auto c = initialized();
  std::string body = R"({"jsonrpc":"2.0","id":77,"method":"shutdown"})";
  c->sendRaw("Content-Length: 10\r\n\r\n" + body);  // too short: a cut body, then junk
  auto reply = c->waitFor([](const json& m) { return m.contains("error"); });
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32700);
  c->sendRaw("Content-Length: abc\r\n\r\n");
  expectStillServing(*c);
}

TEST(BadInput, UnknownMethodAndInvalidParams) {
  auto c = initialized();
  int64_t id = c->request("sightline/doesNotExist", json::object());
  auto reply = c->waitForResponse(id);
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32601);
  int64_t bad = c->request("textDocument/codeAction", {{"textDocument", {{"uri", 42}}}});
  auto invalid = c->waitForResponse(bad);
  ASSERT_TRUE(invalid);
  EXPECT_EQ((*invalid)["error"]["code"], -32602);
  EXPECT_NE((*invalid)["error"]["message"].get<std::string>().find("params.textDocument.uri"), std::string::npos);
  c->notify("textDocument/didOpen", {{"textDocument", {{"uri", 1}}}});  // bad notification: logged
  c->notify("$/somethingUnknown", {{"x", 1}});                          // ignored
  c->send({{"jsonrpc", "2.0"}, {"id", 5}, {"method", "shutdown"}, {"params", "not an object"}});
  auto invalid_request = c->waitForResponse(5);
  ASSERT_TRUE(invalid_request);
  EXPECT_EQ((*invalid_request)["error"]["code"], -32600);
  expectStillServing(*c);
}

TEST(BadInput, FiftyMegabyteMessage) {
  auto c = initialized();
  std::string big(50u << 20, 'a');
  int64_t id = c->request("sightline/huge", {{"blob", big}});
  auto reply = c->waitForResponse(id, 60s);
  ASSERT_TRUE(reply) << c->stderrText();
  EXPECT_EQ((*reply)["error"]["code"], -32601);
  expectStillServing(*c);
}

TEST(BadInput, NonUtf8TextAndBrokenPython) {
  auto c = initialized();
  // JSON strings cannot carry invalid UTF-8: such a message is a parse error, not a crash.
  std::string body = std::string(
                         "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{\"textDocument\":"
                         "{\"uri\":\"file:///bad.py\",\"languageId\":\"python\",\"version\":1,\"text\":\"x = '") +
                     "\xff\xfe\xc3" + "'\"}}}";
  c->sendRaw(server::frameMessage(body));
  auto parse_error = c->waitFor([](const json& m) { return m.contains("error"); });
  ASSERT_TRUE(parse_error);
  EXPECT_EQ((*parse_error)["error"]["code"], -32700);
  // Valid JSON holding odd text and a file full of syntax errors: diagnostics, no crash.
  std::string python =
      "def (:\n  for in\n\tx = = = \u0000\nfor x in loader:\n    loss.backward()\n    v = loss.item()\n"
      "class\n((((\n\"\"\"unterminated\n";
  c->notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", "file:///broken.py"}, {"languageId", "python"}, {"version", 1}, {"text", python}}}});
  auto published = c->waitForNotification("textDocument/publishDiagnostics");
  ASSERT_TRUE(published);
  // Edits far outside the text are clamped.
  json far_away = json::parse(R"([{"range": {"start": {"line": 999, "character": 5},
                                              "end": {"line": 1000, "character": 0}}, "text": "\u00e9\ud83d\ude80"}])");
  c->notify("textDocument/didChange",
            {{"textDocument", {{"uri", "file:///broken.py"}, {"version", 2}}}, {"contentChanges", far_away}});
  expectStillServing(*c);
}

TEST(BadInput, TruncatedMessageAtEndOfInput) {
  auto c = initialized();
  c->sendRaw("Content-Length: 100\r\n\r\n{\"jsonrpc\":\"2.0\",");
  c->closeInput();
  EXPECT_EQ(c->waitExit(), 1);
  EXPECT_NE(c->stderrText().find("input ended inside a message"), std::string::npos) << c->stderrText();
}

TEST(BadInput, ChangeForADocumentThatWasNeverOpened) {
  auto c = initialized();
  c->notify("textDocument/didChange",
            {{"textDocument", {{"uri", "file:///ghost.py"}, {"version", 2}}}, {"contentChanges", {{{"text", "x"}}}}});
  c->notify("textDocument/didClose", {{"textDocument", {{"uri", "file:///ghost.py"}}}});
  expectStillServing(*c);
}

// A response from the client whose error code is not a number, before initialize: it once
// aborted the server (a JSON type error escaped the classifier).
TEST(BadInput, ResponseWithANonNumericErrorCode) {
  auto c = LspClient::spawnStdio();
  c->sendRaw(server::frameMessage(R"({"jsonrpc": "2.0", "id": 777, "error": {"code": "x"}})"));
  c->sendRaw(server::frameMessage(R"({"jsonrpc": "2.0", "id": 778, "error": {"code": 1.5, "message": 7}})"));
  c->sendRaw(server::frameMessage(R"({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": [1]}})"));
  c->handshake();
  expectStillServing(*c);
}

// 100,000 levels of nesting in a 200 KB message: a parse error, not a stack overflow.
TEST(BadInput, DeeplyNestedJson) {
  auto c = initialized();
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  c->sendRaw(server::frameMessage(R"({"jsonrpc": "2.0", "id": 5, "method": "x", "params": )" + deep + "}"));
  auto reply = c->waitFor([](const json& m) { return m.contains("error"); });
  ASSERT_TRUE(reply);
  EXPECT_EQ((*reply)["error"]["code"], -32700);
  EXPECT_NE((*reply)["error"]["message"].get<std::string>().find("nested deeper"), std::string::npos);
  expectStillServing(*c);
}

// Python nested far beyond what CPython accepts: diagnostics for the rest, no crash.
TEST(BadInput, DeeplyNestedPython) {
  auto c = initialized();
  std::string sum = "x = 1";
  for (int i = 0; i < 15'000; ++i) sum += "+1";
  std::string parens = "y = " + std::string(20'000, '(') + "1" + std::string(20'000, ')');
  std::string chain = "z = a";
  for (int i = 0; i < 20'000; ++i) chain += ".b()";
  int version = 0;
  for (const std::string& text : {sum, parens, chain}) {
    std::string uri = "file:///deep" + std::to_string(++version) + ".py";
    std::string script = "import torch\n" + text + "\nfor x in loader:\n    v = loss.item()\n";
    c->notify("textDocument/didOpen",
              {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", script}}}});
    auto published = c->waitFor(
        [&](const json& m) {
          return m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri;
        },
        60s);
    ASSERT_TRUE(published) << uri << "\n" << c->stderrText();
  }
  expectStillServing(*c);
}

// A process's resident memory in MiB (VmRSS), or -1.
long residentMiB(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) / 1024;
  return -1;
}

// A client that keeps sending requests and reads none of the replies: the server stops reading
// too once it holds a bounded amount, and the client's writes block, instead of the server
// keeping all it is sent (it grew by what it was sent, 1 GB after 1 GB, then crashed). Once the
// client reads again every request is answered and the session ends cleanly.
void expectBackpressure(LspClient& client) {
  client.handshake();
  long before = residentMiB(client.pid());
  // Requests for an unknown method, 64 KiB each, whose error replies name the method (2 KiB): the
  // replies fill the pipe after a few dozen, and the server blocks writing them.
  const std::string method = "sightline/" + std::string(2000, 'm');
  const std::string pad(62u << 10, 'p');
  constexpr int kRequests = 2048;  // 128 MiB
  constexpr int64_t kFirstId = 100'000;
  std::atomic<int> sent{0};
  std::atomic<bool> write_failed{false};
  std::thread writer([&] {
    try {
      for (int i = 0; i < kRequests; ++i) {
        client.send({{"jsonrpc", "2.0"}, {"id", kFirstId + i}, {"method", method}, {"params", {{"pad", pad}}}});
        ++sent;
      }
    } catch (const std::exception&) {
      write_failed = true;
    }
  });
  // Until everything is sent or the writes have stalled for two seconds.
  int last = -1;
  auto still_since = std::chrono::steady_clock::now();
  auto give_up = still_since + 120s;
  while (sent < kRequests && !write_failed && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(100ms);
    if (sent != last) {
      last = sent;
      still_since = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - still_since > 2s) {
      break;
    }
  }
  long held = residentMiB(client.pid());
  long sent_mib = static_cast<long>(sent) * 64 / 1024;
  std::cout << "[ figures  ] " << sent_mib << " MiB sent unread; server RSS " << before << " -> " << held << " MiB\n";
  EXPECT_LT(held - before, 64) << sent_mib << " MiB sent without reading a reply";
  // Reading again: every request answered, then a clean shutdown.
  int answered = 0;
  auto deadline = std::chrono::steady_clock::now() + 300s;
  while (answered < kRequests && !write_failed && std::chrono::steady_clock::now() < deadline) {
    auto m = client.read(10s);
    if (!m) break;
    if (m->contains("id") && (*m)["id"].is_number_integer() && (*m)["id"].get<int64_t>() >= kFirstId) {
      EXPECT_EQ((*m)["error"]["code"], -32601);
      ++answered;
    }
  }
  writer.join();
  EXPECT_FALSE(write_failed) << client.stderrText();
  EXPECT_EQ(answered, kRequests) << client.stderrText();
  int64_t id = client.request("shutdown", nullptr);
  EXPECT_TRUE(client.waitForResponse(id, 30s));
  client.notify("exit", nullptr);
  EXPECT_EQ(client.waitExit(30s), 0) << client.stderrText();
}

// A server whose resident memory says what it holds: in the sanitizer build, freed memory stays
// in ASan's quarantine (256 MiB by default), which a server that handled what it was sent fills.
template <class Spawn>
std::unique_ptr<LspClient> spawnMeasurable(Spawn spawn) {
  const char* old = std::getenv("ASAN_OPTIONS");
  std::string saved = old ? old : "";
  ::setenv("ASAN_OPTIONS", (saved + (saved.empty() ? "" : ":") + "quarantine_size_mb=16").c_str(), 1);
  auto client = spawn();
  old ? ::setenv("ASAN_OPTIONS", saved.c_str(), 1) : ::unsetenv("ASAN_OPTIONS");
  return client;
}

TEST(BadInput, AClientThatDoesNotReadHoldsTheServerBackOverStdio) {
  auto c = spawnMeasurable([] { return LspClient::spawnStdio(); });
  expectBackpressure(*c);
}

TEST(BadInput, AClientThatDoesNotReadHoldsTheServerBackOverTcp) {
  // Bounded before too: its reads run on the io thread, which blocks writing the replies.
  auto c = spawnMeasurable([] { return LspClient::spawnTcp(); });
  expectBackpressure(*c);
}

// A crash leaves a trace on stderr (a backtrace with function names), then the process dies of
// the same signal. Sanitizer builds print their own report instead.
TEST(BadInput, AFatalSignalPrintsABacktrace) {
  auto c = initialized();
  ASSERT_GT(c->pid(), 0);
  ::kill(c->pid(), SIGSEGV);
  c->waitExit(10s);
  std::string err = c->stderrText();
  if (err.find("Sanitizer") != std::string::npos) GTEST_SKIP() << "sanitizer build: its own report";
  EXPECT_NE(err.find("crashed: SIGSEGV"), std::string::npos) << err;
  EXPECT_NE(err.find("backtrace"), std::string::npos) << err;
  EXPECT_NE(err.find("sightline"), std::string::npos) << err;
}

}  // namespace
}  // namespace sightline::testing
