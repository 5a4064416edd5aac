// The snapshot reader that takes trace entries as they complete (a file read in pieces, the
// document never holding them all) gives what reading the whole document first gives: every
// event, block, frame and stack of our captures, with pieces of any size.
#include "analysis/ingest/memory_snapshot_reader.h"

#include <gtest/gtest.h>

#include "tests/support/crafted_snapshots.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

void expectSame(const model::MemorySnapshot& a, const model::MemorySnapshot& b, const std::string& what) {
  ASSERT_EQ(a.events.size(), b.events.size()) << what;
  for (size_t i = 0; i < a.events.size(); ++i) {
    const auto &x = a.events[i], &y = b.events[i];
    ASSERT_TRUE(x.action == y.action && x.device == y.device && x.addr == y.addr && x.size == y.size &&
                x.time_us == y.time_us && x.deviceFree() == y.deviceFree())
        << what << " event " << i;
    // Stacks are numbered as they are met: compare their frames.
    ASSERT_EQ(a.stacks[x.stack].size(), b.stacks[y.stack].size()) << what << " event " << i;
    for (size_t f = 0; f < a.stacks[x.stack].size(); ++f) {
      const auto &fa = a.frames[a.stacks[x.stack][f]], &fb = b.frames[b.stacks[y.stack][f]];
      ASSERT_TRUE(a.strings[fa.file] == b.strings[fb.file] && a.strings[fa.function] == b.strings[fb.function] &&
                  fa.line == fb.line)
          << what << " event " << i;
    }
  }
  ASSERT_EQ(a.blocks.size(), b.blocks.size()) << what;
  for (size_t i = 0; i < a.blocks.size(); ++i)
    EXPECT_TRUE(a.blocks[i].addr == b.blocks[i].addr && a.blocks[i].size == b.blocks[i].size &&
                a.blocks[i].allocated == b.blocks[i].allocated &&
                a.stacks[a.blocks[i].stack].size() == b.stacks[b.blocks[i].stack].size())
        << what << " block " << i;
  EXPECT_EQ(a.reserved_at_dump, b.reserved_at_dump) << what;
  EXPECT_EQ(a.warnings, b.warnings) << what;
}

TEST(MemorySnapshotReader, EntriesTakenAsTheyCompleteMatchTheWholeDocument) {
  for (const char* name : {"gpt", "gpt_keep", "gpt_start", "gpt_oom_eval", "gpt_oom_fwd", "cnn"}) {
    std::string path = testing::dataProfile(std::string("memory/") + name + ".pickle.xz"), error;
    auto whole = parseMemorySnapshot(testing::readFile(path), error, true);
    ASSERT_TRUE(whole) << name << ": " << error;
    EXPECT_GT(whole->events.size(), 500u) << name;
    auto taken = parseMemorySnapshot(testing::readFile(path), error);
    ASSERT_TRUE(taken) << name << ": " << error;
    expectSame(*whole, *taken, std::string(name) + " (bytes)");
    for (uint64_t piece : {uint64_t{1} << 20, uint64_t{4093}, uint64_t{7}}) {
      PickleLimits limits;
      limits.read_size = piece;
      auto file = readMemorySnapshot(path, error, limits);
      ASSERT_TRUE(file) << name << ": " << error;
      expectSame(*whole, *file, std::string(name) + " (file, pieces of " + std::to_string(piece) + ")");
    }
  }
}

// A snapshot cut short, and one whose pickle lies about a string's length: errors, from a file
// as from bytes.
TEST(MemorySnapshotReader, ACutFileIsAClearError) {
  std::string bytes = testing::readFile(testing::dataProfile("memory/gpt_oom_eval.pickle.xz"));
  std::string path = ::testing::TempDir() + "/cut.pickle";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size() / 2, f);
  std::fclose(f);
  std::string error;
  EXPECT_FALSE(readMemorySnapshot(path, error));
  EXPECT_NE(error.find("cut short"), std::string::npos) << error;
  EXPECT_FALSE(parseMemorySnapshot(bytes.substr(0, bytes.size() / 2), error));
  EXPECT_NE(error.find("cut short"), std::string::npos) << error;
}

// Issue 42, item 5: one trace list named for 4096 devices ([trace] * 4096) is read once, for
// device 0 (it was read for each: 200 KB of pickle went past 2 GB).
TEST(MemorySnapshotReader, ATraceListNamedForManyDevicesIsReadOnce) {
  for (bool whole : {true, false}) {
    std::string error;
    auto s = parseMemorySnapshot(testing::sharedTraceSnapshot(4096, 300), error, whole);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->events.size(), 300u) << whole;
    for (const auto& e : s->events) ASSERT_EQ(e.device, 0);
    ASSERT_EQ(s->warnings.size(), 1u) << whole;
    EXPECT_NE(s->warnings[0].find("4095 devices' traces were a list already read"), std::string::npos)
        << s->warnings[0];
  }
}

