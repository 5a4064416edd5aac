// Path mapping by rules and by longest common suffix.
#include "analysis/attribution/path_mapping.h"

#include <algorithm>
#include <vector>

namespace sightline::attribution {
namespace {

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find_first_of("/\\", i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i && path.substr(i, j - i) != ".") out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool climbs(std::string_view path) {
  for (auto c : components(path))
    if (c == "..") return true;
  return false;
}

}  // namespace

std::optional<PathRule> parsePathRule(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return PathRule{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

size_t commonSuffixComponents(std::string_view a, std::string_view b) {
  auto ca = components(a);
  auto cb = components(b);
  size_t n = 0;
  while (n < ca.size() && n < cb.size() && ca[ca.size() - 1 - n] == cb[cb.size() - 1 - n]) ++n;
  return n;
}

std::optional<std::string> PathMapper::map(std::string_view profile_path) const {
  auto ok = [&](const std::string& p) { return !exists || exists(p); };
  for (const auto& rule : rules) {
    std::string from = rule.from;
    while (from.size() > 1 && from.back() == '/') from.pop_back();
    if (profile_path.substr(0, from.size()) != from) continue;
    std::string_view rest = profile_path.substr(from.size());
    if (!rest.empty() && rest[0] != '/' && rest[0] != '\\') continue;  // a whole component only
    if (climbs(rest)) continue;                                        // `..` would leave the rule's target
    std::string mapped = rule.to + std::string(rest);
    if (ok(mapped)) return mapped;
  }
  // An installed package's module (torchvision's models/resnet.py) is never the user's file of
  // the same name: by name it maps nowhere, only through a rule the user wrote.
  auto installed = [](std::string_view p) {
    return p.find("site-packages") != std::string_view::npos || p.find("dist-packages") != std::string_view::npos;
  };
  if (installed(profile_path)) return std::nullopt;
  const std::string* best = nullptr;
  size_t best_len = 0;
  for (const auto& c : candidates) {
    size_t n = commonSuffixComponents(profile_path, c);
    if (n > best_len) best = &c, best_len = n;
  }
  if (best) return *best;
  if (!root.empty()) {
    auto parts = components(profile_path);
    // Only what follows the last `..`: a suffix never climbs out of the root.
    auto up = std::find(parts.rbegin(), parts.rend(), std::string_view(".."));
    parts.erase(parts.begin(), up.base());
    for (size_t k = parts.size(); k >= 1; --k) {
      std::string candidate = root;
      for (size_t i = parts.size() - k; i < parts.size(); ++i) candidate += "/" + std::string(parts[i]);
      if (ok(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace sightline::attribution
