// URI conversion: encodes every byte outside the unreserved set and '/'.
#include "server/lsp/uri.h"

#include <cctype>

namespace sightline::server {

std::string percentEncoded(const std::string& path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string pathToUri(const std::string& path) { return "file://" + percentEncoded(path); }

std::optional<std::string> uriToPath(const std::string& uri) {
  static constexpr std::string_view kPrefix = "file://";
  if (uri.compare(0, kPrefix.size(), kPrefix) != 0) return std::nullopt;
  std::string rest = uri.substr(kPrefix.size());
  // file://host/path: only the empty host or localhost is local.
  if (!rest.empty() && rest[0] != '/') {
    auto slash = rest.find('/');
    if (rest.compare(0, slash, "localhost") != 0) return std::nullopt;
    rest = slash == std::string::npos ? "/" : rest.substr(slash);
  }
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      out += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

}  // namespace sightline::server
