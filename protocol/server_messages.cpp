// JSON of what the server sends.
#include "protocol/server_messages.h"

namespace sightline::protocol {

json toJson(const InitializeResult& r) {
  json capabilities = {
      {"positionEncoding", r.positionEncoding},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"codeActionProvider", {{"codeActionKinds", r.codeActionKinds}}},
      {"executeCommandProvider", {{"commands", r.commands}}},
      {"inlayHintProvider", true},
      {"hoverProvider", true},
      {"codeLensProvider", {{"resolveProvider", false}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}}}}},
  };
  return {{"capabilities", capabilities}, {"serverInfo", {{"name", r.serverName}, {"version", r.serverVersion}}}};
}

json toJson(const RegistrationParams& p) {
  json list = json::array();
  for (const auto& r : p.registrations)
    list.push_back({{"id", r.id}, {"method", r.method}, {"registerOptions", r.registerOptions}});
  return {{"registrations", list}};
}

json toJson(const ConfigurationParams& p) {
  json items = json::array();
  for (const auto& s : p.sections) items.push_back({{"section", s}});
  return {{"items", items}};
}

json toJson(const LogMessageParams& p) { return {{"type", p.type}, {"message", p.message}}; }

json toJson(const WorkDoneProgressCreateParams& p) { return {{"token", p.token}}; }

json toJson(const ProgressParams& p) {
  json value = {{"kind", p.kind}};
  if (p.kind == "begin") value["title"] = p.title;
  if (p.message) value["message"] = *p.message;
  if (p.cancellable) value["cancellable"] = *p.cancellable;
  if (p.percentage) value["percentage"] = *p.percentage;
  return {{"token", p.token}, {"value", value}};
}

json toJson(const ApplyWorkspaceEditParams& p) { return {{"label", p.label}, {"edit", toJson(p.edit)}}; }

json toJson(const ProfileStatusParams& p) {
  if (!p.loaded) return {{"loaded", false}, {"error", p.error}};
  json j = {{"loaded", true},
            {"file", p.file},
            {"format", p.format},
            {"toolVersion", p.toolVersion},
            {"gpus", p.gpus},
            {"steps", p.steps},
            {"stepsSource", p.stepsSource},
            {"totalGpuNs", p.totalGpuNs},
            {"gpuNsPerStep", p.gpuNsPerStep},
            {"attributedShare", p.attributedShare},
            {"warnings", p.warnings},
            {"error", p.error},
            {"text", p.text},
            {"details", p.details}};
  if (p.compareWith) j["compareWith"] = *p.compareWith;
  if (p.verdict) j["verdict"] = *p.verdict, j["stepWallNs"] = p.stepWallNs, j["gpuBusyShare"] = p.gpuBusyShare;
  if (p.job) j["job"] = *p.job;
  if (p.memory) {
    const auto& m = *p.memory;
    json memory = {{"peakAllocatedBytes", m.peakAllocatedBytes},
                   {"peakReservedBytes", m.peakReservedBytes},
                   {"peakWhen", m.peakWhen},
                   {"summary", m.summary},
                   {"oom", nullptr}};
    if (m.oomPath)
      memory["oom"] = {{"path", *m.oomPath},
                       {"line", m.oomLine},
                       {"requestedBytes", m.oomRequestedBytes},
                       {"freeBytes", m.oomFreeBytes}};
    j["memory"] = std::move(memory);
  }
  return j;
}

json toJson(const NsysCommandsResult& r) {
  return {{"cwd", r.cwd},
          {"commands", r.commands},
          {"report", r.report},
          {"captureRange", r.captureRange},
          {"note", r.note}};
}

}  // namespace sightline::protocol
