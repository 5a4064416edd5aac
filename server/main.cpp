// The sightline binary: picks the verb (server/cli/: serve, check, report, capture, diff).
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/source/source_file.h"
#include "server/cli/capture_command.h"
#include "server/cli/check_command.h"
#include "server/cli/diff_command.h"
#include "server/cli/mcp_command.h"
#include "server/cli/report_command.h"
#include "server/cli/serve_command.h"
#include "server/platform/allocator.h"
#include "server/platform/child_process.h"
#include "server/platform/crash_handler.h"
#include "server/platform/terminal_text.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace {

using namespace sightline::server;

constexpr const char* kMainUsage =
    "usage: sightline <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  serve    run the language server (LSP over stdio, or --listen HOST:PORT)\n"
    "  check    print GPU-performance diagnostics of Python files (text, json, sarif)\n"
    "  report   put the GPU time of a profile (nsys export) on the lines of Python files\n"
    "  capture  run a training command, time its steps without a profiler, then profile a few\n"
    "  diff     compare two runs step by step and line by line; --fail-on gates CI\n"
    "  mcp      serve the joined profile to coding agents (Model Context Protocol over stdio)\n"
    "\n"
    "sightline --version prints the version; sightline <verb> --help explains a verb.\n";

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator(argv);  // first: it may restart the binary
  installCrashHandler();
  // Ctrl-C, SIGTERM or SIGHUP during an `nsys export` (report, serve) left it running, and its
  // log in the cache: they now end the export and remove its files first.
  cleanUpOnTerminationSignals();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::string problem = sightline::source::checkGrammarCompatibility(); !problem.empty()) {
    std::cerr << "sightline: " << problem << "\n";
    return 3;
  }
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kMainUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version" || args[0] == "version") {
    std::cout << "sightline " << SIGHTLINE_VERSION << "\n";
    return 0;
  }
  std::string verb = args[0];
  args.erase(args.begin());
  if (verb == "serve") return runServeCommand(args, std::cout, std::cerr);
  if (verb == "mcp") return runMcpCommand(args, std::cout, std::cerr);
  int code = 2;
  {
    // Every message of a verb may quote a profile, a summary or nsys's log: escaped for the
    // terminal (their standard output is escaped where it is text, by the verb).
    TerminalSafeStream err(std::cerr);
    if (verb == "check")
      code = runCheckCommand(args, std::cout, err);
    else if (verb == "report")
      code = runReportCommand(args, std::cout, err);
    else if (verb == "capture")
      code = runCaptureCommand(args, std::cout, err);
    else if (verb == "diff")
      code = runDiffCommand(args, std::cout, err);
    else
      err << "sightline: unknown verb \"" << verb << "\"\n" << kMainUsage;
  }
  // What a verb printed and could not be written (a full disk, a closed pipe) is an error,
  // never a truncated output with exit 0.
  errno = 0;
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "sightline " << verb << ": cannot write to standard output"
              << (errno ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
    return code == 0 || code == 1 ? 2 : code;
  }
  return code;
}
