// Where tests find their inputs: the repo's tests/data, and ../shared beside the clone
// (third-party scripts and profiles, read in place).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sightline::testing {

std::string testDataPath(const std::string& relative);  // tests/data/<relative>
std::string sourcePath(const std::string& relative);    // <repo>/<relative>
// ../shared/<relative> when present, else nullopt (tests then skip, saying so).
std::optional<std::string> sharedPath(const std::string& relative);
std::string readFile(const std::string& path);
// A profile from ../shared/profiles/<relative> ("x.sqlite.xz" is decompressed once into the
// build tree's profile cache); nullopt when ../shared is absent.
std::optional<std::string> sharedProfile(const std::string& relative);
// A profile of our own under tests/data (decompressed like sharedProfile).
std::string dataProfile(const std::string& relative);
// A tarball under tests/data ("x.tar.xz"), unpacked once into the build tree's cache: its folder.
std::string dataTree(const std::string& relative);
// A profile anywhere in the repo (examples/...), decompressed like sharedProfile.
std::string repoProfile(const std::string& relative);
// Every nsys export under ../shared/profiles, as paths relative to it.
std::vector<std::string> sharedNsysExports();
// Every Kineto trace (.json, .json.gz) under ../shared/profiles, relative to it.
std::vector<std::string> sharedKinetoTraces();
// A file's bytes, gunzipped when it is gzip.
std::string readMaybeGzip(const std::string& path);
std::string binaryPath();  // the built sightline binary ($SIGHTLINE_TEST_BINARY when set)

struct CommandOutput {
  int code = -1;    // exit code
  std::string out;  // stdout and stderr together
};
// Runs the built binary with shell-quoted `args`, from `cwd` when given; with `timeout_seconds`,
// killed after that long (exit code 124).
CommandOutput runSightline(const std::string& args, const std::string& cwd = "", int timeout_seconds = 0);

}  // namespace sightline::testing

namespace sightline::testing {
// True when the CI variable is set: CI always has ../shared, so a missing file there is a
// broken path, not a developer machine without it.
bool runningInCi();
}  // namespace sightline::testing

// When ../shared is absent: skips with a clear message on a developer's machine, fails in CI.
#define SIGHTLINE_SKIP_WITHOUT_SHARED(what)                                                         \
  do {                                                                                              \
    if (::sightline::testing::runningInCi()) FAIL() << (what) << " is absent, and CI must have it"; \
    GTEST_SKIP() << (what) << " is absent: clone the repo with ../shared beside it to run this";    \
  } while (0)

#define SIGHTLINE_REQUIRE_PROFILE(var, relative)                                                \
  auto var##_opt = ::sightline::testing::sharedProfile(relative);                               \
  if (!var##_opt) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles/" + std::string(relative)); \
  const std::string var = *var##_opt

#define SIGHTLINE_REQUIRE_SHARED(var, relative)                                        \
  auto var##_opt = ::sightline::testing::sharedPath(relative);                         \
  if (!var##_opt) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/" + std::string(relative)); \
  const std::string var = *var##_opt
