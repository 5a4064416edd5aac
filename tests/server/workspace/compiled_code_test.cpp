// Finding and reading torch.compile's generated code while a profile loads
// (server/workspace/compiled_code.h): whatever the early thread managed, finish gives the modules the
// profile ran, as reading them after the load would.
#include "server/workspace/compiled_code.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::server {
namespace {

namespace fs = std::filesystem;
using sightline::testing::dataProfile;
using sightline::testing::dataTree;

std::string cache() { return dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache"; }

model::Profile load(const std::string& capture, CompiledCodeReader* reader = nullptr) {
  ingest::LoadOptions options;
  if (reader) options.names_read = reader->namesRead();
  auto loaded = ingest::loadProfile(dataProfile("compile/" + capture + ".sqlite.xz"), options);
  EXPECT_TRUE(loaded.profile) << loaded.error;
  return loaded.profile ? std::move(*loaded.profile) : model::Profile{};
}

CompiledCodeSearch named(const std::string& folder) {
  CompiledCodeSearch search;
  search.named = {folder};
  search.default_cache = false;
  return search;
}

std::set<std::string> moduleNames(const model::CompiledCode& code) {
  std::set<std::string> out;
  for (const auto& m : code.modules) out.insert(m.name);
  return out;
}

// The two modules of the provenance capture, read after the load.
const std::set<std::string> kProvModules = {"c676plqtf7l75l3hrp32ywho5kk5agisagg5hun75kgq2jam3hl6",
                                            "cj4vulsu3q7k65hcjcjb3dapzegkpy6ekw2ft7gsdiegbkxx4e5y"};

size_t launches(const model::CompiledCode& code) {
  size_t n = 0;
  for (const auto& m : code.modules) n += m.launches.size();
  return n;
}

TEST(CompiledCodeReader, ReadsWhileTheProfileLoadsWhatReadingAfterwardsWould) {
  auto after = findCompiledCode(load("compiled_prov"), named(cache()));
  ASSERT_TRUE(after);
  EXPECT_EQ(moduleNames(*after), kProvModules);

  // Told the modules by the nsys reader's names, early in the load.
  CompiledCodeReader early(named(cache()));
  auto profile = load("compiled_prov", &early);
  std::vector<std::string> searched;
  auto code = early.finish(profile, &searched);
  ASSERT_TRUE(code);
  EXPECT_EQ(moduleNames(*code), kProvModules);
  EXPECT_EQ(launches(*code), launches(*after));
  EXPECT_EQ(searched, std::vector<std::string>{fs::weakly_canonical(cache()).string()});

  // Told too few (the early thread skips an entry finish needs): finish reads it.
  CompiledCodeReader partial(named(cache()));
  partial.expect({*kProvModules.begin()});
  auto some = partial.finish(load("compiled_prov"));
  ASSERT_TRUE(some);
  EXPECT_EQ(moduleNames(*some), kProvModules);
  EXPECT_EQ(launches(*some), launches(*after));
}

TEST(CompiledCodeReader, AProfileWithoutGeneratedCodeGetsNone) {
  CompiledCodeReader reader(named(cache()));
  auto profile = load("eager", &reader);
  EXPECT_EQ(reader.finish(profile), nullptr);
  // Nothing named, nothing found: none, and no folder searched.
  CompiledCodeReader nothing(CompiledCodeSearch{{}, {}, nullptr, false});
  std::vector<std::string> searched;
  EXPECT_EQ(nothing.finish(load("compiled_prov"), &searched), nullptr);
  EXPECT_TRUE(searched.empty());
}

TEST(CompiledCodeReader, ABigCacheIsReadOnlyInPartBeforeItsModulesAreKnown) {
  // More entries than the early thread reads on a guess: broken ones first in listing order,
  // then the real cache's entries (hard links, or copies).
  auto dir = fs::temp_directory_path() / ("sightline_big_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (size_t i = 0; i < CompiledCodeReader::kSpeculativeEntries + 6; ++i) {
    fs::create_directories(dir / "fxgraph" / "aa" / ("f" + std::to_string(1000 + i)));
    std::ofstream(dir / "fxgraph" / "aa" / ("f" + std::to_string(1000 + i)) / "entry") << "not a pickle";
  }
  for (const auto& e : fs::recursive_directory_iterator(fs::path(cache()) / "fxgraph")) {
    if (!e.is_regular_file()) continue;
    auto to = dir / "fxgraph" / "zz" / e.path().parent_path().filename() / e.path().filename();
    fs::create_directories(to.parent_path());
    std::error_code ec;
    fs::create_hard_link(e.path(), to, ec);
    if (ec) fs::copy_file(e.path(), to);
  }
  CompiledCodeReader reader(named(dir.string()));  // never told the modules: guesses, then waits
  auto code = reader.finish(load("compiled_prov"));
  ASSERT_TRUE(code);
  EXPECT_EQ(moduleNames(*code), kProvModules);
  EXPECT_EQ(code->warnings.size(), CompiledCodeReader::kSpeculativeEntries + 6);  // each broken entry, once
  // The early thread stopped guessing at its limit (the broken entries read in well under the
  // load's time), and finish read the rest.
  EXPECT_LE(reader.guessedEntries(), CompiledCodeReader::kSpeculativeEntries);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sightline::server
