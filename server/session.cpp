// Session handlers. Handlers throw RequestError for client mistakes; the dispatcher answers.
#include "server/session.h"

#include <boost/asio/post.hpp>

#include <filesystem>

#include "analysis/features/hover.h"
#include "analysis/features/inlay_hints.h"
#include "analysis/features/profile_commands.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/features/source_match.h"
#include "protocol/json_in.h"
#include "server/conversion.h"
#include "server/local_files.h"
#include "server/profile_text.h"
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
      loader_(io),
      compare_loader_(io),
      watch_timer_(io) {
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
  watch_timer_.cancel();
  loader_.cancel();
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
    findings_.erase(item.uri);  // a reopened document starts over (its generations restart at 0)
    costs_.erase(item.uri);
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
    findings_.erase(params.uri);
    costs_.erase(params.uri);
    if (documents_.close(params.uri))
      dispatcher_.sendNotification("textDocument/publishDiagnostics",
                                   protocol::toJson(protocol::PublishDiagnosticsParams{params.uri, std::nullopt, {}}));
  });
  dispatcher_.onNotification("workspace/didChangeConfiguration", [this](const json& p) {
    auto params = parseParams<protocol::DidChangeConfigurationParams>(p);
    if (params.sightline) {
      applySettings(*params.sightline);
    } else if (client_.configuration) {
      requestConfiguration();
    }
  });
  dispatcher_.onRequest("textDocument/codeAction", [this](const json& p) { return codeActions(p); });
  dispatcher_.onRequest("textDocument/inlayHint", [this](const json& p) { return inlayHints(p); });
  dispatcher_.onRequest("textDocument/hover", [this](const json& p) { return hover(p); });
  dispatcher_.onNotification("window/workDoneProgress/cancel", [this](const json& p) {
    auto params = parseParams<protocol::WorkDoneProgressCancelParams>(p);
    if (progress_token_.empty() || params.token != progress_token_) return;
    loader_.cancel();
    progress(progress_token_, {{"kind", "end"}, {"message", "cancelled"}});
    progress_token_.clear();
    SL_LOG(Info) << "profile load cancelled";
  });
  dispatcher_.onNotification("workspace/didChangeWatchedFiles", [this](const json& p) {
    auto params = parseParams<protocol::DidChangeWatchedFilesParams>(p);
    if (!profile_) return;
    for (const auto& change : params.changes) {
      auto path = uriToPath(change.uri);
      if (path && normalPath(*path) == normalPath(profile_->path)) {
        pending_mtime_ = 0;
        watchProfile();  // the poll confirms the file is stable before reloading
        return;
      }
    }
  });
  dispatcher_.onRequest("workspace/executeCommand", [this](const json& p) { return executeCommand(p); });
}

