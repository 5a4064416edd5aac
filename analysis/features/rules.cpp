// The rule table and rule configuration lookups.
#include "analysis/features/rules.h"

namespace sightline::features {

const std::vector<RuleInfo>& allRules() {
  static const std::vector<RuleInfo> rules = {
      {"dataloader-pin-memory", Severity::Warning,
       "DataLoader without pin_memory=True in a file that copies batches to the GPU"},
      {"dataloader-num-workers", Severity::Warning,
       "DataLoader loading batches in the training process (no num_workers, or 0)"},
      {"missing-non-blocking", Severity::Warning, "batch copied to the GPU inside a loop without non_blocking=True"},
      {"sync-in-loop", Severity::Warning,
       "host-device synchronization (.item(), .cpu(), printing a tensor, ...) inside a training loop"},
      {"cuda-synchronize-in-loop", Severity::Warning, "torch.cuda.synchronize() inside a training loop"},
      {"zero-grad-set-to-none", Severity::Warning, "zero_grad(set_to_none=False) writes zeros into every gradient"},
      {"cpu-tensor-then-copy", Severity::Warning,
       "tensor created on the CPU and copied to the GPU in the same expression"},
      // Raised only with a profile (profile_diagnostics.h).
      {"pageable-memcpy", Severity::Warning, "copies between the GPU and pageable host memory (needs a profile)"},
      {"sync-memcpy", Severity::Warning, "synchronous memcpy calls that block the host (needs a profile)"},
      {"profile-source-mismatch", Severity::Warning,
       "the file differs from the source the loaded profile measured (needs a profile)"},
      {"sync-api", Severity::Warning, "host time blocked in CUDA synchronize calls (needs a profile)"},
      {"launch-bound", Severity::Warning, "many tiny kernels per step from one line (needs a profile)"},
  };
  return rules;
}

const RuleInfo* findRule(std::string_view code) {
  for (const auto& r : allRules())
    if (r.code == code) return &r;
  return nullptr;
}

std::optional<Severity> parseSeverity(std::string_view name) {
  if (name == "error") return Severity::Error;
  if (name == "warning") return Severity::Warning;
  if (name == "information" || name == "info") return Severity::Information;
  if (name == "hint") return Severity::Hint;
  return std::nullopt;
}

std::string_view severityName(Severity severity) {
  switch (severity) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Information:
      return "information";
    case Severity::Hint:
      return "hint";
  }
  return "warning";
}

bool RuleConfig::enabled(std::string_view code) const {
  auto it = rules.find(code);
  return it == rules.end() || it->second.enabled;
}

Severity RuleConfig::severityOf(std::string_view code) const {
  auto it = rules.find(code);
  if (it != rules.end() && it->second.severity) return *it->second.severity;
  const RuleInfo* rule = findRule(code);
  return rule ? rule->default_severity : Severity::Warning;
}

}  // namespace sightline::features
