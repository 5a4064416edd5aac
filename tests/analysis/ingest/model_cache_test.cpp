// The model cache: what it writes reads back as the same profile (every format), and a cache
// of another key, cut short or changed anywhere reads as an error, never as a profile.
#include "analysis/ingest/model_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

namespace fs = std::filesystem;

std::string encode(const model::Profile& p, const std::string& key) {
  std::string bytes;
  EXPECT_TRUE(encodeModelCache(p, key, [&](std::string_view b) {
    bytes += b;
    return true;
  }));
  return bytes;
}

class ModelCache : public ::testing::Test {
 protected:
  void SetUp() override { path_ = fs::temp_directory_path() / ("sightline_model_" + std::to_string(::getpid())); }
  void TearDown() override { fs::remove(path_); }
  std::optional<model::Profile> readBack(const std::string& bytes, const std::string& key, std::string& error) {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
    return readModelCache(path_.string(), key, error);
  }
  fs::path path_;
};

// Each kind of profile: its model, written and read back, writes the same bytes again; the
// tables a feature reads hold the same rows.
TEST_F(ModelCache, EveryFormatReadsBackAsTheSameProfile) {
  for (const std::string& file :
       {testing::repoProfile("examples/train_small_naive.sqlite.xz"),
        testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"), testing::dataProfile("memory/gpt_mem.pt.trace.json.xz"),
        testing::dataProfile("memory/gpt_oom_eval.pickle.xz"), testing::dataProfile("memory/gpt_nsys.sqlite.xz")}) {
    SCOPED_TRACE(file);
    auto loaded = loadProfile(file);
    ASSERT_TRUE(loaded.profile) << loaded.error;
    const model::Profile& p = *loaded.profile;
    std::string bytes = encode(p, "key");
    std::string error;
    auto back = readBack(bytes, "key", error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(encode(*back, "key"), bytes);
    EXPECT_EQ(back->info.format, p.info.format);
    EXPECT_EQ(back->info.warnings, p.info.warnings);
    EXPECT_EQ(back->info.processes.size(), p.info.processes.size());
    EXPECT_EQ(back->activities.size(), p.activities.size());
    EXPECT_EQ(back->calls.size(), p.calls.size());
    EXPECT_EQ(back->memory.events.size(), p.memory.events.size());
    EXPECT_EQ(back->memory_uses.size(), p.memory_uses.size());
    EXPECT_EQ(back->strings.size(), p.strings.size());
    EXPECT_EQ(back->totalGpuNs(), p.totalGpuNs());
    for (auto kind :
         {model::CaptureEvent::RuntimeCall, model::CaptureEvent::PythonBacktrace, model::CaptureEvent::TraceOp})
      EXPECT_EQ(back->capture.total(kind), p.capture.total(kind));
    if (!p.memory.frames.empty()) {
      EXPECT_EQ(back->memory.strings[back->memory.frames.back().file], p.memory.strings[p.memory.frames.back().file]);
    }
  }
}

// A job's merged model keeps each report's part: its name, version, GPUs, warnings and the
// pids it was given (a rank's summary is named from them).
TEST_F(ModelCache, AJobsPartsReadBack) {
  std::vector<model::Profile> parts;
  for (const char* rank : {"multi/ddp/ddp_rank0.sqlite.xz", "multi/ddp/ddp_rank1.sqlite.xz"}) {
    auto loaded = loadProfile(testing::dataProfile(rank));
    ASSERT_TRUE(loaded.profile) << loaded.error;
    parts.push_back(std::move(*loaded.profile));
  }
  parts.back().info.warnings.push_back("a warning of the second report");
  model::Profile job = model::mergeProfiles(std::move(parts), {"r0.sqlite", "r1.sqlite"});
  ASSERT_EQ(job.info.parts.size(), 2u);
  std::string bytes = encode(job, "job");
  std::string error;
  auto back = readBack(bytes, "job", error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(encode(*back, "job"), bytes);
  ASSERT_EQ(back->info.parts.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto &got = back->info.parts[i], &want = job.info.parts[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.format, want.format);
    EXPECT_EQ(got.tool_version, want.tool_version);
    EXPECT_EQ(got.gpus, want.gpus);
    EXPECT_EQ(got.warnings, want.warnings);
    EXPECT_EQ(got.capabilities, want.capabilities);
    EXPECT_EQ(got.pids, want.pids);
    EXPECT_FALSE(got.pids.empty());
  }
  EXPECT_EQ(back->info.parts[1].warnings, std::vector<std::string>{"a warning of the second report"});
  uint32_t own = 0;
  const model::ProfilePart* part = back->info.partOf(back->info.parts[1].pids.front().second, &own);
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->name, "r1.sqlite");
  EXPECT_EQ(own, back->info.parts[1].pids.front().first);
}

TEST_F(ModelCache, AnotherKeyIsRefused) {
  auto loaded = loadProfile(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  ASSERT_TRUE(loaded.profile);
  std::string error;
  EXPECT_FALSE(readBack(encode(*loaded.profile, "run.sqlite|100|1"), "run.sqlite|100|2", error));
  EXPECT_NE(error.find("another profile"), std::string::npos) << error;
  EXPECT_FALSE(readBack("PK\x03\x04 a zip, not ours", "k", error));
  EXPECT_EQ(error, "not a Sightline model cache");
}

TEST_F(ModelCache, ACutOrChangedCacheIsAnErrorWherever) {
  auto loaded = loadProfile(testing::repoProfile("examples/train_small_naive.sqlite.xz"));
  ASSERT_TRUE(loaded.profile);
  std::string bytes = encode(*loaded.profile, "key");
  std::string error;
  for (size_t at : {size_t{17}, size_t{40}, bytes.size() / 7, bytes.size() / 2, bytes.size() - 9, bytes.size() - 1}) {
    SCOPED_TRACE(at);
    EXPECT_FALSE(readBack(bytes.substr(0, at), "key", error));
    std::string changed = bytes;
    changed[at] = static_cast<char>(changed[at] ^ 0x21);
    EXPECT_FALSE(readBack(changed, "key", error));
    EXPECT_FALSE(readBack(bytes + "x", "key", error)) << "bytes after the checksum";
  }
}

// A table past 32 MB is read in two halves on two threads: it reads back row for row, and a
// change or a cut in either half is refused.
TEST_F(ModelCache, ALargeTableReadInHalvesIsWholeAndChecked) {
  model::Profile p;
  p.info.format = "nsys-sqlite";
  size_t rows = (size_t{40} << 20) / sizeof(model::NvtxRange) + 3;  // odd, so the halves differ
  p.ranges.resize(rows);
  for (size_t i = 0; i < rows; ++i) {
    p.ranges[i].start_ns = static_cast<int64_t>(i) * 7;
    p.ranges[i].end_ns = static_cast<int64_t>(i) * 7 + 5;
  }
  std::string bytes = encode(p, "key");
  std::string error;
  auto back = readBack(bytes, "key", error);
  ASSERT_TRUE(back) << error;
  ASSERT_EQ(back->ranges.size(), rows);
  EXPECT_EQ(back->ranges[rows / 2 + 1].start_ns, p.ranges[rows / 2 + 1].start_ns);
  EXPECT_EQ(back->ranges.back().end_ns, p.ranges.back().end_ns);
  EXPECT_EQ(encode(*back, "key"), bytes);
  for (size_t at : {bytes.size() / 4, bytes.size() / 2 + 5, bytes.size() * 3 / 4, bytes.size() - 200}) {
    SCOPED_TRACE(at);
    std::string changed = bytes;
    changed[at] = static_cast<char>(changed[at] ^ 0x10);
    EXPECT_FALSE(readBack(changed, "key", error));
    EXPECT_FALSE(readBack(bytes.substr(0, at), "key", error));
  }
}

// Taken at the load and written later (beside the join): the profile moved meanwhile and its
// info and names changed, the bytes are those of the profile as it was taken; a table past the
// size kept by reference is read from the profile's own rows.
TEST_F(ModelCache, AnImageTakenBeforeTheJoinWritesTheProfileAsTaken) {
  auto loaded = loadProfile(testing::dataProfile("multi/ddp/ddp_one.sqlite.xz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  model::Profile p = std::move(*loaded.profile);
  p.ranges.resize(p.ranges.size() + (size_t{40} << 20) / sizeof(model::NvtxRange));  // halved, by reference
  p.ranges.back().start_ns = 12345;
  std::string taken = encode(p, "key");
  ModelCacheImage image(p, "key");
  model::Profile moved = std::move(p);
  for (int i = 0; i < 5000; ++i) moved.strings.intern("a name the join interned " + std::to_string(i));
  moved.info.warnings.push_back("a warning the server added after the load");
  moved.info.processes.push_back({});
  std::string later;
  ASSERT_TRUE(image.write([&](std::string_view b) {
    later += b;
    return true;
  }));
  EXPECT_EQ(later, taken);
  std::string error;
  auto back = readBack(later, "key", error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->ranges.back().start_ns, 12345);
  EXPECT_EQ(back->info.warnings.size() + 1, moved.info.warnings.size());
  EXPECT_EQ(back->strings.size() + 5000, moved.strings.size());
}

}  // namespace
}  // namespace sightline::ingest
