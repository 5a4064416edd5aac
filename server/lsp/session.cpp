// The LSP layer: the method table over the workspace, and what the workspace tells the client.
// Handlers parse typed params, call the workspace and the features, and answer with protocol
// types; they throw RequestError for client mistakes and the dispatcher answers.
#include "server/lsp/session.h"

#include <boost/asio/post.hpp>

#include <filesystem>

#include "analysis/features/hover.h"
#include "analysis/features/inlay_hints.h"
#include "analysis/features/profile_commands.h"
#include "analysis/features/profile_view.h"
#include "analysis/features/step_view.h"
#include "protocol/json_in.h"
#include "protocol/server_messages.h"
#include "server/lsp/conversion.h"
#include "server/lsp/uri.h"
#include "server/platform/log.h"
#include "server/render/job_json.h"
#include "server/render/profile_text.h"
#include "server/render/step_view_html.h"
#include "server/render/step_view_json.h"
#include "server/render/story_render.h"
#include "server/workspace/local_files.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "0.0.0"
#endif

namespace sightline::server {

namespace asio = boost::asio;
using nlohmann::json;
using protocol::ErrorCode;

namespace {

constexpr const char* kLimitProfilingCommand = "sightline.limitProfilingWindow";
constexpr const char* kAnnotateStepCommand = "sightline.annotateTrainingStep";
constexpr const char* kApplyEditCommand = "sightline.applyWorkspaceEdit";
constexpr const char* kLoadProfileCommand = "sightline.loadProfile";
constexpr const char* kReloadProfilesCommand = "sightline.reloadProfiles";
constexpr const char* kShowSummaryCommand = "sightline.showProfileSummary";
constexpr const char* kToggleHintsCommand = "sightline.toggleHints";
constexpr const char* kProfileWithNsysCommand = "sightline.profileWithNsys";

}  // namespace

Session::Session(asio::io_context& io, Transport& transport, SessionOptions options)
    : io_(io),
      transport_(transport),
      options_(options),
      framer_(options.max_message_bytes),
      dispatcher_([this](const json& m) { send(m); }),
      workspace_(io, *this, options.profile_poll) {
  registerHandlers();
}

void Session::start() {
  transport_.start([this](std::string bytes, const Transport::InputHold& hold) { onBytes(std::move(bytes), hold); },
                   [this] { onClosed(); });
}

void Session::send(const json& message) {
  if (stopped_) return;
  if (!transport_.send(frameMessage(protocol::dumpJson(message)))) {
    SL_LOG(Warn) << "the client is gone; stopping";
    stop(1);
  }
}

void Session::onBytes(std::string bytes, const Transport::InputHold& hold) {
  framer_.feed(bytes);
  while (auto event = framer_.next()) {
    if (event->kind == FrameEvent::Kind::Error) {
      SL_LOG(Warn) << "framing: " << event->body;
      continue;
    }
    // Parsing now lets a `$/cancelRequest` read in this chunk cancel a request before it runs.
    // The hold goes with each message until it is handled: the transport reads on only while
    // what waits here is bounded (transport.h).
    auto incoming = std::make_shared<IncomingMessage>(dispatcher_.receive(event->body));
    asio::post(io_, [this, incoming, hold] {
      if (!stopped_) dispatcher_.dispatch(*incoming);
    });
  }
}

void Session::onClosed() {
  asio::post(io_, [this] {
    if (stopped_) return;
    if (framer_.pendingBytes() > 0)
      SL_LOG(Warn) << "input ended inside a message (" << framer_.pendingBytes() << " bytes)";
    SL_LOG(Info) << "input closed" << (shutdown_requested_ ? "" : " without shutdown");
    stop(shutdown_requested_ ? 0 : 1);
  });
}

void Session::stop(int exit_code) {
  if (stopped_) return;
  stopped_ = true;
  exit_code_ = exit_code;
  for (auto& [uri, timer] : publish_timers_) timer->cancel();
  workspace_.stop();
  transport_.close();
  io_.stop();
}

void Session::registerHandlers() {
  dispatcher_.onRequest("initialize", [this](const json& p) { return initialize(p); });
  dispatcher_.onNotification("initialized", [this](const json&) { initialized(); });
  dispatcher_.onRequest("shutdown", [this](const json&) {
    shutdown_requested_ = true;
    dispatcher_.setState(Dispatcher::State::ShutDown);
    return json(nullptr);
  });
  dispatcher_.onNotification("exit", [this](const json&) { stop(shutdown_requested_ ? 0 : 1); });
  dispatcher_.onNotification("textDocument/didOpen", [this](const json& p) { didOpen(p); });
  dispatcher_.onNotification("textDocument/didChange", [this](const json& p) { didChange(p); });
  dispatcher_.onNotification("textDocument/didSave", [this](const json& p) {
    auto params = parseParams<protocol::TextDocumentParams>(p);
    if (Document* doc = workspace_.find(params.uri)) publishNow(*doc);
  });
  dispatcher_.onNotification("textDocument/didClose", [this](const json& p) { didClose(p); });
  dispatcher_.onNotification("workspace/didChangeConfiguration", [this](const json& p) {
    auto params = parseParams<protocol::DidChangeConfigurationParams>(p);
    if (params.sightline) {
      workspace_.applySettings(*params.sightline);
    } else if (client_.configuration) {
      requestConfiguration();
    }
  });
  dispatcher_.onRequest("textDocument/codeAction", [this](const json& p) { return codeActions(p); });
  dispatcher_.onRequest("textDocument/inlayHint", [this](const json& p) { return inlayHints(p); });
  dispatcher_.onRequest("textDocument/hover", [this](const json& p) { return hover(p); });
  dispatcher_.onNotification("window/workDoneProgress/cancel", [this](const json& p) {
    auto params = parseParams<protocol::WorkDoneProgressCancelParams>(p);
    if (params.token.is_string()) workspace_.cancelLoad(params.token.get<std::string>());
  });
  dispatcher_.onNotification("workspace/didChangeWatchedFiles", [this](const json& p) {
    auto params = parseParams<protocol::DidChangeWatchedFilesParams>(p);
    for (const auto& change : params.changes)
      if (auto path = uriToPath(change.uri)) workspace_.profileFileChanged(*path);
  });
  dispatcher_.onRequest("workspace/executeCommand", [this](const json& p) { return executeCommand(p); });
  dispatcher_.onRequest("sightline/stepView", [this](const json& p) { return stepView(p); });
  dispatcher_.onRequest("textDocument/codeLens", [this](const json& p) { return codeLenses(p); });
}

// A lens on each outermost training loop that opens the step view (the client's command
// `sightline.stepView`), once a profile with steps is loaded.
json Session::codeLenses(const json& params) {
  auto p = parseParams<protocol::TextDocumentParams>(params);
  Document& doc = documentFor(p.uri);
  json out = json::array();
  const LoadedProfile* loaded = workspace_.profile();
  if (!loaded || loaded->attr().steps == 0) return out;
  // The step as the headline tells it: measured without the profiler where it was, else as captured.
  std::string title = "Sightline: step view";
  if (const auto& v = loaded->verdict)
    title += v->unprofiled.wall_ns ? " · " + features::formatMilliseconds(*v->unprofiled.wall_ns) + " ms per step (" +
                                         features::unprofiledSourceShort(v->unprofiled) + ")"
                                   : " · " + features::formatMilliseconds(v->wall_ns) + " ms per step as captured";
  for (const auto& loop : doc.index().loops) {
    if (!loop.is_training || loop.depth != 0) continue;
    auto at = toPosition(doc.file().text(), doc.file().lines(), loop.header.begin, encoding_);
    out.push_back({{"range", protocol::toJson(protocol::Range{at, at})},
                   {"command", {{"title", title}, {"command", "sightline.stepView"}, {"arguments", json::array()}}}});
  }
  return out;
}

json Session::stepView(const json& params) {
  auto parsed = parseParams<protocol::StepViewParams>(params);
  const LoadedProfile* loaded = workspace_.profile();
  if (!loaded) return json(nullptr);
  features::StepViewOptions options;
  std::vector<ListedFile> listed;
  std::vector<Document*> documents = workspace_.documents();
  if (parsed.format == "html") {
    for (Document* doc : documents)
      if (auto path = uriToPath(doc->uri())) {
        options.listed_paths.push_back(*path);
        listed.push_back({*path, *path, &doc->file().text()});
      }
  }
  options.verdict = loaded->verdict ? &*loaded->verdict : nullptr;
  auto view = features::computeStepView(*loaded->join, options);
  const auto& info = loaded->profile().info;
  json data = stepViewJson(view, {std::filesystem::path(loaded->path).filename().string(), info.format, info.gpus});
  // The story as the report's header tells it (computed once per load): the machine, the job,
  // the verdict, memory, warnings.
  data["story"] = storyRowsJson(loaded->story);
  if (loaded->job) data["job"] = jobPageJson(*loaded->job);
  if (parsed.format != "html") return data;
  if (stepViewScript().empty())
    throw RequestError{ErrorCode::InternalError, "this sightline was built without the step view renderer"};
  data["sources"] = annotatedSourcesJson(view, listed);
  return json{{"html", stepViewHtml(data, "Sightline · " + data["profile"]["file"].get<std::string>())}};
}

void Session::didOpen(const json& p) {
  auto params = parseParams<protocol::DidOpenTextDocumentParams>(p);
  auto& item = params.textDocument;
  SL_LOG(Debug) << "open " << item.uri << " (" << item.text.size() << " bytes)";
  publishNow(workspace_.open(item.uri, item.version, std::move(item.text)));
}

void Session::didChange(const json& p) {
  auto params = parseParams<protocol::DidChangeTextDocumentParams>(p);
  Document* doc = workspace_.find(params.uri);
  if (!doc) throw RequestError{ErrorCode::InvalidParams, "params.textDocument.uri: document is not open"};
  doc->applyChanges(params.version, params.contentChanges, encoding_);
  schedulePublish(params.uri);
}

void Session::didClose(const json& p) {
  auto params = parseParams<protocol::TextDocumentParams>(p);
  if (auto it = publish_timers_.find(params.uri); it != publish_timers_.end()) {
    it->second->cancel();
    publish_timers_.erase(it);
  }
  debounce_.erase(params.uri);
  if (workspace_.close(params.uri))
    dispatcher_.sendNotification("textDocument/publishDiagnostics",
                                 protocol::toJson(protocol::PublishDiagnosticsParams{params.uri, std::nullopt, {}}));
}

json Session::initialize(const json& params) {
  auto parsed = parseParams<protocol::InitializeParams>(params);
  client_ = parsed.capabilities;
  encoding_ = client_.utf8_positions ? PositionEncoding::Utf8 : PositionEncoding::Utf16;
  std::optional<std::string> root;
  if (!parsed.workspaceFolders.empty()) root = uriToPath(parsed.workspaceFolders.front());
  if (!root && parsed.rootUri) root = uriToPath(*parsed.rootUri);
  if (root) workspace_.setRoot(*root);
  if (parsed.initializationOptions.is_object() && parsed.initializationOptions.contains("settings"))
    workspace_.applySettings(parsed.initializationOptions["settings"]);
  dispatcher_.setState(Dispatcher::State::Initialized);
  SL_LOG(Info) << "initialized; positions in " << (encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16");
  protocol::InitializeResult result;
  result.positionEncoding = encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16";
  result.codeActionKinds = {"quickfix", "refactor.rewrite"};
  result.commands = {kLimitProfilingCommand, kAnnotateStepCommand, kApplyEditCommand,   kLoadProfileCommand,
                     kReloadProfilesCommand, kShowSummaryCommand,  kToggleHintsCommand, kProfileWithNsysCommand};
  result.serverName = "sightline";
  result.serverVersion = SIGHTLINE_VERSION;
  return protocol::toJson(result);
}

void Session::registerCapability(const std::string& id, const std::string& method, json options) {
  protocol::RegistrationParams params{{{id, method, std::move(options)}}};
  dispatcher_.sendRequest("client/registerCapability", protocol::toJson(params), [method](const protocol::Message& r) {
    if (r.error) SL_LOG(Warn) << "registerCapability (" << method << ") failed: " << r.error->message;
  });
}

void Session::initialized() {
  if (client_.did_change_configuration_dynamic)
    registerCapability("sightline-configuration", "workspace/didChangeConfiguration", {{"section", "sightline"}});
  if (client_.watched_files_dynamic)
    registerCapability("sightline-profiles", "workspace/didChangeWatchedFiles",
                       {{"watchers", {{{"globPattern", "**/*.{nsys-rep,sqlite,json,gz,pickle,pkl}"}, {"kind", 7}}}}});
  if (client_.configuration)
    requestConfiguration();
  else if (!workspace_.settingsReceived())  // keep what initializationOptions gave
    asio::post(io_, [this] { workspace_.applySettings(nullptr); });
}

void Session::requestConfiguration() {
  dispatcher_.sendRequest("workspace/configuration", protocol::toJson(protocol::ConfigurationParams{{"sightline"}}),
                          [this](const protocol::Message& r) {
                            if (r.error) {
                              SL_LOG(Warn) << "workspace/configuration failed: " << r.error->message;
                              return;
                            }
                            if (r.result.is_array() && !r.result.empty()) workspace_.applySettings(r.result[0]);
                          });
}

// --- what the workspace tells the client ---------------------------------------------------

bool Session::serving() const { return dispatcher_.state() == Dispatcher::State::Initialized && !stopped_; }

void Session::profileStatusChanged() {
  auto status = profileStatus(workspace_.profile(), workspace_.profileError());
  if (std::string compare = workspace_.comparePath(); !compare.empty()) status.compareWith = compare;
  dispatcher_.sendNotification("sightline/profileStatus", protocol::toJson(status));
}

void Session::hintsChanged() {
  if (client_.inlay_hint_refresh)
    dispatcher_.sendRequest("workspace/inlayHint/refresh", nullptr, [](const protocol::Message&) {});
}

void Session::logMessage(int type, const std::string& message) {
  dispatcher_.sendNotification("window/logMessage", protocol::toJson(protocol::LogMessageParams{type, message}));
}

void Session::showMessage(int type, const std::string& message) {
  dispatcher_.sendNotification("window/showMessage", protocol::toJson(protocol::LogMessageParams{type, message}));
}

std::string Session::beginProgress(const std::string& title, const std::string& message) {
  if (!client_.work_done_progress) return "";
  std::string token = "sightline-load-" + std::to_string(++progress_counter_);
  dispatcher_.sendRequest("window/workDoneProgress/create",
                          protocol::toJson(protocol::WorkDoneProgressCreateParams{token}),
                          [](const protocol::Message&) {});
  sendProgress({token, "begin", title, message, true, 0});
  return token;
}

void Session::reportProgress(const std::string& token, const std::string& message, int percent) {
  sendProgress({token, "report", "", message, std::nullopt, percent});
}

void Session::endProgress(const std::string& token, const std::string& message) {
  sendProgress({token, "end", "", message, std::nullopt, std::nullopt});
}

void Session::sendProgress(const protocol::ProgressParams& params) {
  if (!params.token.empty() && client_.work_done_progress)
    dispatcher_.sendNotification("$/progress", protocol::toJson(params));
}

// --- requests --------------------------------------------------------------------------------

Document& Session::documentFor(const std::string& uri) {
  Document* doc = workspace_.find(uri);
  if (!doc) throw RequestError{ErrorCode::InvalidParams, "params.textDocument.uri: document is not open: " + uri};
  return *doc;
}

json Session::inlayHints(const json& params) {
  auto p = parseParams<protocol::InlayHintParams>(params);
  Document& doc = documentFor(p.uri);
  json out = json::array();
  const features::FileCosts* costs = workspace_.settings().hints_enabled ? workspace_.costsFor(doc) : nullptr;
  if (!costs) return out;
  const auto& file = doc.file();
  auto hints = features::computeInlayHints(file, doc.index(), *costs, workspace_.profile()->profile(),
                                           workspace_.settings().hints, p.range.start.line, p.range.end.line);
  for (const auto& h : hints) {
    if (h.line >= file.lines().lineCount()) continue;
    protocol::InlayHint hint;
    hint.position = toPosition(file.text(), file.lines(), file.lines().lineRange(h.line).end, encoding_);
    hint.label = hintLabel(h);
    hint.paddingLeft = true;
    hint.tooltip = protocol::MarkupContent{"markdown", hintTooltip(h)};
    hint.data = hintData(h);
    out.push_back(protocol::toJson(hint));
  }
  return out;
}

json Session::hover(const json& params) {
  auto p = parseParams<protocol::HoverParams>(params);
  Document& doc = documentFor(p.uri);
  std::string value;
  // On a diagnostic's range: why it costs and the fix.
  uint32_t offset = toOffset(doc.file().text(), doc.file().lines(), p.position, encoding_);
  for (const auto& f : workspace_.findingsFor(doc)) {
    if (offset < f.range.begin || offset > f.range.end) continue;
    value += (value.empty() ? "" : "\n\n---\n\n") + findingMarkdown(f);
  }
  if (const features::FileCosts* costs = workspace_.costsFor(doc)) {
    if (auto info = features::computeHover(doc.file(), doc.index(), *costs, workspace_.profile()->profile(),
                                           workspace_.settings().hints, p.position.line))
      value += (value.empty() ? "" : "\n\n---\n\n") + hoverMarkdown(*info);
  }
  if (value.empty()) return nullptr;
  return protocol::toJson(protocol::Hover{{"markdown", value}});
}

void Session::publishNow(Document& doc) {
  if (auto it = publish_timers_.find(doc.uri()); it != publish_timers_.end()) it->second->cancel();
  auto began = Debounce::Clock::now();
  protocol::PublishDiagnosticsParams params;
  params.uri = doc.uri();
  if (client_.diagnostic_version) params.version = doc.version();
  for (const auto& f : workspace_.findingsFor(doc))
    params.diagnostics.push_back(toDiagnostic(doc.file(), f, encoding_, workspace_.settings()));
  dispatcher_.sendNotification("textDocument/publishDiagnostics", protocol::toJson(params));
  debounceOf(doc.uri()).record(Debounce::Clock::now() - began);
}

Debounce& Session::debounceOf(const std::string& uri) {
  auto it = debounce_.find(uri);
  if (it == debounce_.end())
    it = debounce_.emplace(uri, options_.diagnostics_delay ? Debounce::fixed(*options_.diagnostics_delay) : Debounce())
             .first;
  return it->second;
}

void Session::schedulePublish(const std::string& uri) {
  auto& timer = publish_timers_[uri];
  if (!timer) timer = std::make_unique<asio::steady_timer>(io_);
  timer->expires_after(debounceOf(uri).delay());
  timer->async_wait([this, uri](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    if (Document* doc = workspace_.find(uri)) publishNow(*doc);
  });
}

void Session::findingsChanged() {
  for (Document* doc : workspace_.documents()) publishNow(*doc);
}

json Session::codeActions(const json& params) {
  auto p = parseParams<protocol::CodeActionParams>(params);
  Document& doc = documentFor(p.uri);
  const auto& text = doc.file().text();
  source::ByteRange selection{toOffset(text, doc.file().lines(), p.range.start, encoding_),
                              toOffset(text, doc.file().lines(), p.range.end, encoding_)};
  if (selection.end < selection.begin) std::swap(selection.begin, selection.end);
  const auto findings = workspace_.findingsFor(doc);
  auto actions =
      features::computeCodeActions(doc.file(), doc.index(), selection, findings, workspace_.settings().actions);
  // On a hot line, the NVTX range is named after what the profile saw it run.
  if (const features::FileCosts* costs = workspace_.costsFor(doc)) {
    uint32_t line = doc.file().lines().pointAt(selection.begin).line;
    std::string name =
        features::rangeNameFromProfile(*costs, workspace_.profile()->profile(), workspace_.settings().hints, line);
    if (!name.empty()) {
      if (auto named = features::wrapInNvtxRange(doc.file(), doc.index(), selection, name)) {
        for (auto& action : actions)
          if (action.title.rfind("Wrap in NVTX range \"", 0) == 0) action = *named;
      }
    }
  }
  json out = json::array();
  for (const auto& action : actions) {
    bool wanted = p.only.empty();
    for (const auto& kind : p.only) wanted = wanted || action.kind == kind || action.kind.rfind(kind + ".", 0) == 0;
    if (!wanted) continue;
    protocol::CodeAction converted =
        toCodeAction(p.uri, doc.file(), action, findings, encoding_, workspace_.settings());
    if (!client_.code_action_literals) {
      out.push_back(protocol::toJson(
          protocol::Command{converted.title, kApplyEditCommand, json::array({protocol::toJson(*converted.edit)})}));
    } else {
      out.push_back(protocol::toJson(converted));
    }
  }
  return out;
}

void Session::applyEditOnClient(const std::string& label, const protocol::WorkspaceEdit& edit) {
  if (!client_.apply_edit)
    throw RequestError{ErrorCode::RequestFailed, "the client cannot apply workspace edits (workspace.applyEdit)"};
  dispatcher_.sendRequest("workspace/applyEdit", protocol::toJson(protocol::ApplyWorkspaceEditParams{label, edit}),
                          [label](const protocol::Message& r) {
                            if (r.error || !r.result.is_object() || !r.result.value("applied", false))
                              SL_LOG(Warn) << "the client did not apply \"" << label << "\"";
                          });
}

json Session::executeCommand(const json& params) {
  auto p = parseParams<protocol::ExecuteCommandParams>(params);
  const json& args = p.arguments;
  if (p.command == kLoadProfileCommand) {
    if (args.size() != 1 || !args[0].is_string())
      throw RequestError{ErrorCode::InvalidParams, "params.arguments: expected [path]"};
    auto files = expandProfileSetting(workspace_.root(), args[0].get<std::string>());
    if (files.empty() || fileMtimeNs(files.front()) == 0)
      throw RequestError{ErrorCode::InvalidParams, "params.arguments[0]: no such file: " + args[0].get<std::string>()};
    workspace_.loadProfile(files.front(), kLoadProfileCommand);
    return nullptr;
  }
  if (p.command == kReloadProfilesCommand) {
    workspace_.reloadProfiles(kReloadProfilesCommand);
    return nullptr;
  }
  if (p.command == kShowSummaryCommand) {
    const LoadedProfile* loaded = workspace_.profile();
    const std::string& error = workspace_.profileError();
    if (!loaded) return error.empty() ? "No profile is loaded." : "No profile is loaded: " + error;
    return profileSummaryMarkdown(*loaded);
  }
  if (p.command == kToggleHintsCommand) {
    return workspace_.toggleHints();
  }
  if (p.command == kProfileWithNsysCommand) {
    // Arguments: [uri]. Returns the command lines for the client to show or run in a terminal.
    if (args.size() != 1 || !args[0].is_string())
      throw RequestError{ErrorCode::InvalidParams, "params.arguments: expected [uri]"};
    Document& doc = documentFor(args[0].get<std::string>());
    auto path = uriToPath(doc.uri());
    if (!path) throw RequestError{ErrorCode::InvalidParams, "params.arguments[0]: not a file: URI"};
    std::filesystem::path script(*path);
    auto c = features::nsysCommandsFor(doc.index(), script.filename().string());
    return protocol::toJson(protocol::NsysCommandsResult{script.parent_path().string(), c.commands,
                                                         c.report + ".sqlite", c.capture_range, c.note});
  }
  if (p.command == kApplyEditCommand) {
    if (args.size() != 1) throw RequestError{ErrorCode::InvalidParams, "params.arguments: expected [WorkspaceEdit]"};
    auto edit = protocol::parse<protocol::WorkspaceEdit>(args[0], "params.arguments[0]");
    if (!edit) throw RequestError{ErrorCode::InvalidParams, edit.error().describe()};
    applyEditOnClient("Sightline", edit.value());
    return nullptr;
  }
  if (p.command == kLimitProfilingCommand || p.command == kAnnotateStepCommand) {
    // Arguments: [uri, position, firstStep?, lastStep?]
    if (args.size() < 2 || !args[0].is_string())
      throw RequestError{ErrorCode::InvalidParams, "params.arguments: expected [uri, position, ...]"};
    auto position = protocol::parse<protocol::Position>(args[1], "params.arguments[1]");
    if (!position) throw RequestError{ErrorCode::InvalidParams, position.error().describe()};
    Document& doc = documentFor(args[0].get<std::string>());
    uint32_t offset = toOffset(doc.file().text(), doc.file().lines(), position.value(), encoding_);
    std::optional<features::CodeAction> action;
    if (p.command == kLimitProfilingCommand) {
      uint32_t first = workspace_.settings().actions.profile_first_step;
      uint32_t last = workspace_.settings().actions.profile_last_step;
      if (args.size() >= 4) {
        if (!args[2].is_number_unsigned() || !args[3].is_number_unsigned() || args[3] < args[2])
          throw RequestError{ErrorCode::InvalidParams, "params.arguments[2..3]: expected firstStep <= lastStep"};
        first = args[2].get<uint32_t>();
        last = args[3].get<uint32_t>();
      }
      action = features::limitProfilingWindow(doc.file(), doc.index(), offset, first, last);
    } else {
      action = features::annotateTrainingStep(doc.file(), doc.index(), offset);
    }
    if (!action) throw RequestError{ErrorCode::RequestFailed, "no training loop to change at that position"};
    applyEditOnClient(action->title, toWorkspaceEdit(doc.uri(), doc.file(), action->edits, encoding_));
    return nullptr;
  }
  throw RequestError{ErrorCode::InvalidParams, "params.command: unknown command " + p.command};
}

}  // namespace sightline::server
