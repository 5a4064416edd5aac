// LSP structures Sightline reads or writes, with LSP field names, each with a free
// fromJson (for what clients send) and/or toJson (for what the server sends). Added only when a
// feature needs them. Positions are as the client encodes them (see PositionEncoding).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/json_in.h"

namespace sightline::protocol {

using nlohmann::json;

struct Position {
  uint32_t line = 0;
  uint32_t character = 0;  // code units of the negotiated position encoding
  friend bool operator==(const Position&, const Position&) = default;
};
struct Range {
  Position start;
  Position end;
  friend bool operator==(const Range&, const Range&) = default;
};
void fromJson(const JsonIn& in, Position& out);
void fromJson(const JsonIn& in, Range& out);
json toJson(const Position& p);
json toJson(const Range& r);

struct TextEdit {
  Range range;
  std::string newText;
};
json toJson(const TextEdit& e);
void fromJson(const JsonIn& in, TextEdit& out);

struct WorkspaceEdit {
  std::map<std::string, std::vector<TextEdit>> changes;  // by document URI
};
json toJson(const WorkspaceEdit& e);
void fromJson(const JsonIn& in, WorkspaceEdit& out);

// --- initialize ---------------------------------------------------------------------------
// What the client can do, boiled down to flags at initialize.
struct ClientCapabilities {
  bool utf8_positions = false;  // general.positionEncodings offers "utf-8"
  bool configuration = false;   // workspace.configuration
  bool did_change_configuration_dynamic = false;
  bool apply_edit = false;             // workspace.applyEdit
  bool code_action_literals = false;   // textDocument.codeAction.codeActionLiteralSupport
  bool diagnostic_version = false;     // textDocument.publishDiagnostics.versionSupport
  bool work_done_progress = false;     // window.workDoneProgress
  bool inlay_hint_refresh = false;     // workspace.inlayHint.refreshSupport
  bool watched_files_dynamic = false;  // workspace.didChangeWatchedFiles.dynamicRegistration
};

struct InitializeParams {
  std::optional<int64_t> processId;
  std::optional<std::string> rootUri;
  std::vector<std::string> workspaceFolders;  // URIs
  ClientCapabilities capabilities;
  json initializationOptions;
};
void fromJson(const JsonIn& in, InitializeParams& out);

// --- documents ----------------------------------------------------------------------------
struct TextDocumentItem {
  std::string uri;
  std::string languageId;
  int64_t version = 0;
  std::string text;
};
struct DidOpenTextDocumentParams {
  TextDocumentItem textDocument;
};
struct TextDocumentContentChangeEvent {
  std::optional<Range> range;  // absent: the whole text
  std::string text;
};
struct DidChangeTextDocumentParams {
  std::string uri;
  int64_t version = 0;
  std::vector<TextDocumentContentChangeEvent> contentChanges;
};
struct TextDocumentParams {  // didClose, didSave: only the document matters to us
  std::string uri;
};
void fromJson(const JsonIn& in, DidOpenTextDocumentParams& out);
void fromJson(const JsonIn& in, DidChangeTextDocumentParams& out);
void fromJson(const JsonIn& in, TextDocumentParams& out);

// --- diagnostics and code actions ---------------------------------------------------------
// A place elsewhere that a diagnostic points to (relatedInformation).
struct DiagnosticRelatedInformation {
  std::string uri;
  Range range;
  std::string message;
};

struct Diagnostic {
  Range range;
  int severity = 2;  // 1 error, 2 warning, 3 information, 4 hint
  std::string code;
  std::string codeDescriptionHref;  // omitted when empty
  std::string source = "sightline";
  std::string message;
  std::vector<DiagnosticRelatedInformation> relatedInformation;  // omitted when empty
};
json toJson(const Diagnostic& d);
void fromJson(const JsonIn& in, Diagnostic& out);

struct PublishDiagnosticsParams {
  std::string uri;
  std::optional<int64_t> version;
  std::vector<Diagnostic> diagnostics;
};
json toJson(const PublishDiagnosticsParams& p);

struct CodeActionParams {
  std::string uri;
  Range range;
  std::vector<Diagnostic> diagnostics;  // context.diagnostics
  std::vector<std::string> only;        // context.only
};
void fromJson(const JsonIn& in, CodeActionParams& out);

struct Command {
  std::string title;
  std::string command;
  json arguments = json::array();
};
json toJson(const Command& c);

struct CodeAction {
  std::string title;
  std::string kind;
  std::vector<Diagnostic> diagnostics;
  bool isPreferred = false;
  std::optional<WorkspaceEdit> edit;
  std::optional<Command> command;
};
json toJson(const CodeAction& a);

struct ExecuteCommandParams {
  std::string command;
  json arguments = json::array();
};
void fromJson(const JsonIn& in, ExecuteCommandParams& out);

// --- hover and inlay hints ----------------------------------------------------------------
struct MarkupContent {
  std::string kind = "markdown";  // "markdown" or "plaintext"
  std::string value;
};
json toJson(const MarkupContent& m);

struct HoverParams {
  std::string uri;  // textDocument.uri
  Position position;
};
void fromJson(const JsonIn& in, HoverParams& out);

struct Hover {
  MarkupContent contents;
};
json toJson(const Hover& h);

struct InlayHintParams {
  std::string uri;  // textDocument.uri
  Range range;
};
void fromJson(const JsonIn& in, InlayHintParams& out);

struct InlayHint {
  Position position;
  std::string label;
  bool paddingLeft = false;
  std::optional<MarkupContent> tooltip;
  json data;  // omitted when null: Sightline's figures (docs/lsp-extensions.md)
};
json toJson(const InlayHint& h);

// --- workspace and window notifications ---------------------------------------------------
struct DidChangeConfigurationParams {
  std::optional<json> sightline;  // settings.sightline, when the client sent the section
};
void fromJson(const JsonIn& in, DidChangeConfigurationParams& out);

struct FileEvent {
  std::string uri;
  int type = 0;  // 1 created, 2 changed, 3 deleted
};
struct DidChangeWatchedFilesParams {
  std::vector<FileEvent> changes;
};
void fromJson(const JsonIn& in, DidChangeWatchedFilesParams& out);

struct WorkDoneProgressCancelParams {
  json token;  // integer or string
};
void fromJson(const JsonIn& in, WorkDoneProgressCancelParams& out);

// `sightline/stepView` (docs/lsp-extensions.md): "json" (default) for the view's data, "html" for
// the self-contained page.
struct StepViewParams {
  std::string format = "json";
};
void fromJson(const JsonIn& in, StepViewParams& out);

struct CancelParams {
  json id;  // integer or string
};
void fromJson(const JsonIn& in, CancelParams& out);

}  // namespace sightline::protocol