// Issue 42, item 7: a segment named 1000 times, or 1000 segments sharing one blocks list, are
// read once (10^4 x 10^4 of them, 40 KB, made 10^8 blocks: 5.5 GB, then std::bad_alloc).
TEST(MemorySnapshotReader, ASegmentOrBlocksListNamedManyTimesIsReadOnce) {
  for (bool distinct : {false, true}) {
    std::string error;
    auto s = parseMemorySnapshot(testing::sharedBlocksSnapshot(1000, 1000, distinct), error);
    ASSERT_TRUE(s) << error;
    EXPECT_EQ(s->blocks.size(), 1000u) << distinct;  // the one list's, each a reference to one block
    ASSERT_EQ(s->reserved_at_dump.size(), 1u);
    // The segments are read (their sizes counted) when they are segments of their own.
    EXPECT_EQ(s->reserved_at_dump[0], (distinct ? 1000 : 1) * 512 * 1000) << distinct;
    ASSERT_EQ(s->warnings.size(), 1u) << distinct;
    EXPECT_NE(s->warnings[0].find("999 segments or blocks lists were one already read"), std::string::npos)
        << s->warnings[0];
  }
}

// Issue 42, item 6: a thousand frames sharing one 1 MiB file name hold it once, cut at 4096
// bytes (each frame held two copies: 1 MB of pickle took 2 GB here, 6 GB in the report).
TEST(MemorySnapshotReader, AFileNameSharedByManyFramesIsHeldOnce) {
  std::string error;
  auto s = parseMemorySnapshot(testing::sharedFileNameSnapshot(size_t{1} << 20, 1000), error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->frames.size(), 1000u);
  EXPECT_EQ(s->strings.size(), 3u);  // "", the file name, "f"
  for (const auto& f : s->frames) ASSERT_EQ(f.file, s->frames[0].file);
  const std::string& name = s->strings[s->frames[0].file];
  EXPECT_EQ(name.size(), 4096u);
  EXPECT_TRUE(name.starts_with("/work/aaaa")) << name.substr(0, 20);
  EXPECT_EQ(s->strings[s->frames[0].function], "f");
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_NE(s->warnings[0].find("1 frame names longer than 4096 bytes were cut there"), std::string::npos)
      << s->warnings[0];
  // Cut at a character's start: 1365 three-byte characters are kept of 2000, not 1365 and a third.
  testing::PickleWriter w;
  std::string euros;
  for (int i = 0; i < 2000; ++i) euros += "\u20ac";
  w.op('}').op('(').key("segments").op(']').key("device_traces").op(']').op(']').op('}').op('(');
  w.key("action").key("alloc").key("size").integer(512).key("frames").op(']').op('}').op('(');
  w.key("filename").key(euros).key("line").integer(1).op('u').op('a');
  s = parseMemorySnapshot(w.op('u').op('a').op('a').op('u').finish(), error);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->frames.size(), 1u);
  EXPECT_EQ(s->strings[s->frames[0].file], euros.substr(0, 1365 * 3));
}

// Issue 46, item 1: a full ring buffer (each entry's frames list and compile_context string
// memoized, its free naming the same list) leaves the document holding what is distinct, not
// what each entry made (the ImageNet snapshot's 2M entries kept 2M lists; re-keying them took
// 60 s), and every free gets its allocation's stack.
TEST(MemorySnapshotReader, AFullRingBufferKeepsWhatIsDistinct) {
  const int entries = 200000, stacks = 20, depth = 12;
  std::string path = ::testing::TempDir() + "/ring.pickle";
  {
    std::string bytes = testing::ringBufferSnapshot(entries, stacks, depth);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  std::string error;
  SnapshotReadStats stats;
  auto s = readMemorySnapshot(path, error, PickleLimits{}, &stats);
  ASSERT_TRUE(s) << error;
  ASSERT_EQ(s->events.size(), static_cast<size_t>(entries));
  EXPECT_EQ(s->stacks.size(), static_cast<size_t>(stacks) + 1);  // and "no frames"
  for (size_t i = 0; i + 1 < s->events.size(); i += 2) {
    ASSERT_EQ(s->events[i].action, model::MemoryAction::Alloc);
    ASSERT_EQ(s->events[i + 1].stack, s->events[i].stack) << i;
    ASSERT_EQ(s->stacks[s->events[i].stack].size(), static_cast<size_t>(depth)) << i;
  }
  // The frames, their strings, one list per stack, the keys: a few thousand values, not the
  // 400,000 lists and strings the entries made.
  EXPECT_LT(stats.document_values, 5000u);
  // The same snapshot whole (no entries taken while reading) reads the same.
  std::string bytes = testing::readFile(path);
  auto whole = parseMemorySnapshot(bytes, error, true);
  ASSERT_TRUE(whole) << error;
  expectSame(*whole, *s, "ring buffer");
}

}  // namespace
}  // namespace sightline::ingest
