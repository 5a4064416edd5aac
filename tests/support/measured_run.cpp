// The binary run under limits, measured.
#include "tests/support/measured_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

bool sanitizedBuild() { return kSanitized; }

Measured runMeasured(const std::vector<std::string>& args, const std::string& cwd, int seconds) {
  std::string binary = binaryPath(), out_path = cwd + "/measured.out";
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  Measured m;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || chdir(cwd.c_str()) != 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
    if (!kSanitized) {
      rlimit limit{uint64_t{4} << 30, uint64_t{4} << 30};
      setrlimit(RLIMIT_AS, &limit);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return m;
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, WNOHANG, &usage) != pid) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(seconds) && !m.killed) {
      kill(pid, SIGKILL);
      m.killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  m.max_rss_kb = usage.ru_maxrss;
  m.out = readFile(out_path);
  return m;
}

}  // namespace sightline::testing