json Session::initialize(const json& params) {
  auto parsed = parseParams<protocol::InitializeParams>(params);
  client_ = parsed.capabilities;
  encoding_ = client_.utf8_positions ? PositionEncoding::Utf8 : PositionEncoding::Utf16;
  std::optional<std::string> root;
  if (!parsed.workspaceFolders.empty()) root = uriToPath(parsed.workspaceFolders.front());
  if (!root && parsed.rootUri) root = uriToPath(*parsed.rootUri);
  if (root) root_ = normalPath(*root);
  if (parsed.initializationOptions.is_object() && parsed.initializationOptions.contains("settings"))
    applySettings(parsed.initializationOptions["settings"]);
  dispatcher_.setState(Dispatcher::State::Initialized);
  SL_LOG(Info) << "initialized; positions in " << (encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16");
  json capabilities = {
      {"positionEncoding", encoding_ == PositionEncoding::Utf8 ? "utf-8" : "utf-16"},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"codeActionProvider", {{"codeActionKinds", {"quickfix", "refactor.rewrite"}}}},
      {"executeCommandProvider",
       {{"commands",
         {kLimitProfilingCommand, kAnnotateStepCommand, kApplyEditCommand, kLoadProfileCommand, kReloadProfilesCommand,
          kShowSummaryCommand, kToggleHintsCommand, kProfileWithNsysCommand}}}},
      {"inlayHintProvider", true},
      {"hoverProvider", true},
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
  if (client_.watched_files_dynamic) {
    dispatcher_.sendRequest(
        "client/registerCapability",
        {{"registrations",
          {{{"id", "sightline-profiles"},
            {"method", "workspace/didChangeWatchedFiles"},
            {"registerOptions", {{"watchers", {{{"globPattern", "**/*.{nsys-rep,sqlite,json,gz}"}, {"kind", 7}}}}}}}}}},
        [](const protocol::Message& r) {
          if (r.error) SL_LOG(Warn) << "registerCapability (watched files) failed: " << r.error->message;
        });
  }
  if (client_.configuration)
    requestConfiguration();
  else if (!settings_received_)  // keep what initializationOptions gave
    asio::post(io_, [this] { applySettings(nullptr); });
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
  bool hints_before = settings_.hints_enabled;
  auto hint_options_before = settings_.hints;
  int64_t idle_gap_before = settings_.thresholds.gpu_idle_gap_ns;
  settings_ = parseSettings(section, warnings);
  if (settings_.thresholds.gpu_idle_gap_ns != idle_gap_before) {
    // The gaps are found while loading: load both profiles again.
    reload_profiles_ = true;
    compare_setting_.clear();
  }
  settings_received_ = settings_received_ || !section.is_null();
  ++settings_generation_;
  for (const auto& w : warnings) {
    SL_LOG(Warn) << "settings: " << w;
    dispatcher_.sendNotification("window/logMessage", {{"type", 2}, {"message", "sightline settings: " + w}});
  }
  republishAll();
  if (hints_before != settings_.hints_enabled || hint_options_before.min_share != settings_.hints.min_share ||
      hint_options_before.per_step != settings_.hints.per_step ||
      hint_options_before.show_backward != settings_.hints.show_backward)
    refreshHints();
  // Settings may arrive inside `initialize`: load once the response has gone out.
  asio::post(io_, [this] {
    if (dispatcher_.state() != Dispatcher::State::Initialized || stopped_) return;
    loadCompare();
    if (profile_generation_ > 0 || loader_.busy() || !progress_token_.empty()) {
      if (settings_.profiles == loaded_setting_ && !reload_profiles_) return;
    }
    reload_profiles_ = false;
    loaded_setting_ = settings_.profiles;
    loadProfiles(profileCandidates(), settings_.profiles.empty() ? "the newest profile found in the workspace"
                                                                 : "from the sightline.profiles setting");
  });
}

std::vector<std::string> Session::profileCandidates() const {
  if (settings_.profiles.empty()) return discoverProfiles(root_);
  std::vector<std::string> out;
  for (const auto& entry : settings_.profiles)
    for (auto& f : expandProfileSetting(root_, entry)) out.push_back(std::move(f));
  return out;
}

void Session::progress(const std::string& token, const json& value) {
  if (!token.empty() && client_.work_done_progress)
    dispatcher_.sendNotification("$/progress", {{"token", token}, {"value", value}});
}

void Session::loadCompare() {
  if (settings_.compare_with == compare_setting_) return;
  compare_setting_ = settings_.compare_with;
  compare_loader_.cancel();
  auto changed = [this] {
    ++profile_generation_;  // costs carry the compare profile's: recompute them
    costs_.clear();
    refreshHints();
  };
  if (compare_setting_.empty()) {
    if (compare_) {
      compare_.reset();
      changed();
    }
    return;
  }
  auto files = expandProfileSetting(root_, compare_setting_);
  if (files.empty() || fileMtimeNs(files.front()) == 0) {
    std::string message = "sightline.compareWith: no such profile: " + compare_setting_;
    SL_LOG(Warn) << message;
    dispatcher_.sendNotification("window/logMessage", {{"type", 2}, {"message", message}});
    return;
  }
  SL_LOG(Info) << "loading " << files.front() << " to compare with (sightline.compareWith)";
  compare_loader_.load(
      files.front(), localJoinEnvironment(workspaceMapper()), settings_.thresholds.gpu_idle_gap_ns,
      [](std::string, int) {},
      [this, changed](std::shared_ptr<LoadedProfile> loaded, std::string error) {
        if (!loaded) {
          std::string message = "sightline.compareWith: " + error;
          SL_LOG(Warn) << message;
          dispatcher_.sendNotification("window/logMessage", {{"type", 2}, {"message", message}});
          return;
        }
        compare_ = std::move(loaded);
        changed();
        if (profile_) sendProfileStatus();
      });
}

void Session::loadProfiles(std::vector<std::string> candidates, const std::string& reason) {
  ++profile_generation_;  // a load is under way: earlier settings no longer apply
  if (candidates.empty()) {
    profile_error_ = settings_.profiles.empty()
                         ? "no profile found in the workspace (*.nsys-rep, *.sqlite, *.pt.trace.json[.gz]); "
                           "set sightline.profiles or run sightline.loadProfile"
                         : "no file matches the sightline.profiles setting";
    SL_LOG(Info) << profile_error_;
    sendProfileStatus();
    return;
  }
  std::string path = candidates.front();
  candidates.erase(candidates.begin());
  std::string message = "Sightline: loading " + path + " (" + reason + ")";
  SL_LOG(Info) << message;
  dispatcher_.sendNotification("window/logMessage", {{"type", 3}, {"message", message}});
  std::string token;
  if (client_.work_done_progress) {
    token = "sightline-load-" + std::to_string(++progress_counter_);
    dispatcher_.sendRequest("window/workDoneProgress/create", {{"token", token}}, [](const protocol::Message&) {});
    progress(token, {{"kind", "begin"},
                     {"title", "Loading profile"},
                     {"message", std::filesystem::path(path).filename().string()},
                     {"cancellable", true},
                     {"percentage", 0}});
  }
  progress_token_ = token;
  // Open documents first, then the workspace: where the profile's scripts are.
  attribution::PathMapper mapper = workspaceMapper();
  for (Document* doc : documents_.all())
    if (auto local = uriToPath(doc->uri())) mapper.candidates.push_back(normalPath(*local));
  loader_.load(
      path, localJoinEnvironment(std::move(mapper)), settings_.thresholds.gpu_idle_gap_ns,
      [this, token](std::string stage, int percent) {
        progress(token, {{"kind", "report"}, {"message", stage}, {"percentage", percent}});
      },
      [this, candidates, token](std::shared_ptr<LoadedProfile> loaded, std::string error) {
        onProfileLoaded(std::move(loaded), std::move(error), candidates, token);
      });
}

void Session::onProfileLoaded(std::shared_ptr<LoadedProfile> loaded, std::string error, std::vector<std::string> rest,
                              const std::string& token) {
  if (stopped_) return;
  if (token == progress_token_) progress_token_.clear();
  if (!loaded) {
    SL_LOG(Warn) << "profile: " << error;
    progress(token, {{"kind", "end"}, {"message", error}});
    if (!rest.empty() && settings_.profiles.empty()) {
      loadProfiles(std::move(rest), "the next newest profile in the workspace");
      return;
    }
    if (profile_ && load_retries_ > 0) {
      // A reload after the file changed failed (a half-written file?): keep the old numbers, retry.
      --load_retries_;
      pending_mtime_ = 0;
      watchProfile();
      return;
    }
    profile_error_ = error;
    sendProfileStatus();
    return;
  }
  load_retries_ = 0;
  profile_ = std::move(loaded);
  profile_error_.clear();
  ++profile_generation_;
  costs_.clear();
  // The new numbers are for the files as they are now: line tracking starts over.
  for (Document* doc : documents_.all()) doc->rebaseLines();
  watched_mtime_ = profile_->file_mtime_ns;
  pending_mtime_ = 0;
  const auto& a = profile_->attr();
  progress(token,
           {{"kind", "end"},
            {"message", std::to_string(a.steps) + " steps, " +
                            features::formatMilliseconds(static_cast<double>(a.total_gpu_ns)) + " ms GPU time"}});
  SL_LOG(Info) << "profile loaded: " << profile_->path;
  sendProfileStatus();
  refreshHints();
  republishAll();
  watchProfile();
}

void Session::sendProfileStatus() {
  json status = profileStatus(profile_.get(), profile_error_);
  if (compare_) status["compareWith"] = compare_->path;
  dispatcher_.sendNotification("sightline/profileStatus", status);
}

void Session::refreshHints() {
  if (client_.inlay_hint_refresh)
    dispatcher_.sendRequest("workspace/inlayHint/refresh", nullptr, [](const protocol::Message&) {});
}

// Polls the loaded profile's mtime; a change seen twice in a row (the writer is done) reloads.
void Session::watchProfile() {
  if (!profile_ || stopped_) return;
  watch_timer_.expires_after(options_.profile_poll);
  watch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_ || !profile_) return;
    int64_t now = fileMtimeNs(profile_->path);
    if (now == 0 || now == watched_mtime_) {
      pending_mtime_ = 0;
    } else if (now != pending_mtime_) {
      pending_mtime_ = now;  // changed: wait one more period for it to settle
    } else if (!loader_.busy()) {
      SL_LOG(Info) << "profile changed on disk: reloading " << profile_->path;
      watched_mtime_ = now;
      load_retries_ = 5;
      loadProfiles({profile_->path}, "the file changed");
      return;
    }
    watchProfile();
  });
}

