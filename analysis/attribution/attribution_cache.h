// An attribution as compact binary, so that a profile reopened with the same inputs skips
// attribution (the server's reopen cache keeps it beside the profile's model). Pure: the
// bytes come from and go to the caller. What an attribution depends on besides the profile
// (the caller keys the profile itself) is summed up by `attributionInputs`; the call-site
// tables it asked for while it ran (traces of Python calls) are kept in the entry as digests
// and asked for again before the entry is used, so an edited script attributes afresh.
// Reading checks everything before trusting it: magic, layout, key, counts against the bytes
// left, a checksum of the whole, and every string id, index and enum against the profile.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {

// What `options` tells attribution of `profile` beyond the profile itself, as a key; nullopt
// when that cannot be summed up (a custom user-file test, compile windows, or a profile that
// ran torch.compile's generated code: its mapping depends on generated files not keyed here).
std::optional<std::string> attributionInputs(const model::Profile& profile, const Options& options);

// A call-site table's digest (0 for none).
uint64_t callSitesDigest(const CallSiteTable* table);

// The call-site tables an attribution asked for: (profile path, digest).
using CallSiteAnswers = std::vector<std::pair<std::string, uint64_t>>;

std::string encodeAttribution(const Attribution& attribution, const std::string& key, const CallSiteAnswers& answers);

// The attribution stored in `bytes` under `key`, checked against `profile` and against the
// call-site tables `call_sites` gives now; nullopt with `error` saying why.
std::optional<Attribution> decodeAttribution(std::string_view bytes, const std::string& key,
                                             const model::Profile& profile,
                                             const std::function<const CallSiteTable*(std::string_view)>& call_sites,
                                             std::string& error);

}  // namespace sightline::attribution
