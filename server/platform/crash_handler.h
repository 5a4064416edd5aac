// A crash leaves a trace: on a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) the
// process prints what happened and a backtrace to stderr (function names from the binary's
// exported symbols), then dies of the same signal, so an editor's log and a bug report carry
// it. Runs on its own signal stack, so a stack overflow is reported too. Not installed in
// sanitizer builds, whose own reports are better.
#pragma once

namespace sightline::server {

void installCrashHandler();

}  // namespace sightline::server
