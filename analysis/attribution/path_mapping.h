// Maps the script paths a profile recorded (paths on the machine that ran it, e.g.
// /scratch/u/proj/train.py) onto files of the user's workspace: explicit prefix rules first,
// then the local file sharing the longest path suffix. Pure: file existence is asked through
// a callback, so the analysis layer does no IO of its own here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::attribution {

struct PathRule {
  std::string from;  // a prefix of profile paths, e.g. "/scratch/u/proj"
  std::string to;    // what replaces it, e.g. "." or "/home/me/proj"
};

// "FROM=TO" -> rule; nullopt when there is no '='.
std::optional<PathRule> parsePathRule(std::string_view text);

// Number of trailing path components two paths share ("a/b/c.py" vs "x/b/c.py" -> 2).
size_t commonSuffixComponents(std::string_view a, std::string_view b);

struct PathMapper {
  std::vector<PathRule> rules;
  std::vector<std::string> candidates;  // local files the user named (absolute or relative)
  std::string root;                     // a directory to look for suffixes of the path in ("" = none)
  std::function<bool(const std::string&)> exists;

  // The local path for a profile path, or nullopt.
  std::optional<std::string> map(std::string_view profile_path) const;
};

}  // namespace sightline::attribution
