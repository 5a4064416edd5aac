// The verbs' argument parser.
#include "server/cli/command_line.h"

#include <filesystem>

#include "server/workspace/local_files.h"

namespace sightline::server::cli {

CommandLine& CommandLine::flag(std::string name, std::function<void()> handler) {
  options_.push_back({std::move(name), false, std::move(handler), {}});
  return *this;
}

CommandLine& CommandLine::option(std::string name, ValueHandler handler) {
  options_.push_back({std::move(name), true, {}, std::move(handler)});
  return *this;
}

CommandLine& CommandLine::positional(std::vector<std::string>* into) {
  positional_ = into;
  return *this;
}

std::optional<int> CommandLine::parse(const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err) const {
  const std::string prefix = "sightline " + verb_ + ": ";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << usage_;
      return 0;
    }
    const Option* option = nullptr;
    for (const auto& o : options_)
      if (o.name == a) option = &o;
    if (!option) {
      if (a.size() > 1 && a[0] == '-') {
        err << prefix << "unknown option " << a << "\n" << usage_;
        return 2;
      }
      if (!positional_) {
        err << prefix << "unexpected argument " << a << "\n" << usage_;
        return 2;
      }
      positional_->push_back(a);
      continue;
    }
    if (!option->takes_value) {
      option->on_flag();
      continue;
    }
    if (i + 1 >= args.size()) {
      err << prefix << a << " needs a value\n";
      return 2;
    }
    std::string problem = option->on_value(args[++i]);
    if (!problem.empty()) {
      err << prefix << problem << "\n";
      return 2;
    }
  }
  return std::nullopt;
}

CommandLine::ValueHandler mapRuleInto(attribution::PathMapper& mapper) {
  return [&mapper](const std::string& v) -> std::string {
    auto rule = attribution::parsePathRule(v);
    if (!rule) return "--map expects FROM=TO, got \"" + v + "\"";
    mapper.rules.push_back(*rule);
    return "";
  };
}

CommandLine::ValueHandler choiceInto(std::string& into, std::vector<std::string> choices, const std::string& what) {
  return [&into, choices = std::move(choices), what](const std::string& v) -> std::string {
    for (const auto& c : choices)
      if (c == v) {
        into = v;
        return "";
      }
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i)
      list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    return "unknown " + what + " \"" + v + "\" (" + list + ")";
  };
}

CommandLine::ValueHandler valueInto(std::string& into) {
  return [&into](const std::string& v) {
    into = v;
    return std::string();
  };
}

void mapOntoFiles(attribution::PathMapper& mapper, const std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& f : files) mapper.candidates.push_back(std::filesystem::absolute(f, ec).string());
  mapper.root = std::filesystem::current_path(ec).string();
  mapper.exists = existsWithin(scopeOf(mapper));
}

}  // namespace sightline::server::cli
