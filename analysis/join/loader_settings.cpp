#include "analysis/join/loader_settings.h"

#include <algorithm>
#include <string>

namespace sightline::join {

const source::Argument* keywordArg(const source::CallInfo& call, std::string_view keyword) {
  for (const auto& a : call.args)
    if (a.keyword == keyword) return &a;
  return nullptr;
}

bool hasSplat(const source::CallInfo& call) {
  return std::any_of(call.args.begin(), call.args.end(), [](const auto& a) { return a.is_splat; });
}

bool isDataLoaderCall(const source::CallInfo& call) {
  return call.resolved == "torch.utils.data.DataLoader" ||
         (call.method == "DataLoader" && call.resolved.find("DataLoader") != std::string::npos);
}

std::optional<LoaderSettings> loaderSettings(const source::SourceIndex& index) {
  bool found = false, workers = true, pin = true, persistent = true;
  for (const auto& call : index.calls) {
    if (!isDataLoaderCall(call)) continue;
    if (hasSplat(call)) return std::nullopt;
    found = true;
    auto value = [&](std::string_view keyword) {
      const auto* a = keywordArg(call, keyword);
      return a ? a->value_text : std::string();
    };
    std::string w = value("num_workers");
    workers = workers && !w.empty() && w != "0";
    pin = pin && value("pin_memory") == "True";
    persistent = persistent && value("persistent_workers") == "True";
  }
  if (!found) return std::nullopt;
  return LoaderSettings{workers, pin, persistent};
}

ScriptLoaders scriptLoaders(std::string_view text, const source::SourceIndex& index) {
  return {loaderSettings(index), text.find("DataLoader") == std::string_view::npos};
}

}  // namespace sightline::join
