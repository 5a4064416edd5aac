// Profile paths onto workspace files: rules, longest common suffix, search under a root.
#include "analysis/attribution/path_mapping.h"

#include <gtest/gtest.h>

#include <set>

namespace sightline::attribution {
namespace {

TEST(PathMapping, CommonSuffix) {
  EXPECT_EQ(commonSuffixComponents("/scratch/u/proj/train.py", "/home/me/proj/train.py"), 2u);
  EXPECT_EQ(commonSuffixComponents("/a/train.py", "/b/eval.py"), 0u);
  EXPECT_EQ(commonSuffixComponents("C:\\work\\proj\\train.py", "/home/proj/train.py"), 2u);
}

TEST(PathMapping, RulesThenCandidatesThenRoot) {
  std::set<std::string> files = {"/home/me/proj/train.py", "/home/me/proj/models/net.py", "/ws/lab/gpu/train_small.py"};
  PathMapper m;
  m.exists = [&](const std::string& p) { return files.count(p) > 0; };
  m.rules = {*parsePathRule("/scratch/u/proj=/home/me/proj")};
  EXPECT_EQ(m.map("/scratch/u/proj/models/net.py"), "/home/me/proj/models/net.py");
  EXPECT_EQ(m.map("/scratch/u/projX/net.py"), std::nullopt) << "rules match whole components";
  m.candidates = {"/home/me/proj/train.py", "/elsewhere/train.py"};
  EXPECT_EQ(m.map("/cluster/job/proj/train.py"), "/home/me/proj/train.py") << "longest common suffix wins";
  m.candidates.clear();
  m.root = "/ws";
  EXPECT_EQ(m.map("/work/steering/lab/gpu/train_small.py"), "/ws/lab/gpu/train_small.py");
  EXPECT_EQ(m.map("/work/other.py"), std::nullopt);
  EXPECT_EQ(parsePathRule("novalue"), std::nullopt);
}

// A module of an installed package maps onto no file of the workspace by its name: a user's
// resnet.py once took the costs of torchvision's models/resnet.py, and `check` said the file
// was not the one profiled. A rule still maps it.
TEST(PathMapping, InstalledPackagesAreNeverMatchedByName) {
  PathMapper m;
  m.exists = [](const std::string&) { return true; };
  m.candidates = {"/ws/resnet.py"};
  m.root = "/ws";
  EXPECT_EQ(m.map("/usr/lib/python3/dist-packages/torchvision/models/resnet.py"), std::nullopt);
  EXPECT_EQ(m.map("/opt/venv/lib/python3.12/site-packages/torchvision/models/resnet.py"), std::nullopt);
  EXPECT_EQ(m.map("/root/job/resnet.py"), "/ws/resnet.py");
  m.rules = {*parsePathRule("/opt/venv/lib/python3.12/site-packages=/ws/vendored")};
  EXPECT_EQ(m.map("/opt/venv/lib/python3.12/site-packages/torchvision/models/resnet.py"),
            "/ws/vendored/torchvision/models/resnet.py");
}

TEST(PathMapping, NoPathClimbsOutOfTheRootOrARulesTarget) {
  PathMapper m;
  m.exists = [](const std::string&) { return true; };  // every file "exists"
  m.root = "/ws";
  EXPECT_EQ(m.map("../../etc/passwd"), "/ws/etc/passwd") << "only what follows the last `..`";
  EXPECT_EQ(m.map("a/../../b.py"), "/ws/b.py");
  EXPECT_EQ(m.map(".."), std::nullopt);
  m.root.clear();
  m.rules = {*parsePathRule("/scratch=/home/me")};
  EXPECT_EQ(m.map("/scratch/../../etc/passwd"), std::nullopt);
  EXPECT_EQ(m.map("/scratch/p/train.py"), "/home/me/p/train.py");
}

}  // namespace
}  // namespace sightline::attribution
