// Text made from the features' results, at the edge: inlay-hint labels and tooltips, hover
// cards and finding explanations (Markdown), and the change notation the editor and `report` use.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "analysis/features/diagnostics.h"
#include "analysis/features/hover.h"
#include "analysis/features/inlay_hints.h"
#include "analysis/features/kernel_kinds.h"
#include "analysis/features/step_headline.h"
#include "analysis/features/step_verdict.h"

namespace sightline::server {

// The warning for launches whose GPU records are missing, with counts per thread and the remedy
// that fits how the profile was captured; "" when none are missing.
std::string lostRecordsWarning(const attribution::Attribution& attr, const model::ProfileInfo& info);
// Every warning about a loaded profile, as each output shows them: the reader's, then lost records.
std::vector<std::string> profileWarnings(const attribution::Attribution& attr, const model::ProfileInfo& info);
// "81%" from 0.81; one decimal below 9.5% ("0.6%").
std::string formatShare(double share);
// A line's work by kind: "convolution 80% (20 kernels), batch norm 15% (10 kernels), ...".
std::string workKindsText(const std::vector<features::WorkKind>& kinds, size_t most = 4);

// "▮ 6.41 ms · 81% (fwd 1.82 + bwd 4.59) ▲ +0.20 ms", "Σ 12.4 ms · 93%", "▼ −0.40 ms (gone)".
std::string hintLabel(const features::LineHint& hint);
// The hint's tooltip (Markdown): a cost's breakdown, a roll-up's or gone line's sentence.
std::string hintTooltip(const features::LineHint& hint);
// The hint's figures for clients (the inlay hint's `data`, docs/lsp-extensions.md):
// {"kind", "gpuNs", "perStep", "share", "forwardNs", "backwardNs", "deltaNs"?}.
nlohmann::json hintData(const features::LineHint& hint);
// A line's breakdown as Markdown: time and share, forward + backward, methods, top GPU work,
// autograd ops, copies, memsets, host syncs, launches.
std::string breakdownMarkdown(const features::LineBreakdown& b);
// The hover card (Markdown).
std::string hoverMarkdown(const features::HoverInfo& hover);

// A finding under the cursor (Markdown): its message, why the pattern costs, the fix and the
// quick fixes on offer.
std::string findingMarkdown(const features::Finding& finding);

// The status bar's verdict (features::unprofiledSummary).
std::string verdictSummary(const features::StepVerdict& v);
}  // namespace sightline::server
