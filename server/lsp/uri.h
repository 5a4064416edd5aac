// file:// URIs <-> local paths (percent-encoding per RFC 3986). Other schemes are left as is.
#pragma once

#include <optional>
#include <string>

namespace sightline::server {

std::string pathToUri(const std::string& absolute_path);
// A path as a URI's path: every byte outside the unreserved set and '/' percent-encoded.
std::string percentEncoded(const std::string& path);
// The path of a file:// URI, or nullopt for other schemes.
std::optional<std::string> uriToPath(const std::string& uri);

}  // namespace sightline::server
