// file:// URIs.
#include "server/lsp/uri.h"

#include <gtest/gtest.h>

namespace sightline::server {
namespace {

TEST(Uri, RoundTripsPathsWithSpacesAndUnicode) {
  std::string path = "/home/u/my proj/tränen#1.py";
  std::string uri = pathToUri(path);
  EXPECT_EQ(uri, "file:///home/u/my%20proj/tr%C3%A4nen%231.py");
  EXPECT_EQ(uriToPath(uri), path);
  EXPECT_EQ(uriToPath("file://localhost/a/b.py"), "/a/b.py");
  EXPECT_EQ(uriToPath("untitled:Untitled-1"), std::nullopt);
  EXPECT_EQ(uriToPath("file://otherhost/a"), std::nullopt);
}

}  // namespace
}  // namespace sightline::server
