// What reading torch.compile's generated code adds to a profile's load (the join's attribution
// included): the same capture loaded and joined with and without its Inductor cache, the best
// of several runs each. The code is read as the server reads it, while the profile loads:
// "load" includes that overlap, "read" is what is left after the load. Prints figures; asserts
// nothing.
//   compiled_bench PROFILE.sqlite CACHE_OR_TRACE_DIR [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "server/workspace/compiled_code.h"

namespace {

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Run {
  double load = 0, code = 0, join = 0;
  uint64_t mapped = 0, stacks = 0, calls = 0, mapped_calls = 0;
};

Run once(const std::string& profile, const std::string& dir) {
  Run r;
  auto t0 = std::chrono::steady_clock::now();
  // As the server and the verbs read it: the named folder, on a thread of its own while the
  // profile loads, then only the modules the profile ran.
  std::unique_ptr<sightline::server::CompiledCodeReader> reader;
  if (!dir.empty()) {
    sightline::server::CompiledCodeSearch search;
    search.named = {dir};
    search.default_cache = false;
    reader = std::make_unique<sightline::server::CompiledCodeReader>(std::move(search));
  }
  sightline::ingest::LoadOptions load;
  if (reader) load.names_read = reader->namesRead();
  auto loaded = sightline::ingest::loadProfile(profile, load);
  if (!loaded.profile) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    std::exit(1);
  }
  auto t1 = std::chrono::steady_clock::now();
  sightline::join::JoinOptions options;
  if (reader) options.compiled = reader->finish(*loaded.profile);
  auto t2 = std::chrono::steady_clock::now();
  sightline::join::ProfileJoin join(std::move(*loaded.profile), {}, options);
  auto t3 = std::chrono::steady_clock::now();
  r.load = seconds(t0, t1), r.code = seconds(t1, t2), r.join = seconds(t2, t3);
  r.mapped = join.compiled().mapped_marks, r.stacks = join.compiled().generated_marks;
  r.mapped_calls = join.compiled().mapped_calls, r.calls = join.compiled().generated_calls;
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
    with.calls = b.calls, with.mapped_calls = b.mapped_calls;
  }
  double base = plain.load + plain.join, total = with.load + with.code + with.join;
  std::printf("profile          %s\n", argv[1]);
  std::printf("generated code   %s\n", argv[2]);
  std::printf("without the code load %.2f ms + join %.2f ms = %.2f ms\n", 1e3 * plain.load, 1e3 * plain.join,
              1e3 * base);
  std::printf("with the code    load %.2f ms + read (rest) %.2f ms + join %.2f ms = %.2f ms\n", 1e3 * with.load,
              1e3 * with.code, 1e3 * with.join, 1e3 * total);
  std::printf("added            %.2f ms = %.1f%% of the load (best of %d runs)\n", 1e3 * (total - base),
              100.0 * (total - base) / base, runs);
  std::printf("stacks mapped    %llu of %llu through generated code\n", static_cast<unsigned long long>(with.mapped),
              static_cast<unsigned long long>(with.stacks));
  std::printf("calls mapped     %llu of %llu traced calls of generated code\n",
              static_cast<unsigned long long>(with.mapped_calls), static_cast<unsigned long long>(with.calls));
  return 0;
}
