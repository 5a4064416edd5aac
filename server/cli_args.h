// Shared by the command-line verbs: reading an option's value, and the profile-path mapping
// that `--map` and the named files set up. Header-only, no state.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/attribution/path_mapping.h"

namespace sightline::server {

// The value after the option at args[i] (advancing i), or nullopt after telling `err`
// "sightline VERB: OPTION needs a value".
inline std::optional<std::string> optionValue(const std::vector<std::string>& args, size_t& i, std::string_view verb,
                                              std::ostream& err) {
  if (i + 1 >= args.size()) {
    err << "sightline " << verb << ": " << args[i] << " needs a value\n";
    return std::nullopt;
  }
  return args[++i];
}

// `--map FROM=TO` at args[i]: adds the rule, or tells `err` and returns false.
inline bool addMapOption(const std::vector<std::string>& args, size_t& i, std::string_view verb, std::ostream& err,
                         attribution::PathMapper& mapper) {
  auto v = optionValue(args, i, verb, err);
  if (!v) return false;
  auto rule = attribution::parsePathRule(*v);
  if (!rule) {
    err << "sightline " << verb << ": --map expects FROM=TO, got \"" << *v << "\"\n";
    return false;
  }
  mapper.rules.push_back(*rule);
  return true;
}

// Profile paths map onto the named files by longest common suffix, then onto files under the
// current directory.
inline void mapOntoFiles(attribution::PathMapper& mapper, const std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& f : files) mapper.candidates.push_back(std::filesystem::absolute(f, ec).string());
  mapper.root = std::filesystem::current_path(ec).string();
  mapper.exists = [](const std::string& p) {
    std::error_code e;
    return std::filesystem::is_regular_file(p, e);
  };
}

}  // namespace sightline::server
