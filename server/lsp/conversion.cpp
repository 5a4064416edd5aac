// Conversion of analysis results to protocol types.
#include "server/lsp/conversion.h"

#include <algorithm>

#include "server/lsp/uri.h"

namespace sightline::server {

int toLspSeverity(features::Severity severity) { return static_cast<int>(severity); }

protocol::Diagnostic toDiagnostic(const source::SourceFile& file, const features::Finding& finding,
                                  PositionEncoding encoding, const Settings& settings) {
  protocol::Diagnostic d;
  d.range = toRange(file.text(), file.lines(), finding.range, encoding);
  d.severity = toLspSeverity(finding.severity);
  d.code = finding.code;
  d.codeDescriptionHref = ruleDocumentationUrl(settings, finding.code);
  d.message = finding.message;
  for (const auto& r : finding.related) {
    // Lines of other files: their text is not at hand here, so the start of the line.
    protocol::Position at{static_cast<uint32_t>(std::max(0, r.line - 1)), 0};
    d.relatedInformation.push_back({pathToUri(r.path), {at, at}, r.message});
  }
  return d;
}

protocol::WorkspaceEdit toWorkspaceEdit(const std::string& uri, const source::SourceFile& file,
                                        const std::vector<features::TextEdit>& edits, PositionEncoding encoding) {
  protocol::WorkspaceEdit out;
  auto& list = out.changes[uri];
  for (const auto& e : edits) list.push_back({toRange(file.text(), file.lines(), e.range, encoding), e.new_text});
  return out;
}

protocol::CodeAction toCodeAction(const std::string& uri, const source::SourceFile& file,
                                  const features::CodeAction& action, const std::vector<features::Finding>& findings,
                                  PositionEncoding encoding, const Settings& settings) {
  protocol::CodeAction out;
  out.title = action.title;
  out.kind = action.kind;
  out.isPreferred = action.preferred;
  if (action.finding >= 0)
    out.diagnostics.push_back(toDiagnostic(file, findings[static_cast<size_t>(action.finding)], encoding, settings));
  out.edit = toWorkspaceEdit(uri, file, action.edits, encoding);
  return out;
}

}  // namespace sightline::server
