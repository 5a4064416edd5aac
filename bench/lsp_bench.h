// Shared by the benchmarks that drive the real server over pipes (lsp_latency_bench,
// soak_bench): latency percentiles and a server started with a profile loaded.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"

namespace sightline::bench {

using Clock = std::chrono::steady_clock;

struct Stats {
  std::vector<double> ms;
  void add(Clock::duration d) { ms.push_back(std::chrono::duration<double, std::milli>(d).count()); }
  double pct(double p) {
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? 0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size())))];
  }
  void print(const char* what) {
    std::printf("%-34s n=%-6zu p50 %7.3f ms   p99 %7.3f ms   max %8.3f ms\n", what, ms.size(), pct(0.5), pct(0.99),
                pct(1.0));
  }
};

inline testing::json position(int line, int character) { return {{"line", line}, {"character", character}}; }

// `sightline serve ARGS` (by default `--diagnostics-delay-ms 0`) with `profile` in the `profiles`
// setting and `root` as the workspace, once its status says the profile is loaded; nullptr after
// printing why not. `status` receives that status notification.
inline std::unique_ptr<testing::LspClient> startWithProfile(const std::string& root, const std::string& profile,
                                                            testing::json& status,
                                                            const std::vector<std::string>& args = {
                                                                "--diagnostics-delay-ms", "0"}) {
  using testing::json;
  auto client = testing::LspClient::spawnStdio(args);
  auto init = client->request("initialize", {{"processId", nullptr},
                                             {"rootUri", server::pathToUri(root)},
                                             {"capabilities",
                                              {{"workspace", {{"inlayHint", {{"refreshSupport", true}}}}},
                                               {"textDocument", {{"publishDiagnostics", {{"versionSupport", true}}}}}}},
                                             {"initializationOptions", {{"settings", {{"profiles", {profile}}}}}}});
  client->waitForResponse(init, std::chrono::seconds(30));
  client->notify("initialized", json::object());
  // The first status may be for the workspace discovery that settings then replace.
  auto loaded = client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "sightline/profileStatus" && m["params"].value("loaded", false);
      },
      std::chrono::seconds(600));
  if (!loaded) {
    std::fprintf(stderr, "profile did not load\n%s\n", client->stderrText().c_str());
    return nullptr;
  }
  status = *loaded;
  return client;
}

}  // namespace sightline::bench
