// Editor latency of the real server over pipes, with a large profile loaded: hover and
// inlayHint round trips (p50/p99) on a 10,000-line script, and edit -> publishDiagnostics.
//   lsp_latency_bench PROFILE [ITERATIONS]
// PROFILE is an nsys export of train_small.py (the ×N copies of scale_nsys_profile); the
// script is our profiled train_small.py repeated to 10,000+ lines (the profile's lines fall on
// the first copy), placed in a temporary workspace as train_small.py. The server runs with
// --diagnostics-delay-ms 0 so the first edit figure is the server's work, not the debounce;
// then a second server with its default (adaptive) debounce gives the end-to-end figure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "bench/lsp_bench.h"
#include "bench/scaled_script.h"
#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace {

using namespace sightline;
using bench::Clock;
using bench::position;
using bench::Stats;
using testing::json;
namespace fs = std::filesystem;

// Types a character into an identifier in the middle of the file (`loss` -> `lloss`), then
// deletes it, `count` times; waits for each version's diagnostics.
Stats measureEdits(testing::LspClient& client, const std::string& uri, const std::string& script, int count,
                   int version) {
  Stats edits;
  size_t at = script.find("loss = train_step", script.size() / 2);
  int mid = static_cast<int>(std::count(script.begin(), script.begin() + static_cast<long>(at), '\n'));
  int column = static_cast<int>(at - script.rfind('\n', at) - 1);
  for (int i = 0; i < count; ++i) {
    bool insert = i % 2 == 0;
    json change = {{"range", {{"start", position(mid, column)}, {"end", position(mid, insert ? column : column + 1)}}},
                   {"text", insert ? "l" : ""}};
    ++version;
    auto start = Clock::now();
    client.notify("textDocument/didChange",
                  {{"textDocument", {{"uri", uri}, {"version", version}}}, {"contentChanges", json::array({change})}});
    auto published = client.waitFor(
        [&](const json& m) {
          return m.value("method", "") == "textDocument/publishDiagnostics" &&
                 m["params"].value("version", -1) == version;
        },
        std::chrono::seconds(10));
    if (!published) {
      std::fprintf(stderr, "no diagnostics for version %d\n", version);
      break;
    }
    edits.add(Clock::now() - start);
  }
  return edits;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lsp_latency_bench PROFILE [ITERATIONS]\n");
    return 2;
  }
  std::string profile = fs::absolute(argv[1]).string();
  int iterations = argc > 2 ? std::atoi(argv[2]) : 1000;
  fs::path root = fs::temp_directory_path() / ("sightline-latency-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::string script = bench::scaledTrainScript(10000, /*keep_first=*/true);
  int line_count = static_cast<int>(std::count(script.begin(), script.end(), '\n'));
  std::ofstream(root / "train_small.py") << script;
  std::string uri = server::pathToUri((root / "train_small.py").string());

  auto t0 = Clock::now();
  json status;
  auto client = bench::startWithProfile(root.string(), profile, status);
  if (!client) return 1;
  double load_s = std::chrono::duration<double>(Clock::now() - t0).count();
  client->notify("textDocument/didOpen",
                 {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", script}}}});
  client->waitForNotification("textDocument/publishDiagnostics", std::chrono::seconds(30));
  const json& st = status["params"];
  std::printf("profile   %s\n          loaded in %.1f s (server start to status): %s\n", profile.c_str(), load_s,
              st.dump().substr(0, 300).c_str());
  std::printf("script    %d lines, %zu bytes\n\n", line_count, script.size());

  std::mt19937 rng(1);
  auto roundTrip = [&](const std::string& method, json params, Stats& stats) {
    auto start = Clock::now();
    auto id = client->request(method, std::move(params));
    auto r = client->waitForResponse(id, std::chrono::seconds(10));
    stats.add(Clock::now() - start);
    return r ? (*r)["result"] : json();
  };
  Stats hover_hot, hover_any, hints_hot, hints_any;
  size_t hot_cards = 0, hint_count = 0;
  for (int i = 0; i < iterations; ++i) {
    int hot = 20 + static_cast<int>(rng() % 100);  // lines of the profiled copy
    auto card =
        roundTrip("textDocument/hover", {{"textDocument", {{"uri", uri}}}, {"position", position(hot, 10)}}, hover_hot);
    hot_cards += card.is_object();
    int any = static_cast<int>(rng() % static_cast<unsigned>(line_count));
    roundTrip("textDocument/hover", {{"textDocument", {{"uri", uri}}}, {"position", position(any, 10)}}, hover_any);
    // A screenful of lines, as editors ask for the visible range.
    int first = static_cast<int>(rng() % 60);
    auto hints = roundTrip("textDocument/inlayHint",
                           {{"textDocument", {{"uri", uri}}},
                            {"range", {{"start", position(first, 0)}, {"end", position(first + 60, 0)}}}},
                           hints_hot);
    hint_count += hints.size();
    int start = static_cast<int>(rng() % static_cast<unsigned>(line_count - 60));
    roundTrip("textDocument/inlayHint",
              {{"textDocument", {{"uri", uri}}},
               {"range", {{"start", position(start, 0)}, {"end", position(start + 60, 0)}}}},
              hints_any);
  }
  hover_hot.print("hover, profiled lines");
  hover_any.print("hover, any line");
  hints_hot.print("inlayHint, 60 lines, profiled copy");
  hints_any.print("inlayHint, 60 lines, anywhere");
  std::printf("  (%zu of %d hovers on profiled lines had a card; %.1f hints per profiled window)\n", hot_cards,
              iterations, static_cast<double>(hint_count) / iterations);

  measureEdits(*client, uri, script, std::max(20, iterations / 5), 1).print("edit -> publishDiagnostics");
  client->request("shutdown", nullptr);
  client->notify("exit", nullptr);
  client->waitExit();

  // The same edits end to end as users get them: the server's own (adaptive) debounce.
  client = bench::startWithProfile(root.string(), profile, status, {});
  if (!client) return 1;
  client->notify("textDocument/didOpen",
                 {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", script}}}});
  client->waitForNotification("textDocument/publishDiagnostics", std::chrono::seconds(30));
  measureEdits(*client, uri, script, std::max(20, iterations / 5), 1).print("edit -> diagnostics (debounced)");
  client->request("shutdown", nullptr);
  client->notify("exit", nullptr);
  client->waitExit();
  fs::remove_all(root);
  return 0;
}
