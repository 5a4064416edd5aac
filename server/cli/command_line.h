// The one argument parser of the sightline verbs (serve, check, report): options with and
// without values, `-h`/`--help`, positional arguments, and the messages and exit code 2 for
// what it cannot take. Each verb declares its options with a handler; a handler that returns
// a message rejects the value ("sightline VERB: MESSAGE").
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/attribution/path_mapping.h"

namespace sightline::server::cli {

class CommandLine {
 public:
  // Returns "" to accept the value, else the message to print.
  using ValueHandler = std::function<std::string(const std::string& value)>;

  CommandLine(std::string verb, std::string usage) : verb_(std::move(verb)), usage_(std::move(usage)) {}
  CommandLine& flag(std::string name, std::function<void()> handler);
  CommandLine& option(std::string name, ValueHandler handler);
  // Positional arguments are allowed (else one is an error).
  CommandLine& positional(std::vector<std::string>* into);

  // Parses; nullopt when the verb should go on, else the exit code to return (0 after help,
  // 2 after an error, both already printed).
  std::optional<int> parse(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) const;

 private:
  struct Option {
    std::string name;
    bool takes_value = false;
    std::function<void()> on_flag;
    ValueHandler on_value;
  };
  std::string verb_, usage_;
  std::vector<Option> options_;
  std::vector<std::string>* positional_ = nullptr;
};

// Handlers shared by verbs.
// `--map FROM=TO`: a path-mapping rule added to `mapper`.
CommandLine::ValueHandler mapRuleInto(attribution::PathMapper& mapper);
// One of `choices` into `into` ("unknown format "x" (text or json)").
CommandLine::ValueHandler choiceInto(std::string& into, std::vector<std::string> choices, const std::string& what);
// Any value into `into`.
CommandLine::ValueHandler valueInto(std::string& into);

// Profile paths map onto the named files by longest common suffix, then onto files under the
// current directory.
void mapOntoFiles(attribution::PathMapper& mapper, const std::vector<std::string>& files);

}  // namespace sightline::server::cli
