// The places in a Python file that open NVTX ranges, for the `nvtx` attribution method:
// `with torch.cuda.nvtx.range("fwd"):`, `torch.cuda.nvtx.range_push("fwd")`,
// `nvtx.annotate("fwd")` (the nvtx package, as a context manager or decorator) and
// `record_function("fwd")`, when the text is a plain string literal.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/source/source_index.h"

namespace sightline::attribution {

// The value of a Python string literal as written ('a', "a", r'a', """a"""), or nullopt for
// f-strings, concatenations and anything else that is not one literal.
std::optional<std::string> stringLiteralValue(std::string_view text);

// Every range-opening call of the index, charged to `file` (a string of the profile).
std::vector<NvtxSite> findNvtxSites(const source::SourceFile& file, const source::SourceIndex& index,
                                    model::StringId profile_file);

}  // namespace sightline::attribution
