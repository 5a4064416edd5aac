// What reading torch.compile's generated code adds to a profile's load (the join's attribution
// included): the same capture loaded and joined with and without its Inductor cache, the best
// of several runs each. Prints figures; asserts nothing.
//   compiled_bench PROFILE.sqlite CACHE_OR_TRACE_DIR [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "server/compiled_code.h"

namespace {

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Run {
  double load = 0, code = 0, join = 0;
  uint64_t mapped = 0, stacks = 0;
};

Run once(const std::string& profile, const std::string& dir) {
  Run r;
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = sightline::ingest::loadProfile(profile);
  if (!loaded.profile) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    std::exit(1);
  }
  auto t1 = std::chrono::steady_clock::now();
  sightline::join::JoinOptions options;
  if (!dir.empty()) {
    // As the server and the verbs look for it: the named folder, the modules the profile ran.
    sightline::server::CompiledCodeSearch search;
    search.named = {dir};
    search.default_cache = false;
    options.compiled = sightline::server::findCompiledCode(*loaded.profile, search);
  }
  auto t2 = std::chrono::steady_clock::now();
  sightline::join::ProfileJoin join(std::move(*loaded.profile), {}, options);
  auto t3 = std::chrono::steady_clock::now();
  r.load = seconds(t0, t1), r.code = seconds(t1, t2), r.join = seconds(t2, t3);
  r.mapped = join.compiled().mapped_marks, r.stacks = join.compiled().generated_marks;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: compiled_bench PROFILE.sqlite CACHE_OR_TRACE_DIR [RUNS]\n");
    return 2;
  }
  int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  Run plain{1e9, 1e9, 1e9}, with{1e9, 1e9, 1e9};
  for (int i = 0; i < runs; ++i) {
    Run a = once(argv[1], ""), b = once(argv[1], argv[2]);
    plain.load = std::min(plain.load, a.load), plain.join = std::min(plain.join, a.join), plain.code = 0;
    with.load = std::min(with.load, b.load), with.code = std::min(with.code, b.code);
    with.join = std::min(with.join, b.join), with.mapped = b.mapped, with.stacks = b.stacks;
  }
  double base = plain.load + plain.join, total = with.load + with.code + with.join;
  std::printf("profile          %s\n", argv[1]);
  std::printf("generated code   %s\n", argv[2]);
  std::printf("without the code load %.3f s + join %.3f s = %.3f s\n", plain.load, plain.join, base);
  std::printf("with the code    load %.3f s + read %.3f s + join %.3f s = %.3f s\n", with.load, with.code, with.join,
              total);
  std::printf("added            %.3f s = %.1f%% of the load (best of %d runs)\n", total - base,
              100.0 * (total - base) / base, runs);
  std::printf("stacks mapped    %llu of %llu through generated code\n", static_cast<unsigned long long>(with.mapped),
              static_cast<unsigned long long>(with.stacks));
  return 0;
}
