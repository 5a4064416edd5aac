// Analysis results -> LSP structures (diagnostics, code actions, workspace edits). The only
// code that knows both sides; positions go through position_conversion.
#pragma once

#include <string>
#include <vector>

#include "analysis/features/code_actions.h"
#include "protocol/lsp_types.h"
#include "server/lsp/position_conversion.h"
#include "server/workspace/settings.h"

namespace sightline::server {

protocol::Diagnostic toDiagnostic(const source::SourceFile& file, const features::Finding& finding,
                                  PositionEncoding encoding, const Settings& settings);

protocol::WorkspaceEdit toWorkspaceEdit(const std::string& uri, const source::SourceFile& file,
                                        const std::vector<features::TextEdit>& edits, PositionEncoding encoding);

protocol::CodeAction toCodeAction(const std::string& uri, const source::SourceFile& file,
                                  const features::CodeAction& action, const std::vector<features::Finding>& findings,
                                  PositionEncoding encoding, const Settings& settings);

int toLspSeverity(features::Severity severity);

}  // namespace sightline::server
