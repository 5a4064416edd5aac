// The join through an attribution store: a second join of the same profile with the same
// inputs reuses the stored attribution and answers the same; other options, another profile
// key or an edited script (whose call sites a trace's Python calls were placed with) do not.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "analysis/attribution/attribution_cache.h"
#include "analysis/ingest/profile_loader.h"
#include "analysis/join/profile_join.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

using testing::readFile;
using testing::testDataPath;

struct MemoryStore {
  std::map<std::string, std::string> entries;
  int loads = 0, stores = 0;
  AttributionStore store(const std::string& profile_key) {
    AttributionStore s;
    s.profile_key = profile_key;
    s.load = [this](const std::string& key) -> std::optional<std::string> {
      ++loads;
      auto it = entries.find(key);
      return it == entries.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    s.store = [this](const std::string& key, const std::string& bytes, double) {
      ++stores;
      entries[key] = bytes;
    };
    return s;
  }
};

// The PyTorch profiler trace of train_small_naive with its script: Python calls placed on the
// script's lines through its call sites, read through `script_text`.
std::unique_ptr<ProfileJoin> joinTrace(MemoryStore& store, const std::string& script_text, JoinOptions options = {},
                                       const std::string& profile_key = "trace") {
  auto loaded = ingest::loadProfile(testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"));
  EXPECT_TRUE(loaded.profile) << loaded.error;
  if (!loaded.profile) return nullptr;
  JoinEnvironment env;
  std::string script = testDataPath("h200/kineto/train_small.py");
  env.mapper.candidates = {script};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  env.read_source = [script, script_text](const std::string& path) -> std::optional<std::string> {
    if (path == script) return script_text;
    return std::nullopt;
  };
  options.attribution_store = store.store(profile_key);
  return std::make_unique<ProfileJoin>(std::move(*loaded.profile), std::move(env), options);
}

std::string bytesOf(const ProfileJoin& j) { return attribution::encodeAttribution(j.attribution(), "k", {}); }

TEST(AttributionStore, ASecondJoinReusesTheStoredAttribution) {
  MemoryStore store;
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  auto first = joinTrace(store, text);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->attributionReused());
  EXPECT_EQ(store.stores, 1);
  ASSERT_GT(first->attribution().attributed_gpu_ns, 0);
  auto second = joinTrace(store, text);
  EXPECT_TRUE(second->attributionReused());
  EXPECT_EQ(store.stores, 1);
  EXPECT_EQ(bytesOf(*second), bytesOf(*first));
  std::string script = testDataPath("h200/kineto/train_small.py");
  auto a = first->measuredCosts(script), b = second->measuredCosts(script);
  ASSERT_FALSE(a.lines.empty());
  EXPECT_EQ(a.lines.size(), b.lines.size());
  EXPECT_EQ(a.total_gpu_ns, b.total_gpu_ns);
  ASSERT_TRUE(first->story() && second->story());
  EXPECT_EQ(first->story()->summary.wall_ns, second->story()->summary.wall_ns);
}

// An attribution quicker than the store's threshold is not kept: attributing again costs no
// more than reading it back would.
TEST(AttributionStore, AQuickAttributionIsNotKept) {
  MemoryStore store;
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  auto loaded = ingest::loadProfile(testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  JoinOptions options;
  options.attribution_store = store.store("trace");
  options.attribution_store.keep_from_s = 3600;
  ProfileJoin join(std::move(*loaded.profile), JoinEnvironment{}, options);
  EXPECT_EQ(store.loads, 1);
  EXPECT_EQ(store.stores, 0);
  EXPECT_TRUE(store.entries.empty());
}

TEST(AttributionStore, OtherInputsAttributeAfresh) {
  MemoryStore store;
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  joinTrace(store, text);
  JoinOptions all_steps;
  all_steps.all_steps = true;
  EXPECT_FALSE(joinTrace(store, text, all_steps)->attributionReused());
  EXPECT_FALSE(joinTrace(store, text, {}, "another profile")->attributionReused());
  // The script edited: a line inserted at the top moves every call site.
  EXPECT_FALSE(joinTrace(store, "import os\n" + text)->attributionReused());
  EXPECT_TRUE(joinTrace(store, "import os\n" + text)->attributionReused());
  // One entry per profile and options: the script's last version is the one kept.
  EXPECT_FALSE(joinTrace(store, text)->attributionReused());
  EXPECT_TRUE(joinTrace(store, text)->attributionReused());
}

TEST(AttributionStore, DamagedEntriesAreAttributedAgain) {
  MemoryStore store;
  std::string text = readFile(testDataPath("h200/kineto/train_small.py"));
  auto first = joinTrace(store, text);
  ASSERT_EQ(store.entries.size(), 1u);
  auto& bytes = store.entries.begin()->second;
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  auto again = joinTrace(store, text);
  EXPECT_FALSE(again->attributionReused());
  EXPECT_EQ(bytesOf(*again), bytesOf(*first));
  EXPECT_EQ(store.stores, 2);  // stored again, whole
  EXPECT_TRUE(joinTrace(store, text)->attributionReused());
}

}  // namespace
}  // namespace sightline::join
