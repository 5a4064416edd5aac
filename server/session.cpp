// Session handlers. Handlers throw RequestError for client mistakes; the dispatcher answers.
#include "server/session.h"

#include <boost/asio/post.hpp>

#include "protocol/json_in.h"
#include "server/conversion.h"
#include "server/log.h"
#include "server/uri.h"

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

}  // namespace

Session::Session(asio::io_context& io, Transport& transport, SessionOptions options)
    : io_(io),
      transport_(transport),
      options_(options),
      framer_(options.max_message_bytes),
      dispatcher_([this](const json& m) { send(m); }) {
  registerHandlers();
}

void Session::start() {
  transport_.start([this](std::string bytes) { onBytes(std::move(bytes)); }, [this] { onClosed(); });
}

void Session::send(const json& message) {
  if (stopped_) return;
  if (!transport_.send(frameMessage(protocol::dumpJson(message)))) {
    SL_LOG(Warn) << "the client is gone; stopping";
    stop(1);
  }
}

void Session::onBytes(std::string bytes) {
  framer_.feed(bytes);
  while (auto event = framer_.next()) {
    if (event->kind == FrameEvent::Kind::Error) {
      SL_LOG(Warn) << "framing: " << event->body;
      continue;
    }
    // Parsing now lets a `$/cancelRequest` read in this chunk cancel a request before it runs.
    auto incoming = std::make_shared<IncomingMessage>(dispatcher_.receive(event->body));
    asio::post(io_, [this, incoming] {
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

  dispatcher_.onNotification("textDocument/didOpen", [this](const json& p) {
    auto params = parseParams<protocol::DidOpenTextDocumentParams>(p);
    auto& item = params.textDocument;
    SL_LOG(Debug) << "open " << item.uri << " (" << item.text.size() << " bytes)";
    Document& doc = documents_.open(item.uri, item.version, std::move(item.text));
    publishNow(doc);
  });
  dispatcher_.onNotification("textDocument/didChange", [this](const json& p) {
    auto params = parseParams<protocol::DidChangeTextDocumentParams>(p);
    Document* doc = documents_.find(params.uri);
    if (!doc) throw RequestError{ErrorCode::InvalidParams, "params.textDocument.uri: document is not open"};
    doc->applyChanges(params.version, params.contentChanges, encoding_);
    schedulePublish(params.uri);
  });
  dispatcher_.onNotification("textDocument/didSave", [this](const json& p) {
    auto params = parseParams<protocol::TextDocumentParams>(p);
    if (Document* doc = documents_.find(params.uri)) publishNow(*doc);
  });
  dispatcher_.onNotification("textDocument/didClose", [this](const json& p) {
    auto params = parseParams<protocol::TextDocumentParams>(p);
    if (auto it = publish_timers_.find(params.uri); it != publish_timers_.end()) {
      it->second->cancel();
      publish_timers_.erase(it);
    }
    if (documents_.close(params.uri))
      dispatcher_.sendNotification("textDocument/publishDiagnostics",
                                   protocol::toJson(protocol::PublishDiagnosticsParams{params.uri, std::nullopt, {}}));
  });
  dispatcher_.onNotification("workspace/didChangeConfiguration", [this](const json& p) {
    if (p.is_object() && p.contains("settings") && p["settings"].is_object() && p["settings"].contains("sightline")) {
      applySettings(p["settings"]["sightline"]);
    } else if (client_.configuration) {
      requestConfiguration();
    }
  });
  dispatcher_.onRequest("textDocument/codeAction", [this](const json& p) { return codeActions(p); });
  dispatcher_.onRequest("workspace/executeCommand", [this](const json& p) { return executeCommand(p); });
}

json Session::initialize(const json& params) {
  auto parsed = parseParams<protocol::InitializeParams>(params);
  client_ = parsed.capabilities;
  encoding_ = client_.utf8_positions ? PositionEncoding::Utf8 : PositionEncoding::Utf16;
  if (parsed.initializationOptions.is_object() && parsed.initializationOptions.contains("settings"))
    applySettings(parsed.initializationOptions["settings"]);
  dispatcher_.setState(Dispatcher::State::Initialized);
  SL_LOG(Info) << "initialized; positions in " << (encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16");
  json capabilities = {
      {"positionEncoding", encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16"},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"codeActionProvider", {{"codeActionKinds", {"quickfix", "refactor.rewrite"}}}},
      {"executeCommandProvider", {{"commands", {kLimitProfilingCommand, kAnnotateStepCommand, kApplyEditCommand}}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}}}}},
  };
  return {{"capabilities", capabilities}, {"serverInfo", {{"name", "sightline"}, {"version", SIGHTLINE_VERSION}}}};
}

void Session::initialized() {
  if (client_.did_change_configuration_dynamic) {
    dispatcher_.sendRequest("client/registerCapability",
                            {{"registrations",
                              {{{"id", "sightline-configuration"},
                                {"method", "workspace/didChangeConfiguration"},
                                {"registerOptions", {{"section", "sightline"}}}}}}},
                            [](const protocol::Message& r) {
                              if (r.error) SL_LOG(Warn) << "registerCapability failed: " << r.error->message;
                            });
  }
  if (client_.configuration) requestConfiguration();
}

void Session::requestConfiguration() {
  dispatcher_.sendRequest("workspace/configuration", {{"items", {{{"section", "sightline"}}}}},
                          [this](const protocol::Message& r) {
                            if (r.error) {
                              SL_LOG(Warn) << "workspace/configuration failed: " << r.error->message;
                              return;
                            }
                            if (r.result.is_array() && !r.result.empty()) applySettings(r.result[0]);
                          });
}

void Session::applySettings(const json& section) {
  std::vector<std::string> warnings;
  settings_ = parseSettings(section, warnings);
  ++settings_generation_;
  for (const auto& w : warnings) {
    SL_LOG(Warn) << "settings: " << w;
    dispatcher_.sendNotification("window/logMessage", {{"type", 2}, {"message", "sightline settings: " + w}});
  }
  republishAll();
}

void Session::publishNow(Document& doc) {
  if (auto it = publish_timers_.find(doc.uri()); it != publish_timers_.end()) it->second->cancel();
  protocol::PublishDiagnosticsParams params;
  params.uri = doc.uri();
  if (client_.diagnostic_version) params.version = doc.version();
  for (const auto& f : doc.findings(settings_.rules, settings_generation_))
    params.diagnostics.push_back(toDiagnostic(doc.file(), f, encoding_, settings_));
  dispatcher_.sendNotification("textDocument/publishDiagnostics", protocol::toJson(params));
}

void Session::schedulePublish(const std::string& uri) {
  auto& timer = publish_timers_[uri];
  if (!timer) timer = std::make_unique<asio::steady_timer>(io_);
  timer->expires_after(options_.diagnostics_delay);
  timer->async_wait([this, uri](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    if (Document* doc = documents_.find(uri)) publishNow(*doc);
  });
}

void Session::republishAll() {
  for (Document* doc : documents_.all()) publishNow(*doc);
}

Document& Session::documentFor(const std::string& uri) {
  Document* doc = documents_.find(uri);
  if (!doc) throw RequestError{ErrorCode::InvalidParams, "params.textDocument.uri: document is not open: " + uri};
  return *doc;
}

json Session::codeActions(const json& params) {
  auto p = parseParams<protocol::CodeActionParams>(params);
  Document& doc = documentFor(p.uri);
  const auto& text = doc.file().text();
  source::ByteRange selection{toOffset(text, doc.file().lines(), p.range.start, encoding_),
                              toOffset(text, doc.file().lines(), p.range.end, encoding_)};
  if (selection.end < selection.begin) std::swap(selection.begin, selection.end);
  const auto& findings = doc.findings(settings_.rules, settings_generation_);
  auto actions = features::computeCodeActions(doc.file(), doc.index(), selection, findings, settings_.actions);
  json out = json::array();
  for (const auto& action : actions) {
    bool wanted = p.only.empty();
    for (const auto& kind : p.only) wanted = wanted || action.kind == kind || action.kind.rfind(kind + ".", 0) == 0;
    if (!wanted) continue;
    protocol::CodeAction converted = toCodeAction(p.uri, doc.file(), action, findings, encoding_, settings_);
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
  dispatcher_.sendRequest("workspace/applyEdit", {{"label", label}, {"edit", protocol::toJson(edit)}},
                          [label](const protocol::Message& r) {
                            if (r.error || !r.result.is_object() || !r.result.value("applied", false))
                              SL_LOG(Warn) << "the client did not apply \"" << label << "\"";
                          });
}

json Session::executeCommand(const json& params) {
  auto p = parseParams<protocol::ExecuteCommandParams>(params);
  const json& args = p.arguments;
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
      uint32_t first = settings_.actions.profile_first_step;
      uint32_t last = settings_.actions.profile_last_step;
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
