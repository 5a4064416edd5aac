// `sightline report` on every bundled capture, byte for byte against golden files in
// tests/data/golden (text and JSON), so a change of the pipeline that changes what users see
// fails here. The decompressed profile's path and the checkout's path are written as <cache>
// and <repo>, so the files hold on any machine. SIGHTLINE_UPDATE_GOLDEN=1 rewrites them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

struct GoldenCase {
  const char* name;     // tests/data/golden/<name>
  const char* profile;  // under tests/data, or examples/ (decompressed when .xz)
  const char* compare;  // "" or a second profile, like `profile`
  const char* args;     // the rest of the command line, from the repo root
};

std::string profilePath(const std::string& relative) {
  return relative.starts_with("examples/") ? repoProfile(relative) : dataProfile(relative);
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

class ReportGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ReportGolden, MatchesGoldenFile) {
  const GoldenCase& c = GetParam();
  std::string profile = profilePath(c.profile);
  std::string args = "report --profile '" + profile + "'";
  std::string compare;
  if (*c.compare) {
    compare = profilePath(c.compare);
    args += " --compare '" + compare + "'";
  }
  args += std::string(" ") + c.args;
  auto r = runSightline(args, sourcePath(""));
  ASSERT_EQ(r.code, 0) << r.out;
  std::string got = r.out;
  replaceAll(got, std::filesystem::path(profile).parent_path().string(), "<cache>");
  if (!compare.empty()) replaceAll(got, std::filesystem::path(compare).parent_path().string(), "<cache>");
  // The checkout's own files (not paths a profile recorded, which may name any folder).
  std::string repo = std::filesystem::path(sourcePath("")).lexically_normal().string();
  if (!repo.empty() && repo.back() != '/') repo += '/';
  for (const char* dir : {"tests/", "examples/"}) replaceAll(got, repo + dir, std::string("<repo>/") + dir);
  std::string golden = testDataPath(std::string("golden/") + c.name);
  const char* update = std::getenv("SIGHTLINE_UPDATE_GOLDEN");
  if (update && *update == '1') {
    std::ofstream(golden, std::ios::binary) << got;
    GTEST_SKIP() << "rewrote " << golden;
  }
  std::string want = readFile(golden);
  EXPECT_EQ(got, want) << "report output changed for " << c.name
                       << "; if the change is intended, rerun with SIGHTLINE_UPDATE_GOLDEN=1 and review the diff";
}

INSTANTIATE_TEST_SUITE_P(
    BundledCaptures, ReportGolden,
    ::testing::Values(
        GoldenCase{"example_nsys.json", "examples/train_small_naive.sqlite.xz", "",
                   "--format json examples/train_small.py"},
        GoldenCase{"example_nsys.txt", "examples/train_small_naive.sqlite.xz", "", "examples/train_small.py"},
        GoldenCase{"example_nsys_total_all_files.json", "examples/train_small_naive.sqlite.xz", "",
                   "--format json --total"},
        GoldenCase{"h100_nvtx_backtrace.json", "h100-nvtx/train_small_nvtx_backtrace.sqlite.xz", "",
                   "--format json tests/data/h100-nvtx/train_small.py"},
        GoldenCase{"h100_nvtx_only.json", "h100-nvtx/train_small_nvtx_only.sqlite.xz", "",
                   "--format json tests/data/h100-nvtx/train_small.py"},
        GoldenCase{"h100_nvtx_only.txt", "h100-nvtx/train_small_nvtx_only.sqlite.xz", "",
                   "tests/data/h100-nvtx/train_small.py"},
        GoldenCase{"h200_kineto.json", "h200/kineto/train_small_naive.pt.trace.json.gz", "",
                   "--format json tests/data/h200/kineto/train_small.py"},
        GoldenCase{"h200_kineto.txt", "h200/kineto/train_small_naive.pt.trace.json.gz", "",
                   "tests/data/h200/kineto/train_small.py"},
        GoldenCase{"h200_edited_compare.json", "h200/nsys-edited/train_small_tuned_edited.sqlite.xz",
                   "examples/train_small_naive.sqlite.xz", "--format json tests/data/h200/nsys-edited/train_small.py"},
        GoldenCase{"h200_edited_compare.txt", "h200/nsys-edited/train_small_tuned_edited.sqlite.xz",
                   "examples/train_small_naive.sqlite.xz", "tests/data/h200/nsys-edited/train_small.py"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string name = info.param.name;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace sightline::testing
