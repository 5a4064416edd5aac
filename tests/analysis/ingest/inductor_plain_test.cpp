// Plain generated code (compile/debug, one run's): a TORCH_COMPILE_DEBUG folder's wrappers are
// named as Inductor named the cache's copies, and a TORCH_LOGS=output_code log gives the same
// modules.
#include "analysis/ingest/inductor_plain.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "analysis/ingest/inductor_reader.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> cacheNames() {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(testing::dataTree("compile/debug/wrappers.tar.xz")))
    if (e.is_regular_file()) names.insert(plainModuleName(e.path()));
  return names;
}

TEST(InductorPlain, ADebugFoldersWrapperIsNamedAsItsCacheCopy) {
  std::set<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(testing::dataTree("compile/debug/compile_debug.tar.xz")))
    if (e.path().filename() == "output_code.py") {
      names.insert(inductorModuleName(readText(e.path())));
      // With the post-grad graph beside it: its launches carry the model's lines.
      auto code = readPlainCode(e.path().string(), PlainCode::DebugWrapper, {});
      ASSERT_EQ(code.modules.size(), 1u);
      EXPECT_EQ(code.modules[0].name, inductorModuleName(readText(e.path())));
      size_t placed = 0;
      for (const auto& l : code.modules[0].launches)
        if (!l.stack.empty() && l.stack.back().file.ends_with("train_gpt.py")) ++placed;
      EXPECT_GT(placed, code.modules[0].launches.size() / 2) << e.path();
    }
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(names, cacheNames());
}

TEST(InductorPlain, AnOutputCodeLogGivesTheRunsModulesWithoutLines) {
  model::CompiledCode code;
  std::string log = readText(testing::dataProfile("compile/debug/output_code.log.xz"));
  parseOutputCodeLog(log, "output_code.log", code);
  std::set<std::string> names;
  for (const auto& m : code.modules) {
    names.insert(m.name);
    EXPECT_FALSE(m.launches.empty());
    for (const auto& l : m.launches) EXPECT_TRUE(l.stack.empty());
  }
  EXPECT_EQ(names, cacheNames());
  // The same code bare (a handler of one's own): named by its hash, the same names.
  model::CompiledCode bare;
  std::string text;
  for (size_t at = 0; at < log.size();) {
    size_t eol = log.find('\n', at);
    std::string line = log.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
    at = eol == std::string::npos ? log.size() : eol + 1;
    auto tag = line.find("[__output_code] ");
    if (tag == std::string::npos) continue;
    std::string rest = line.substr(tag + 16);
    if (rest.starts_with("Output code written to: ")) continue;
    text += rest.starts_with("Output code: ") ? line : rest;
    text += '\n';
  }
  parseOutputCodeLog(text, "bare.log", bare);
  std::set<std::string> bare_names;
  for (const auto& m : bare.modules) bare_names.insert(m.name);
  EXPECT_EQ(bare_names, cacheNames());
}

TEST(InductorPlain, ATritonKernelNamedLikeAWrapperIsNoModule) {
  auto dir = fs::temp_directory_path() / "sightline_plain_kernel";
  fs::create_directories(dir / "ab");
  auto file = dir / "ab" / "cabcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrs.py";
  std::ofstream(file) << "import triton\n@triton.jit\ndef triton_poi_fused_0(in_ptr0):\n    pass\n";
  EXPECT_EQ(plainCodeKind(file), PlainCode::Wrapper);
  EXPECT_TRUE(readPlainCode(file.string(), PlainCode::Wrapper, {}).modules.empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sightline::ingest