attribution::PathMapper Session::workspaceMapper() const {
  attribution::PathMapper mapper;
  for (auto rule : settings_.path_mappings) {
    auto at = rule.to.find("${workspaceFolder}");
    if (at != std::string::npos) rule.to.replace(at, 18, root_.empty() ? "." : root_);
    mapper.rules.push_back(rule);
  }
  mapper.root = root_;
  mapper.exists = [](const std::string& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec);
  };
  return mapper;
}

const features::FileCosts* Session::costsFor(Document& doc) {
  if (!profile_) return nullptr;
  auto cached = costs_.find(doc.uri());
  if (cached == costs_.end() || cached->second.profile_generation != profile_generation_) {
    auto path = uriToPath(doc.uri());
    if (!path) return nullptr;
    auto joined = join::joinFile(*profile_->join, compare_ ? compare_->join.get() : nullptr, normalPath(*path),
                                 doc.file(), doc.index(), &doc.lineTracker());
    cached = costs_.insert_or_assign(doc.uri(), CostsSlot{profile_generation_, std::move(joined), 0, {}}).first;
    cached->second.line_generation = doc.lineGeneration() + 1;  // remapped below
  }
  auto& slot = cached->second;
  if (slot.line_generation != doc.lineGeneration()) {
    std::string compare_name = compare_ ? std::filesystem::path(compare_->path).filename().string() : "";
    std::string note = slot.joined.compare_alignment.empty()
                           ? ""
                           : "the script changed in between: " + slot.joined.compare_alignment;
    slot.current = join::currentCosts(slot.joined, doc.lineTracker(), compare_name, note);
    slot.line_generation = doc.lineGeneration();
  }
  return &slot.current;
}

