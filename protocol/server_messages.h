// What the server sends on its own: the initialize result, its requests to the client
// (registerCapability, workspace/configuration, workDoneProgress/create, applyEdit), its
// notifications (logMessage, $/progress, sightline/profileStatus) and the result of the
// sightline.profileWithNsys command. Each with its LSP field names and a toJson.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/lsp_types.h"

namespace sightline::protocol {

struct InitializeResult {
  std::string positionEncoding;              // "utf-8" or "utf-16"
  std::vector<std::string> codeActionKinds;  // codeActionProvider.codeActionKinds
  std::vector<std::string> commands;         // executeCommandProvider.commands
  std::string serverName, serverVersion;     // serverInfo
};
json toJson(const InitializeResult& r);  // full sync is incremental (2); hover and inlay hints on

struct Registration {
  std::string id;
  std::string method;
  json registerOptions;
};
struct RegistrationParams {
  std::vector<Registration> registrations;
};
json toJson(const RegistrationParams& p);

struct ConfigurationParams {
  std::vector<std::string> sections;  // items[].section
};
json toJson(const ConfigurationParams& p);

// window/logMessage and window/showMessage.
struct LogMessageParams {
  int type = 3;  // 1 error, 2 warning, 3 info, 4 log
  std::string message;
};
json toJson(const LogMessageParams& p);

struct WorkDoneProgressCreateParams {
  std::string token;
};
json toJson(const WorkDoneProgressCreateParams& p);

// $/progress with a WorkDoneProgress value: begin (title), report, end.
struct ProgressParams {
  std::string token;
  std::string kind;   // "begin", "report" or "end"
  std::string title;  // begin only
  std::optional<std::string> message;
  std::optional<bool> cancellable;
  std::optional<int> percentage;
};
json toJson(const ProgressParams& p);

struct ApplyWorkspaceEditParams {
  std::string label;
  WorkspaceEdit edit;
};
json toJson(const ApplyWorkspaceEditParams& p);

// sightline/profileStatus (docs/lsp-extensions.md).
struct ProfileStatusParams {
  bool loaded = false;
  std::string file, format, toolVersion;
  std::vector<std::string> gpus;
  int steps = 0;
  std::string stepsSource;
  int64_t totalGpuNs = 0, gpuNsPerStep = 0;
  double attributedShare = 0;
  std::vector<std::string> warnings;
  std::string error;
  std::optional<std::string> compareWith;
  // The steady step's verdict: "GPU 15% busy · launch-bound" (absent when no steps are known),
  // its median wall time and GPU busy share.
  std::optional<std::string> verdict;
  int64_t stepWallNs = 0;
  double gpuBusyShare = 0;
  // A job of several ranks: "4 ranks · straggler rank 3 (node3, GPU 3)" (absent for one rank).
  std::optional<std::string> job;
  // GPU memory (a memory snapshot): the peak, and where the GPU ran out of memory.
  struct Memory {
    int64_t peakAllocatedBytes = 0, peakReservedBytes = 0;
    std::string peakWhen;  // "in step 6 of the 6 recorded (forward pass)"; "" when not known
    std::string summary;   // "peak 63.54 GiB · out of memory at gpt_mem.py:73"
    std::optional<std::string> oomPath;
    int32_t oomLine = 0;
    int64_t oomRequestedBytes = 0, oomFreeBytes = 0;
  };
  std::optional<Memory> memory;
  // The status line and its tooltip's lines as the server words them (plain text, the figures
  // formatted once): "naive.sqlite · 5.53 ms/step · 100% · <verdict>". Clients add their icon and
  // the warnings' count, and format no figure of their own.
  std::string text;
  std::vector<std::string> details;
};
json toJson(const ProfileStatusParams& p);

// The result of the sightline.profileWithNsys command.
struct NsysCommandsResult {
  std::string cwd;
  std::vector<std::string> commands;
  std::string report;
  bool captureRange = false;
  std::string note;
};
json toJson(const NsysCommandsResult& r);

}  // namespace sightline::protocol
