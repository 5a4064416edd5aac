// Fatal-signal handler: async-signal-safe writes and backtrace_symbols_fd only.
#include "server/platform/crash_handler.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace sightline::server {
namespace {

void writeText(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory access)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic error)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "a fatal signal";
  }
}

[[maybe_unused]] void onFatalSignal(int sig) {
  writeText("\nsightline " SIGHTLINE_VERSION " crashed: ");
  writeText(signalName(sig));
  writeText("\nbacktrace (innermost first):\n");
  void* frames[64];
  int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  writeText("Please report this with the backtrace above and, if you can, the file that was open.\n");
  // Die of the same signal (the default action), so the parent sees what happened.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void installCrashHandler() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return;
#else
  // The handler's own stack: a stack overflow leaves no room on the thread's stack.
  static char alternate_stack[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  // backtrace() loads libgcc on first use, which is not safe inside a handler: load it now.
  void* warm[1];
  backtrace(warm, 1);
  struct sigaction action {};
  action.sa_handler = onFatalSignal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &action, nullptr);
#endif
}

}  // namespace sightline::server
