// JSON mapping of the LSP structures in lsp_types.h.
#include "protocol/lsp_types.h"

namespace sightline::protocol {

void fromJson(const JsonIn& in, Position& out) {
  out.line = in.field("line").asUInt();
  out.character = in.field("character").asUInt();
}
void fromJson(const JsonIn& in, Range& out) {
  fromJson(in.field("start"), out.start);
  fromJson(in.field("end"), out.end);
}
json toJson(const Position& p) { return {{"line", p.line}, {"character", p.character}}; }
json toJson(const Range& r) { return {{"start", toJson(r.start)}, {"end", toJson(r.end)}}; }

json toJson(const TextEdit& e) { return {{"range", toJson(e.range)}, {"newText", e.newText}}; }
void fromJson(const JsonIn& in, TextEdit& out) {
  fromJson(in.field("range"), out.range);
  out.newText = in.field("newText").asString();
}

json toJson(const WorkspaceEdit& e) {
  json changes = json::object();
  for (const auto& [uri, edits] : e.changes) {
    json list = json::array();
    for (const auto& edit : edits) list.push_back(toJson(edit));
    changes[uri] = std::move(list);
  }
  return {{"changes", std::move(changes)}};
}
void fromJson(const JsonIn& in, WorkspaceEdit& out) {
  if (auto changes = in.optionalField("changes")) {
    changes->requireObject();
    for (const auto& [uri, value] : changes->raw().items()) {
      JsonIn list(value, changes->path() + "." + uri);
      for (const auto& e : list.elements()) {
        TextEdit edit;
        fromJson(e, edit);
        out.changes[uri].push_back(edit);
      }
    }
  }
}

namespace {

bool flagAt(const json& root, std::initializer_list<const char*> path) {
  const json* cur = &root;
  for (const char* key : path) {
    if (!cur->is_object()) return false;
    auto it = cur->find(key);
    if (it == cur->end()) return false;
    cur = &*it;
  }
  return cur->is_boolean() ? cur->get<bool>() : !cur->is_null();
}

}  // namespace

void fromJson(const JsonIn& in, InitializeParams& out) {
  in.requireObject();
  if (auto pid = in.optionalField("processId")) out.processId = pid->asInt();
  if (auto root = in.optionalField("rootUri")) out.rootUri = root->asString();
  if (auto folders = in.optionalField("workspaceFolders"))
    for (const auto& f : folders->elements()) out.workspaceFolders.push_back(f.field("uri").asString());
  if (auto opts = in.optionalField("initializationOptions")) out.initializationOptions = opts->raw();
  auto caps = in.optionalField("capabilities");
  if (!caps) return;
  caps->requireObject();
  const json& c = caps->raw();
  auto& f = out.capabilities;
  if (auto general = caps->optionalField("general")) {
    if (auto encodings = general->optionalField("positionEncodings"))
      for (const auto& e : encodings->elements()) f.utf8_positions = f.utf8_positions || e.asString() == "utf-8";
  }
  f.configuration = flagAt(c, {"workspace", "configuration"});
  f.did_change_configuration_dynamic = flagAt(c, {"workspace", "didChangeConfiguration", "dynamicRegistration"});
  f.apply_edit = flagAt(c, {"workspace", "applyEdit"});
  f.code_action_literals = flagAt(c, {"textDocument", "codeAction", "codeActionLiteralSupport"});
  f.diagnostic_version = flagAt(c, {"textDocument", "publishDiagnostics", "versionSupport"});
  f.work_done_progress = flagAt(c, {"window", "workDoneProgress"});
  f.inlay_hint_refresh = flagAt(c, {"workspace", "inlayHint", "refreshSupport"});
  f.watched_files_dynamic = flagAt(c, {"workspace", "didChangeWatchedFiles", "dynamicRegistration"});
}

void fromJson(const JsonIn& in, DidOpenTextDocumentParams& out) {
  JsonIn doc = in.field("textDocument");
  out.textDocument.uri = doc.field("uri").asString();
  out.textDocument.languageId = doc.field("languageId").asString();
  out.textDocument.version = doc.field("version").asInt();
  out.textDocument.text = doc.field("text").asString();
}

void fromJson(const JsonIn& in, DidChangeTextDocumentParams& out) {
  JsonIn doc = in.field("textDocument");
  out.uri = doc.field("uri").asString();
  if (auto v = doc.optionalField("version")) out.version = v->asInt();
  for (const auto& change : in.field("contentChanges").elements()) {
    TextDocumentContentChangeEvent e;
    if (auto r = change.optionalField("range")) {
      Range range;
      fromJson(*r, range);
      e.range = range;
    }
    e.text = change.field("text").asString();
    out.contentChanges.push_back(std::move(e));
  }
}

void fromJson(const JsonIn& in, TextDocumentParams& out) { out.uri = in.field("textDocument").field("uri").asString(); }

json toJson(const Diagnostic& d) {
  json j = {{"range", toJson(d.range)},
            {"severity", d.severity},
            {"code", d.code},
            {"source", d.source},
            {"message", d.message}};
  if (!d.codeDescriptionHref.empty()) j["codeDescription"] = {{"href", d.codeDescriptionHref}};
  if (!d.relatedInformation.empty()) {
    json related = json::array();
    for (const auto& r : d.relatedInformation)
      related.push_back({{"location", {{"uri", r.uri}, {"range", toJson(r.range)}}}, {"message", r.message}});
    j["relatedInformation"] = std::move(related);
  }
  return j;
}

void fromJson(const JsonIn& in, Diagnostic& out) {
  fromJson(in.field("range"), out.range);
  out.message = in.field("message").asString();
  if (auto s = in.optionalField("severity")) out.severity = static_cast<int>(s->asInt());
  if (auto c = in.optionalField("code")) out.code = c->raw().is_string() ? c->asString() : c->raw().dump();
  if (auto s = in.optionalField("source")) out.source = s->asString();
}

json toJson(const PublishDiagnosticsParams& p) {
  json list = json::array();
  for (const auto& d : p.diagnostics) list.push_back(toJson(d));
  json j = {{"uri", p.uri}, {"diagnostics", std::move(list)}};
  if (p.version) j["version"] = *p.version;
  return j;
}

void fromJson(const JsonIn& in, CodeActionParams& out) {
  out.uri = in.field("textDocument").field("uri").asString();
  fromJson(in.field("range"), out.range);
  JsonIn context = in.field("context");
  for (const auto& d : context.field("diagnostics").elements()) {
    Diagnostic diag;
    fromJson(d, diag);
    out.diagnostics.push_back(std::move(diag));
  }
  if (auto only = context.optionalField("only"))
    for (const auto& k : only->elements()) out.only.push_back(k.asString());
}

json toJson(const Command& c) { return {{"title", c.title}, {"command", c.command}, {"arguments", c.arguments}}; }

json toJson(const CodeAction& a) {
  json j = {{"title", a.title}, {"kind", a.kind}};
  if (!a.diagnostics.empty()) {
    json list = json::array();
    for (const auto& d : a.diagnostics) list.push_back(toJson(d));
    j["diagnostics"] = std::move(list);
  }
  if (a.isPreferred) j["isPreferred"] = true;
  if (a.edit) j["edit"] = toJson(*a.edit);
  if (a.command) j["command"] = toJson(*a.command);
  return j;
}

void fromJson(const JsonIn& in, ExecuteCommandParams& out) {
  out.command = in.field("command").asString();
  if (auto args = in.optionalField("arguments")) {
    args->elements();  // must be an array
    out.arguments = args->raw();
  }
}

void fromJson(const JsonIn& in, CancelParams& out) {
  JsonIn id = in.field("id");
  if (!id.raw().is_number_integer() && !id.raw().is_string()) id.fail("expected an integer or a string");
  out.id = id.raw();
}

json toJson(const MarkupContent& m) { return {{"kind", m.kind}, {"value", m.value}}; }

void fromJson(const JsonIn& in, HoverParams& out) {
  out.uri = in.field("textDocument").field("uri").asString();
  fromJson(in.field("position"), out.position);
}

json toJson(const Hover& h) { return {{"contents", toJson(h.contents)}}; }

void fromJson(const JsonIn& in, InlayHintParams& out) {
  out.uri = in.field("textDocument").field("uri").asString();
  fromJson(in.field("range"), out.range);
}

json toJson(const InlayHint& h) {
  json j = {{"position", toJson(h.position)}, {"label", h.label}, {"paddingLeft", h.paddingLeft}};
  if (h.tooltip) j["tooltip"] = toJson(*h.tooltip);
  if (!h.data.is_null()) j["data"] = h.data;
  return j;
}

void fromJson(const JsonIn& in, DidChangeConfigurationParams& out) {
  auto settings = in.optionalField("settings");
  if (!settings || !settings->raw().is_object()) return;
  if (auto section = settings->optionalField("sightline"); section && section->raw().is_object())
    out.sightline = section->raw();
}

void fromJson(const JsonIn& in, DidChangeWatchedFilesParams& out) {
  for (const auto& change : in.field("changes").elements()) {
    FileEvent e;
    e.uri = change.field("uri").asString();
    if (auto type = change.optionalField("type")) e.type = static_cast<int>(type->asInt());
    out.changes.push_back(std::move(e));
  }
}

void fromJson(const JsonIn& in, StepViewParams& out) {
  if (!in.raw().is_object()) return;  // no params: the defaults
  if (auto format = in.optionalField("format")) out.format = format->asString();
  if (out.format != "json" && out.format != "html") in.field("format").fail("expected \"json\" or \"html\"");
}
void fromJson(const JsonIn& in, WorkDoneProgressCancelParams& out) { out.token = in.field("token").raw(); }

}  // namespace sightline::protocol
