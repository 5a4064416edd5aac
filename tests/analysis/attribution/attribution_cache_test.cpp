// Attributions kept as bytes: what is written reads back as the same attribution for every
// kind of capture; another key, a changed call-site table, a cut, a flipped byte, bytes after
// the end and ids that do not fit the profile all read as errors, never as an attribution.
#include "analysis/attribution/attribution_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::attribution {
namespace {

const std::string kKey = "profile key\ninputs";

model::Profile load(const std::string& file) {
  auto loaded = ingest::loadProfile(file);
  EXPECT_TRUE(loaded.profile) << loaded.error;
  return loaded.profile ? std::move(*loaded.profile) : model::Profile{};
}

std::optional<Attribution> decode(std::string_view bytes, const model::Profile& p, std::string& error,
                                  const std::string& key = kKey) {
  return decodeAttribution(bytes, key, p, nullptr, error);
}

TEST(AttributionCache, EveryKindOfCaptureReadsBackTheSame) {
  for (const std::string& file :
       {testing::repoProfile("examples/train_small_naive.sqlite.xz"),
        testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"), testing::dataProfile("memory/gpt_mem.pt.trace.json.xz"),
        testing::dataProfile("memory/gpt_nsys.sqlite.xz"),
        testing::testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz")}) {
    SCOPED_TRACE(file);
    model::Profile p = load(file);
    Attribution a = attribute(p);
    std::string bytes = encodeAttribution(a, kKey, {});
    std::string error;
    auto back = decode(bytes, p, error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(encodeAttribution(*back, kKey, {}), bytes);  // every field, as written
    EXPECT_EQ(back->steady_gpu_ns, a.steady_gpu_ns);
    EXPECT_EQ(back->files.size(), a.files.size());
    EXPECT_EQ(back->activity_lines.size(), p.activities.size());
    EXPECT_EQ(back->step_summary.wall_ns, a.step_summary.wall_ns);
    EXPECT_EQ(back->ranks.size(), a.ranks.size());
    EXPECT_EQ(back->contexts, a.contexts);
  }
}

// A runner that gives every task a thread of its own, counting the times it was lent.
class ThreadPerTask final : public source::TaskRunner {
 public:
  void runAll(size_t count, const std::function<void(size_t)>& task) override {
    ++lent;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < count; ++i) threads.emplace_back([&task, i] { task(i); });
    for (auto& t : threads) t.join();
  }
  int lent = 0;
};

// The parts of the attribution that run at once on lent threads give every field as in turn.
TEST(AttributionCache, LentThreadsGiveTheSameAttribution) {
  for (const std::string& file :
       {testing::repoProfile("examples/train_small_naive.sqlite.xz"),
        testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"), testing::dataProfile("memory/gpt_mem.pt.trace.json.xz"),
        testing::testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz")}) {
    SCOPED_TRACE(file);
    model::Profile p = load(file);
    ThreadPerTask runner;
    Options options;
    options.runner = &runner;
    std::string at_once = encodeAttribution(attribute(p, options), kKey, {});
    EXPECT_EQ(runner.lent, 3);  // the indexes, the lines beside the steps, the steps' parts beside the estimate
    EXPECT_EQ(at_once, encodeAttribution(attribute(p), kKey, {}));
  }
}

TEST(AttributionCache, ForeignDamagedOrCutBytesAreErrors) {
  model::Profile p = load(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  std::string bytes = encodeAttribution(attribute(p), kKey, {});
  std::string error;
  EXPECT_FALSE(decode(bytes, p, error, "another key"));
  EXPECT_EQ(error, "made with other inputs");
  EXPECT_FALSE(decode("not an attribution at all", p, error));
  for (size_t at : {size_t{0}, size_t{9}, size_t{40}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(at);
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    EXPECT_FALSE(decode(flipped, p, error));
    EXPECT_FALSE(decode(std::string_view(bytes).substr(0, at), p, error));
  }
  EXPECT_FALSE(decode(bytes + "more", p, error));
}

// A well-formed entry (checksum and all) whose ids do not fit the profile it is read for:
// refused, never used to index the profile.
TEST(AttributionCache, IdsOutsideTheProfileAreRefused) {
  model::Profile p = load(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  Attribution a = attribute(p);
  ASSERT_FALSE(a.activity_lines.empty());
  std::string error;
  Attribution bad_file = a;
  bad_file.activity_lines.back().file = static_cast<model::StringId>(p.strings.size() + 5);
  EXPECT_FALSE(decode(encodeAttribution(bad_file, kKey, {}), p, error));
  EXPECT_EQ(error, "damaged (does not fit the profile)");
  Attribution bad_context = a;
  bad_context.activity_lines.front().context = static_cast<uint32_t>(a.contexts.size());
  EXPECT_FALSE(decode(encodeAttribution(bad_context, kKey, {}), p, error));
  Attribution short_lines = a;
  short_lines.activity_lines.pop_back();
  EXPECT_FALSE(decode(encodeAttribution(short_lines, kKey, {}), p, error));
  Attribution bad_method = a;
  bad_method.activity_lines.front().method = static_cast<Method>(kMethodCount);
  EXPECT_FALSE(decode(encodeAttribution(bad_method, kKey, {}), p, error));
  // And another profile than the one it was made for.
  model::Profile other = load(testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"));
  EXPECT_FALSE(decode(encodeAttribution(a, kKey, {}), other, error));
}

// The call-site tables it was made with are asked for again: a changed one refuses the entry.
TEST(AttributionCache, AChangedCallSiteTableRefusesTheEntry) {
  model::Profile p = load(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  CallSiteTable before, after;
  before.functions.push_back({"<module>", 1, 1, 40, {{12, "relu", {}, false}}});
  after = before;
  after.functions[0].calls[0].line = 13;
  ASSERT_NE(callSitesDigest(&before), callSitesDigest(&after));
  EXPECT_EQ(callSitesDigest(nullptr), 0u);
  std::string bytes = encodeAttribution(attribute(p), kKey, {{"train.py", callSitesDigest(&before)}});
  std::string error;
  auto same = [&](std::string_view) { return &before; };
  auto changed = [&](std::string_view) { return &after; };
  auto gone = [](std::string_view) -> const CallSiteTable* { return nullptr; };
  EXPECT_TRUE(decodeAttribution(bytes, kKey, p, same, error)) << error;
  EXPECT_FALSE(decodeAttribution(bytes, kKey, p, changed, error));
  EXPECT_EQ(error, "a script it was attributed with changed");
  EXPECT_FALSE(decodeAttribution(bytes, kKey, p, gone, error));
}

TEST(AttributionCache, InputsKeyFollowsTheOptions) {
  model::Profile p = load(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  Options base;
  auto key = attributionInputs(p, base);
  ASSERT_TRUE(key);
  Options gap = base;
  gap.idle_gap_ns = 2'000'000;
  Options all = base;
  all.all_steps = true;
  Options logged = base;
  logged.logged_step_ns = 123;
  Options nvtx = base;
  nvtx.nvtx_sites.push_back({"step", 1, 10, true});
  for (const Options* o : {&gap, &all, &logged, &nvtx}) EXPECT_NE(attributionInputs(p, *o), key);
  EXPECT_EQ(attributionInputs(p, base), key);
  Options custom = base;
  custom.is_user_file = [](std::string_view) { return true; };
  EXPECT_FALSE(attributionInputs(p, custom));  // a function's answers are not kept
  Options windows = base;
  windows.compile_windows.push_back({});
  EXPECT_FALSE(attributionInputs(p, windows));
}

}  // namespace
}  // namespace sightline::attribution
