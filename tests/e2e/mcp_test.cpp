// The MCP server (server/mcp) in process over the bundled example and its capture: the
// protocol's lifecycle and its errors, a tool call that waits for the load, figures against
// `report --format json`, the settings as VS Code's settings file gives them, and hostile tool
// input as tool errors. (editors/vscode/test/mcp.mjs drives the binary with the MCP SDK's client
// over every tool and several captures.)
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server/cli/mcp_command.h"
#include "server/mcp/mcp_server.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/test_paths.h"

namespace sightline::server::mcp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

// An McpServer over `root`, fed one line at a time.
class Harness {
 public:
  explicit Harness(const std::string& root, json settings = nullptr) {
    McpOptions options;
    options.root = root;
    options.max_message_bytes = 1 << 16;
    server_ = std::make_unique<McpServer>(
        io_, [this](const std::string& line) { answers_.push_back(line); }, options, std::move(settings));
    server_->start();
  }
  // Sends `line` and runs until `expected` more answers came (or 120 s passed).
  std::vector<json> send(const std::string& line, size_t expected = 1) {
    size_t before = answers_.size();
    server_->onLine(line);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (answers_.size() < before + expected && std::chrono::steady_clock::now() < deadline)
      io_.run_one_for(std::chrono::milliseconds(100));
    io_.poll();
    std::vector<json> out;
    for (size_t i = before; i < answers_.size(); ++i) {
      EXPECT_EQ(answers_[i].find('\n'), std::string::npos) << "one message per line";
      out.push_back(json::parse(answers_[i]));
    }
    return out;
  }
  json request(const std::string& method, json params = json::object()) {
    json m = {{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", std::move(params)}};
    auto got = send(m.dump());
    EXPECT_EQ(got.size(), 1u) << method;
    return got.empty() ? json() : got.front();
  }
  json initialize(const std::string& version = "2025-11-25") {
    return request("initialize", {{"protocolVersion", version},
                                  {"capabilities", json::object()},
                                  {"clientInfo", {{"name", "test"}, {"version", "1"}}}});
  }
  json tool(const std::string& name, json arguments = json::object()) {
    return request("tools/call", {{"name", name}, {"arguments", std::move(arguments)}})["result"];
  }
  const McpServer& server() const { return *server_; }

 private:
  boost::asio::io_context io_;
  // Keeps the context from stopping when it runs out of work (poll) while a load runs.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ = boost::asio::make_work_guard(io_);
  std::vector<std::string> answers_;
  std::unique_ptr<McpServer> server_;
  int id_ = 0;
};

// The example script and its capture (with its steps file), as a user's folder holds them.
void exampleWorkspace(const ScratchDir& dir) {
  fs::copy_file(testing::sourcePath("examples/train_small.py"), dir / "train_small.py");
  fs::copy_file(testing::repoProfile("examples/train_small_capture.sqlite.xz"), dir / "train_small_capture.sqlite");
  fs::copy_file(testing::sourcePath("examples/train_small_capture.steps.json"), dir / "train_small_capture.steps.json");
}

TEST(Mcp, LifecycleAndProtocolErrors) {
  ScratchDir dir("mcp_lifecycle");
  Harness h(dir.path().string());
  // Before initialize only initialize and ping are answered.
  EXPECT_EQ(h.request("tools/list")["error"]["code"], -32600);
  EXPECT_EQ(h.request("ping")["result"], json::object());
  json init = h.initialize("2025-06-18");
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18") << "a revision it speaks is the one asked for";
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "sightline");
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(h.initialize("1999-01-01")["result"]["protocolVersion"], "2025-11-25") << "else the newest";
  // Notifications and responses get no answer.
  EXPECT_TRUE(h.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", 0).empty());
  EXPECT_TRUE(h.send(R"({"jsonrpc":"2.0","id":77,"result":{}})", 0).empty());
  auto parse_error = h.send("{not json");
  ASSERT_EQ(parse_error.size(), 1u);
  EXPECT_EQ(parse_error[0]["error"]["code"], -32700);
  EXPECT_TRUE(parse_error[0]["id"].is_null());
  EXPECT_EQ(h.send(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])")[0]["error"]["code"], -32600) << "no batches";
  EXPECT_EQ(h.send(std::string(70'000, ' ') + "{}")[0]["error"]["code"], -32600) << "over the size limit";
  EXPECT_EQ(h.send(std::string(5000, '[') + std::string(5000, ']'))[0]["error"]["code"], -32700) << "too deep";
  EXPECT_EQ(h.request("no/such/method")["error"]["code"], -32601);
  EXPECT_EQ(h.request("tools/call", {{"arguments", json::object()}})["error"]["code"], -32602) << "no tool name";
  EXPECT_EQ(h.request("resources/read", {{"uri", "file:///etc/passwd"}})["error"]["code"], -32002);
  json list = h.request("tools/list")["result"]["tools"];
  ASSERT_EQ(list.size(), 8u);
  for (const auto& t : list) {
    EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
    EXPECT_EQ(t["annotations"]["readOnlyHint"], true) << t["name"];
  }
  // No profile in the folder: the tools say so, and how to make one.
  json verdict = h.tool("step_verdict");
  EXPECT_TRUE(verdict["isError"]);
  EXPECT_NE(verdict["content"][0]["text"].get<std::string>().find("sightline capture"), std::string::npos) << verdict;
}

TEST(Mcp, ACallWaitsForTheLoadAndItsFiguresAreTheReports) {
  ScratchDir dir("mcp_figures");
  exampleWorkspace(dir);
  Harness h(dir.path().string());
  h.initialize();
  // Asked at once: answered when the load is done, from it.
  json verdict = h.tool("step_verdict");
  ASSERT_FALSE(verdict["isError"]) << verdict;
  auto run = testing::runSightline("report --format json --profile train_small_capture.sqlite train_small.py",
                                   dir.path().string());
  ASSERT_EQ(run.code, 0) << run.out;
  json report = json::parse(run.out);
  const json& v = report["verdict"];
  const json& got = verdict["structuredContent"];
  for (const char* key : {"bound", "captured_bound", "wall_ns", "unprofiled_wall_ns", "capture_overhead_ns"})
    EXPECT_EQ(got[key], v[key]) << key;
  ASSERT_EQ(got["causes"].size(), v["causes"].size());
  for (size_t i = 0; i < v["causes"].size(); ++i) {
    EXPECT_EQ(got["causes"][i]["ns_per_step"], v["causes"][i]["ns_per_step"]);
    EXPECT_EQ(got["causes"][i]["lines"][0]["ns"], v["causes"][i]["lines"][0]["ns"]);
    EXPECT_EQ(got["causes"][i]["lines"][0]["path"], "train_small.py") << "paths relative to the workspace";
  }
  std::string text = verdict["content"][0]["text"];
  EXPECT_NE(text.find("Try"), std::string::npos) << text;
  EXPECT_NE(text.find("for step, (x, y) in enumerate(loader):"), std::string::npos) << "the lines' source";

  json cost = h.tool("line_cost", {{"path", "train_small.py:109"}});
  ASSERT_FALSE(cost["isError"]) << cost;
  const json* line = nullptr;
  for (const auto& f : report["files"])
    for (const auto& l : f["lines"])
      if (l["line"] == 109) line = &l;
  ASSERT_NE(line, nullptr);
  EXPECT_EQ(cost["structuredContent"]["cost"], *line) << "the report's line, field for field";
  bool sync_rule = false;
  for (const auto& r : cost["structuredContent"]["rules"]) sync_rule = sync_rule || r["code"] == "sync-in-loop";
  EXPECT_TRUE(sync_rule) << cost["structuredContent"]["rules"];
  ASSERT_FALSE(cost["structuredContent"]["fixes"].empty());
  const json& edit = cost["structuredContent"]["fixes"][0]["edits"][0];
  EXPECT_TRUE(edit.contains("old_text") && edit.contains("new_text")) << edit;

  json resources = h.request("resources/list")["result"]["resources"];
  ASSERT_FALSE(resources.empty());
  EXPECT_EQ(resources[0]["uri"], "sightline://annotated/train_small.py");
  json read = h.request("resources/read", {{"uri", resources[0]["uri"]}});
  EXPECT_NE(read["result"]["contents"][0]["text"].get<std::string>().find("loss.item()"), std::string::npos);
}

TEST(Mcp, HostileToolInputIsAToolError) {
  ScratchDir dir("mcp_hostile");
  exampleWorkspace(dir);
  fs::create_directory_symlink("/etc", dir.path() / "etc");
  Harness h(dir.path().string());
  h.initialize();
  struct Case {
    const char* tool;
    json arguments;
    const char* says;
  };
  const Case cases[] = {
      {"line_cost", {{"path", "../../../../etc/passwd"}, {"line", 1}}, "outside the workspace"},
      {"line_cost", {{"path", "etc/passwd"}, {"line", 1}}, "outside the workspace"},
      {"line_cost", {{"path", std::string("train_small.py\0x", 16)}, {"line", 1}}, "NUL"},
      {"top_lines", {{"n", 1ull << 62}}, "from 1 to 200"},
      {"top_lines", {{"n", json::array()}}, "whole number"},
      {"top_lines", {{"pass", "sideways"}}, "one of all, forward, backward"},
      {"ranks", {{"n", 0}}, "from 1 to 1000"},
      {"capture_command", {{"script", "/bin/sh"}}, "outside the workspace"},
      {"compare", {{"baseline", "missing.json"}}, "no such file"},
      {"oom", {{"n", 3}, {"x", 1}}, "unknown argument"},
  };
  for (const auto& c : cases) {
    json r = h.tool(c.tool, c.arguments);
    EXPECT_TRUE(r["isError"]) << c.tool << " " << c.arguments;
    EXPECT_NE(r["content"][0]["text"].get<std::string>().find(c.says), std::string::npos)
        << c.tool << ": " << r["content"][0]["text"];
  }
  json wrong = h.request("tools/call", {{"name", "top_lines"}, {"arguments", json::array({1})}});
  EXPECT_EQ(wrong["error"]["code"], -32602) << "arguments that are no object: the params are invalid";
  EXPECT_FALSE(h.tool("top_lines", {{"n", 1}})["isError"]) << "still answering";
}

TEST(Mcp, SettingsComeFromTheFoldersVsCodeSettings) {
  json s = sightlineSettingsOf(R"({
    // comments, as VS Code writes them
    "editor.tabSize": 4,
    "sightline.profiles": ["runs/*.sqlite"],
    "sightline.hints.enabled": false,
    "sightline": {"allSteps": true}
  })");
  EXPECT_EQ(s["profiles"], json::array({"runs/*.sqlite"}));
  EXPECT_EQ(s["hints"]["enabled"], false);
  EXPECT_EQ(s["allSteps"], true);
  EXPECT_TRUE(sightlineSettingsOf(R"({"editor.tabSize": 4})").is_null());
  EXPECT_TRUE(sightlineSettingsOf("not json").is_null());

  // A `profiles` setting that names no profile: the tools say the load's error.
  ScratchDir dir("mcp_settings");
  exampleWorkspace(dir);
  Harness h(dir.path().string(), {{"profiles", json::array({"runs/*.sqlite"})}});
  h.initialize();
  json verdict = h.tool("step_verdict");
  EXPECT_TRUE(verdict["isError"]) << verdict;
  EXPECT_EQ(h.server().workspace().profile(), nullptr);
}

TEST(Mcp, ACompareWithSummarySettingStillLoadsTheProfile) {
  // compareWith naming a rank summary (the CI artifact) once stopped the profile's own load.
  ScratchDir dir("mcp_compare_setting");
  exampleWorkspace(dir);
  auto made = testing::runSightline(
      "report --format summary --profile train_small_capture.sqlite -o base.summary.json train_small.py",
      dir.path().string());
  ASSERT_EQ(made.code, 0) << made.out;
  Harness h(dir.path().string(), {{"compareWith", "base.summary.json"}});
  h.initialize();
  json verdict = h.tool("step_verdict");
  ASSERT_FALSE(verdict["isError"]) << verdict;
  json cmp = h.tool("compare");
  ASSERT_FALSE(cmp["isError"]) << cmp;
  EXPECT_EQ(cmp["structuredContent"]["step"]["delta_ns"], 0) << "the same run: no change";
}

TEST(Mcp, ANewerCaptureIsLoadedBeforeTheNextAnswer) {
  ScratchDir dir("mcp_newer");
  exampleWorkspace(dir);
  Harness h(dir.path().string());
  h.initialize();
  json first = h.tool("step_verdict");
  ASSERT_FALSE(first["isError"]);
  EXPECT_EQ(first["structuredContent"]["profile"], "train_small_capture.sqlite");
  // The agent ran capture_command: a newer profile is in the workspace (the naive variant's).
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // the walk runs once every 2 s at most
  fs::copy_file(testing::repoProfile("examples/train_small_naive.sqlite.xz"), dir / "newer.sqlite");
  json second = h.tool("step_verdict");
  ASSERT_FALSE(second["isError"]) << second;
  EXPECT_EQ(second["structuredContent"]["profile"], "newer.sqlite");
}

// A job of two ranks' reports, the second rank's written last: the run loads once, and the
// walk before the next answer finds nothing newer (it once compared the newest file with the
// run's first report, rank 0's, and loaded the run again before every answer).
TEST(Mcp, ARunOfRanksLoadsOnceWhenItsLaterRankIsTheNewest) {
  ScratchDir dir("mcp_ranks");
  fs::copy_file(testing::dataProfile("multi/ddp/ddp_rank0.sqlite.xz"), dir / "ddp_rank0.sqlite");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  fs::copy_file(testing::dataProfile("multi/ddp/ddp_rank1.sqlite.xz"), dir / "ddp_rank1.sqlite");
  Harness h(dir.path().string());
  h.initialize();
  json first = h.tool("ranks");
  ASSERT_FALSE(first["isError"]) << first;
  const auto* loaded = h.server().workspace().profile();
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->parts.size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // the walk runs once every 2 s at most
  json second = h.tool("ranks");
  ASSERT_FALSE(second["isError"]) << second;
  EXPECT_EQ(h.server().workspace().profile(), loaded) << "the same load: nothing newer was found";
}

TEST(Mcp, AScriptInASubfolderIsFoundAndEditsMoveItsLines) {
  ScratchDir dir("mcp_subfolder");
  fs::create_directories(dir.path() / "train");
  fs::create_directories(dir.path() / "runs");
  fs::copy_file(testing::sourcePath("examples/train_small.py"), dir / "train/train_small.py");
  fs::copy_file(testing::repoProfile("examples/train_small_capture.sqlite.xz"), dir / "runs/capture.sqlite");
  Harness h(dir.path().string());
  h.initialize();
  json top = h.tool("top_lines", {{"n", 1}});
  ASSERT_FALSE(top["isError"]) << top;
  const json& line = top["structuredContent"]["lines"][0];
  EXPECT_EQ(line["path"], "train/train_small.py") << "the profile's path, mapped onto the workspace's file";
  EXPECT_EQ(line["text"], "return F.relu(self.bn(self.conv(x)))");
  int64_t at = line["line"];
  // The agent inserts a line above it: the same line is one further down, its figures with it.
  std::string text = testing::readFile(dir / "train/train_small.py");
  text.insert(0, "import math  # an agent's edit\n");
  std::ofstream(dir / "train/train_small.py", std::ios::binary) << text;
  json cost = h.tool("line_cost", {{"path", "train/train_small.py"}, {"line", at + 1}});
  ASSERT_FALSE(cost["isError"]) << cost;
  EXPECT_EQ(cost["structuredContent"]["profiled_line"], at);
  EXPECT_EQ(cost["structuredContent"]["cost"]["gpu_ns"], line["gpu_ns"]);
  json added = h.tool("line_cost", {{"path", "train/train_small.py:1"}});
  EXPECT_TRUE(added["structuredContent"]["cost"].is_null()) << "the edited line has no figure";
  // A second edit further down, and Windows line endings: still one line further down.
  text = testing::readFile(dir / "train/train_small.py");
  text += "# a second edit at the end\n";
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  std::ofstream(dir / "train/train_small.py", std::ios::binary | std::ios::trunc) << crlf;
  json moved = h.tool("top_lines", {{"n", 1}});
  EXPECT_EQ(moved["structuredContent"]["lines"][0]["line"], at + 1);
  EXPECT_EQ(moved["structuredContent"]["changed_since_profile"], json::array({"train/train_small.py"}));
  json command = h.tool("capture_command");
  EXPECT_EQ(command["structuredContent"]["command"],
            "sightline capture -o sightline-capture -- python train/train_small.py");
}

}  // namespace
}  // namespace sightline::server::mcp
