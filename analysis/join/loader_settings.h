// What the training script's DataLoader calls ask for: the verdict's advice for a step that
// waits for data names only what is missing. Read once per load from the script the step story
// names (join/profile_join.h), so every surface gives the same advice.
#pragma once

#include <optional>
#include <string_view>

#include "analysis/source/source_index.h"

namespace sightline::join {

// The keyword argument `keyword` of `call`, or null.
const source::Argument* keywordArg(const source::CallInfo& call, std::string_view keyword);
// Whether the call passes `*args` or `**kwargs` (its arguments are then not all known).
bool hasSplat(const source::CallInfo& call);
// torch.utils.data.DataLoader(...), however it was imported.
bool isDataLoaderCall(const source::CallInfo& call);

// What a file's DataLoader calls already ask for (each of them); none when the file makes no
// DataLoader or passes one its arguments through `**kwargs`.
struct LoaderSettings {
  bool workers = false, pin_memory = false, persistent = false;
};
std::optional<LoaderSettings> loaderSettings(const source::SourceIndex& index);

// The training script's loaders as the verdict takes them: `settings` from its DataLoader calls,
// `none` when the script was read and makes no DataLoader at all (advice about workers would
// not apply). Neither when the script could not be read.
struct ScriptLoaders {
  std::optional<LoaderSettings> settings;
  bool none = false;
};
ScriptLoaders scriptLoaders(std::string_view text, const source::SourceIndex& index);

}  // namespace sightline::join
