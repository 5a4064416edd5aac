// torch.compile's code kept as plain files rather than FX graph cache entries or TORCH_TRACE
// logs: an Inductor cache's wrappers (`xx/c<hash>.py`, first line `# AOT ID: [...]`), a
// TORCH_COMPILE_DEBUG folder (`output_code.py`, the same wrapper, beside
// `fx_graph_transformed.py`, the post-grad graph with its `# File:` lines) and a log of
// TORCH_LOGS=output_code (each wrapper after "Output code:", its cache path after "Output code
// written to:"). A wrapper alone names no source line: its module is read (so it is not
// reported missing) with launches that carry no stack.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <string_view>

#include "analysis/model/compiled_code.h"

namespace sightline::ingest {

enum class PlainCode : uint8_t { None, Wrapper, DebugWrapper, OutputLog };

// What a file may hold, by its name alone (its bytes decide when it is read).
PlainCode plainCodeKind(const std::filesystem::path& path);
// The name Inductor gives a wrapper module of this code ("c<hash>", its cache file's stem).
std::string inductorModuleName(std::string_view source);
// The stem of a generated module's file ("c<hash>" of ".../xx/c<hash>.py"), or "".
std::string plainModuleName(const std::filesystem::path& path);
// The modules of one such file; nothing when its bytes are not what its name promised (a
// Triton kernel's file is named like a wrapper). `want` (a profile's module names) skips
// wrappers by name before their bytes are read (a debug folder's is named by the hash of its
// code, as Inductor names the cache's copy).
model::CompiledCode readPlainCode(const std::string& path, PlainCode kind, const std::set<std::string>& want);
// The wrappers of a TORCH_LOGS=output_code log, appended to `out`.
void parseOutputCodeLog(std::string_view text, const std::string& path, model::CompiledCode& out);

}  // namespace sightline::ingest
