// What ends a capture's command when sightline itself is killed (SIGKILL, a crash: nothing of
// sightline runs then). A process forked before the command starts, in a group of its own, that
// ignores the terminal's signals and watches a socket from sightline: told the command's group,
// that the command ended and that the steps file is written. When it closes before
// sightline said it is done, it kills the command's group and every process carrying the
// capture's marker, writes the steps file if the window was complete (the traces moved beside
// it; under nsys naming the report, when there is one), and removes the private folder.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "server/capture/capture_files.h"
#include "server/capture/capture_steps.h"

namespace sightline::server::capture {

// What the watchdog needs to clean up after sightline and keep the window.
struct WatchdogPlan {
  std::string private_folder;  // removed
  std::string parts_folder;    // the ranks' parts
  std::string traces_folder;   // the PyTorch profiler's traces until they are moved
  std::string marker;          // "SIGHTLINE_CAPTURE_DIR=...": in the environment of the command's processes
  CaptureWindow window;
  std::vector<std::string> command;
  CaptureName name;
  std::vector<std::string> inputs;  // the command's files: never written over
};

// The steps file of a window the parts hold, written as the watchdog writes it (the traces moved,
// the report named when nsys wrote one); what happened in one line for the user, or "" when
// there was no complete window.
std::string keepWindow(const WatchdogPlan& plan);

class Watchdog {
 public:
  // Forks the watchdog; nullptr (with `error`) when it cannot.
  static std::unique_ptr<Watchdog> start(const WatchdogPlan& plan, std::string& error);
  // Tells the watchdog it is done, and waits for it to end.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void commandStarted(pid_t group);  // the group to kill
  void commandEnded();               // its group is gone (never to be killed: the id may be reused)
  void stepsWritten();               // nothing to write any more

 private:
  Watchdog(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  void send(const char* bytes, size_t size);
  pid_t pid_;
  int fd_;
};

}  // namespace sightline::server::capture
