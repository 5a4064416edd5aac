// Soak: the real server over pipes with a real profile loaded, an edit every 20 ms (a
// character typed into a profiled line, then deleted, so the document's size stays the same)
// each followed by a hover and an inlayHint, for a set time. Prints the server's resident set
// at the start, every minute and at the end (it must not grow once the document is stable)
// and latency percentiles.
//   soak_bench PROFILE SCRIPT SECONDS
// e.g. soak_bench build/examples/train_small_naive.sqlite examples/train_small.py 3600
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "bench/lsp_bench.h"
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

// The server's resident set in KiB (VmRSS), 0 when it cannot be read.
long rssKiB(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (status >> key)
    if (key == "VmRSS:") {
      long kb = 0;
      status >> kb;
      return kb;
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: soak_bench PROFILE SCRIPT SECONDS\n");
    return 2;
  }
  std::string profile = fs::absolute(argv[1]).string();
  std::string script = testing::readFile(argv[2]);
  double seconds = std::atof(argv[3]);
  fs::path root = fs::temp_directory_path() / ("sightline-soak-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::ofstream(root / fs::path(argv[2]).filename()) << script;
  std::string uri = server::pathToUri((root / fs::path(argv[2]).filename()).string());
  int line_count = static_cast<int>(std::count(script.begin(), script.end(), '\n'));

  json status;
  auto client = bench::startWithProfile(root.string(), profile, status);
  if (!client) return 1;
  client->notify("textDocument/didOpen",
                 {{"textDocument", {{"uri", uri}, {"languageId", "python"}, {"version", 1}, {"text", script}}}});
  client->waitForNotification("textDocument/publishDiagnostics", std::chrono::seconds(30));
  long rss_start = rssKiB(client->pid());
  std::printf("soak      %s on %s (%d lines) for %.0f s; server RSS at start %ld KiB\n", profile.c_str(), argv[2],
              line_count, seconds, rss_start);
  std::fflush(stdout);

  std::mt19937 rng(1);
  Stats edits, hovers, hints;
  auto roundTrip = [&](const std::string& method, json params, Stats& stats) {
    auto start = Clock::now();
    auto id = client->request(method, std::move(params));
    client->waitForResponse(id, std::chrono::seconds(10));
    stats.add(Clock::now() - start);
  };
  int version = 1;
  int typed_line = 0;  // where the last character was typed (and is deleted next)
  auto t0 = Clock::now();
  auto next_report = t0 + std::chrono::minutes(1);
  for (int i = 0; std::chrono::duration<double>(Clock::now() - t0).count() < seconds; ++i) {
    auto tick = Clock::now();
    // Type into (then delete from) the start of a line; the document size stays stable.
    int line = static_cast<int>(rng() % static_cast<unsigned>(std::max(1, line_count - 1)));
    bool insert = i % 2 == 0;
    if (insert) typed_line = line;
    json change = {{"range", {{"start", position(typed_line, 0)}, {"end", position(typed_line, insert ? 0 : 1)}}},
                   {"text", insert ? "#" : ""}};
    ++version;
    auto start = Clock::now();
    client->notify("textDocument/didChange",
                   {{"textDocument", {{"uri", uri}, {"version", version}}}, {"contentChanges", json::array({change})}});
    client->waitForNotification("textDocument/publishDiagnostics", std::chrono::seconds(10));
    edits.add(Clock::now() - start);
    roundTrip("textDocument/hover", {{"textDocument", {{"uri", uri}}}, {"position", position(line, 4)}}, hovers);
    roundTrip(
        "textDocument/inlayHint",
        {{"textDocument", {{"uri", uri}}}, {"range", {{"start", position(0, 0)}, {"end", position(line_count, 0)}}}},
        hints);
    if (Clock::now() >= next_report) {
      std::printf("  after %4.0f s: RSS %ld KiB, %zu edits\n", std::chrono::duration<double>(Clock::now() - t0).count(),
                  rssKiB(client->pid()), edits.ms.size());
      std::fflush(stdout);
      next_report += std::chrono::minutes(1);
    }
    std::this_thread::sleep_until(tick + std::chrono::milliseconds(20));
  }
  long rss_end = rssKiB(client->pid());
  edits.print("edit -> publishDiagnostics");
  hovers.print("hover");
  hints.print("inlayHint, whole file");
  std::printf("server RSS start %ld KiB, end %ld KiB (%+ld KiB)\n", rss_start, rss_end, rss_end - rss_start);
  client->request("shutdown", nullptr);
  client->notify("exit", nullptr);
  client->waitExit();
  fs::remove_all(root);
  return 0;
}
