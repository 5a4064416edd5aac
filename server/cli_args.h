// Shared by the command-line verbs: reading an option's value. Header-only, no state.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace sightline::server
