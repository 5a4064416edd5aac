// Where torch.compile's generated code for a loaded profile is found (the server's and the
// verbs' one way; the reading itself is ingest/inductor_reader.h). Folders are tried in order:
// the ones the user named (`--compiled-code`, the `compiledCode` setting), the Inductor cache
// the profile's own stacks ran from when it exists here (same machine) or maps onto a local
// folder (path mapping, as for scripts), caches and TORCH_TRACE folders inside the workspace
// roots, and the default cache of this machine's user (/tmp/torchinductor_<user>).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/attribution/path_mapping.h"
#include "analysis/model/compiled_code.h"
#include "analysis/model/profile.h"

namespace sightline::server {

struct CompiledCodeSearch {
  std::vector<std::string> named;  // folders the user named
  std::vector<std::string> roots;  // workspace roots, searched a few levels down
  const attribution::PathMapper* mapper = nullptr;
  bool default_cache = true;  // also /tmp/torchinductor_<user>
};

// The generated code of the modules `profile` ran, or null when it ran none (not compiled) or
// none of it was found; `searched` lists the folders looked at.
std::shared_ptr<const model::CompiledCode> findCompiledCode(const model::Profile& profile,
                                                            const CompiledCodeSearch& search,
                                                            std::vector<std::string>* searched = nullptr);

}  // namespace sightline::server