json Session::inlayHints(const json& params) {
  auto p = parseParams<protocol::InlayHintParams>(params);
  Document& doc = documentFor(p.uri);
  json out = json::array();
  const features::FileCosts* costs = settings_.hints_enabled ? costsFor(doc) : nullptr;
  if (!costs) return out;
  const auto& file = doc.file();
  auto hints = features::computeInlayHints(file, doc.index(), *costs, profile_->profile(), settings_.hints,
                                           p.range.start.line, p.range.end.line);
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
  for (const auto& f : findingsFor(doc)) {
    if (offset < f.range.begin || offset > f.range.end) continue;
    value += (value.empty() ? "" : "\n\n---\n\n") + findingMarkdown(f);
  }
  if (const features::FileCosts* costs = costsFor(doc)) {
    if (auto info = features::computeHover(doc.file(), doc.index(), *costs, profile_->profile(), settings_.hints,
                                           p.position.line))
      value += (value.empty() ? "" : "\n\n---\n\n") + hoverMarkdown(*info);
  }
  if (value.empty()) return nullptr;
  return protocol::toJson(protocol::Hover{{"markdown", value}});
}

void Session::publishNow(Document& doc) {
  if (auto it = publish_timers_.find(doc.uri()); it != publish_timers_.end()) it->second->cancel();
  protocol::PublishDiagnosticsParams params;
  params.uri = doc.uri();
  if (client_.diagnostic_version) params.version = doc.version();
  for (const auto& f : findingsFor(doc))
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

std::vector<features::Finding> Session::computeFindings(Document& doc) {
  const auto& findings = doc.findings(settings_.rules, settings_generation_);
  const features::FileCosts* costs = costsFor(doc);
  if (!costs) return findings;
  auto out = features::confirmWithProfile(findings, doc.file(), doc.index(), *costs, profile_->profile(), settings_.rules,
                                          settings_.thresholds);
  auto path = uriToPath(doc.uri());
  std::string name = path ? std::filesystem::path(*path).filename().string() : doc.uri();
  if (auto f = features::sourceMismatchFinding(doc.file(), doc.index(), costs_[doc.uri()].joined.anchors, profile_->profile(),
                                               settings_.rules, name, &doc.lineTracker()))
    out.insert(out.begin(), std::move(*f));
  return out;
}

const std::vector<features::Finding>& Session::findingsFor(Document& doc) {
  auto& slot = findings_[doc.uri()];
  bool fresh = slot.line_generation == doc.lineGeneration() && slot.profile_generation == profile_generation_ &&
               slot.settings_generation == settings_generation_ && slot.settings_generation != 0;
  if (!fresh) {
    slot.findings = computeFindings(doc);
    slot.line_generation = doc.lineGeneration();
    slot.profile_generation = profile_generation_;
    slot.settings_generation = settings_generation_;
  }
  return slot.findings;
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
  const auto findings = findingsFor(doc);
  auto actions = features::computeCodeActions(doc.file(), doc.index(), selection, findings, settings_.actions);
  // On a hot line, the NVTX range is named after what the profile saw it run.
  if (const features::FileCosts* costs = costsFor(doc)) {
    uint32_t line = doc.file().lines().pointAt(selection.begin).line;
    std::string name = features::rangeNameFromProfile(*costs, profile_->profile(), settings_.hints, line);
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
  if (p.command == kLoadProfileCommand) {
    if (args.size() != 1 || !args[0].is_string())
      throw RequestError{ErrorCode::InvalidParams, "params.arguments: expected [path]"};
    auto files = expandProfileSetting(root_, args[0].get<std::string>());
    if (files.empty() || fileMtimeNs(files.front()) == 0)
      throw RequestError{ErrorCode::InvalidParams, "params.arguments[0]: no such file: " + args[0].get<std::string>()};
    loadProfiles({files.front()}, kLoadProfileCommand);
    return nullptr;
  }
  if (p.command == kReloadProfilesCommand) {
    loadProfiles(profile_ ? std::vector<std::string>{profile_->path} : profileCandidates(), kReloadProfilesCommand);
    return nullptr;
  }
  if (p.command == kShowSummaryCommand) {
    if (!profile_) return profile_error_.empty() ? "No profile is loaded." : "No profile is loaded: " + profile_error_;
    return profileSummaryMarkdown(*profile_);
  }
  if (p.command == kToggleHintsCommand) {
    settings_.hints_enabled = !settings_.hints_enabled;
    refreshHints();
    return settings_.hints_enabled;
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
    return {{"cwd", script.parent_path().string()},
            {"commands", c.commands},
            {"report", c.report + ".sqlite"},
            {"captureRange", c.capture_range},
            {"note", c.note}};
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
