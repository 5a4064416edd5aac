// The memory replay on our H100 captures (tests/data/memory), checked against the independent
// replay in tests/data/memory/replay.py (its figures are the expectations below) and against
// what torch.cuda.max_memory_allocated/reserved printed in the runs' logs.
#include "analysis/attribution/memory_replay.h"

#include <gtest/gtest.h>

#include "analysis/ingest/memory_snapshot_reader.h"
#include "tests/support/crafted_snapshots.h"
#include "tests/support/test_paths.h"

namespace sightline::attribution {
namespace {

MemoryReplay replayOf(const std::string& name, const std::string& user = "gpt_mem.py") {
  std::string error;
  auto snapshot = ingest::readMemorySnapshot(testing::dataProfile("memory/" + name + ".pickle.xz"), error);
  EXPECT_TRUE(snapshot) << error;
  if (!snapshot) return {};
  auto replays = replayMemory(*snapshot, [&](std::string_view path) {
    return path.size() >= user.size() && path.substr(path.size() - user.size()) == user;
  });
  EXPECT_EQ(replays.size(), 1u);
  return replays.empty() ? MemoryReplay{} : replays[0];
}

int64_t bytesOn(const MemoryReplay& r, int32_t line) {
  for (const auto& l : r.lines)
    if (l.line == line) return l.bytes;
  return 0;
}

TEST(MemoryReplay, ARunRecordedFromTheStartPutsEveryByteOfThePeakOnALine) {
  auto r = replayOf("gpt_start");
  EXPECT_EQ(r.peak_allocated, 6041915464);  // torch.cuda.max_memory_allocated: 6051878400 (0.16% more)
  EXPECT_EQ(r.peak_reserved, 6715080704);   // torch.cuda.max_memory_reserved: the same
  EXPECT_EQ(r.allocated_before_trace, 0);
  EXPECT_EQ(r.unattributed_at_peak, 0);
  ASSERT_GE(r.lines.size(), 3u);
  // The backward() line holds the gradients the engine's thread made (no frames of their own).
  EXPECT_EQ(r.lines[0].line, 128);
  EXPECT_EQ(r.lines[0].bytes, 1681915908);
  EXPECT_EQ(bytesOn(r, 129), 961511424);  // optimizer.step(): AdamW's state
  EXPECT_EQ(bytesOn(r, 60), 836796416);   // the logits
  EXPECT_FALSE(r.oom);
}

TEST(MemoryReplay, OutOfMemoryInEvaluation) {
  auto r = replayOf("gpt_oom_eval");
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom->line, 73);  // the loss of evaluate(): F.cross_entropy on the logits
  EXPECT_EQ(r.oom->requested, 26373783552);
  EXPECT_EQ(r.oom->free, 15202451456);
  EXPECT_EQ(r.peak_allocated, 68221917252);
  EXPECT_EQ(r.peak_reserved, 69744984064);
  EXPECT_EQ(r.lines[0].line, 60);  // the head's logits
  EXPECT_EQ(r.lines[0].bytes, 27601666048);
  EXPECT_EQ(bytesOn(r, 41), 21749563392);
  EXPECT_EQ(r.unattributed_at_peak, 0);
}

TEST(MemoryReplay, OutOfMemoryInTheForward) {
  auto r = replayOf("gpt_oom_fwd");
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom->line, 35);
  EXPECT_EQ(r.oom->requested, 1610612736);
  EXPECT_EQ(r.oom->free, 146997248);
  EXPECT_EQ(r.peak_allocated, 84132979200);
  EXPECT_EQ(r.lines[0].line, 41);
  EXPECT_EQ(r.lines[0].bytes, 43491262464);
}

TEST(MemoryReplay, WhatPredatesTheTraceCountsFromTheStart) {
  // Recorded from the third iteration: the model, its gradients and AdamW's state came before.
  auto r = replayOf("gpt");
  EXPECT_EQ(r.peak_allocated, 6051876936);  // torch.cuda.max_memory_allocated: 6051878400
  EXPECT_EQ(r.allocated_before_trace, 2344599620);
  EXPECT_EQ(r.unattributed_at_peak, 1520386048);
  EXPECT_EQ(bytesOn(r, 128), 1648361476);
  // A ring buffer of 2,000 events: most of the CNN's memory was allocated before it.
  auto cnn = replayOf("cnn", "cnn_mem.py");
  EXPECT_EQ(cnn.peak_allocated, 749006375);  // torch: 749008384
  EXPECT_EQ(cnn.peak_reserved, 1264582656);  // torch: the same
  EXPECT_EQ(cnn.allocated_before_trace, 549024152);
  EXPECT_EQ(bytesOn(cnn, 23), 369099264);
}

TEST(MemoryReplay, BytesKeptStepAfterStepStayOnTheirLine) {
  auto r = replayOf("gpt_keep");             // every step's logits kept in a list
  EXPECT_EQ(r.peak_allocated, 15117865032);  // torch: 15117866496
  EXPECT_EQ(r.lines[0].line, 60);
  EXPECT_EQ(r.lines[0].bytes, 8254423040);
}

// The ImageNet example's order with a ring buffer: the step before's gradients predate the
// trace, are alive at the peak (the end of the forward) and are freed by `zero_grad()`. They
// were charged to `optimizer.zero_grad()`, the line that freed them; they are backward's. A
// block the trace only frees elsewhere has no known line.
TEST(MemoryReplay, GradientsFreedByZeroGradAreBackwards) {
  model::MemorySnapshot s;
  s.strings = {"",
               "/w/train.py",
               "<module>",
               "/usr/lib/python3/site-packages/torch/optim/optimizer.py",
               "zero_grad",
               "/usr/lib/python3/site-packages/torch/_tensor.py",
               "backward",
               "??",
               "torch::autograd::Engine::thread_main"};
  // Frames: 0 train.py:10 (forward), 1 train.py:11 (zero_grad), 2 optimizer.zero_grad, 3 train.py:12
  // (loss.backward()), 4 Tensor.backward, 5 the engine's C++ frame, 6 train.py:13 (del out).
  s.frames = {{1, 2, 10}, {1, 2, 11}, {3, 4, 100}, {1, 2, 12}, {5, 6, 200}, {7, 8, 0}, {1, 2, 13}};
  s.stacks = {{}, {0}, {2, 1}, {4, 3}, {5}, {6}};
  using model::MemoryAction;
  auto event = [](MemoryAction a, uint32_t stack, uint64_t addr, int64_t size) {
    model::MemoryEvent e;
    e.action = a, e.stack = stack, e.addr = addr, e.size = size;
    return e;
  };
  s.events = {event(MemoryAction::Alloc, 1, 0x1000, 1000),         // the forward's activations
              event(MemoryAction::FreeCompleted, 2, 0x9000, 400),  // last step's gradients (pre-trace)
              event(MemoryAction::FreeCompleted, 5, 0x8000, 300),  // a pre-trace block freed elsewhere
              event(MemoryAction::Alloc, 3, 0x2000, 4),            // backward's seed, on the main thread
              event(MemoryAction::Alloc, 4, 0x3000, 400),          // a gradient, on the engine's thread
              event(MemoryAction::FreeCompleted, 5, 0x1000, 1000)};
  s.reserved_at_dump = {1 << 20};
  auto replays = replayMemory(s, [](std::string_view path) { return path == "/w/train.py"; });
  ASSERT_EQ(replays.size(), 1u);
  const auto& r = replays[0];
  EXPECT_EQ(r.allocated_before_trace, 400 + 300);
  EXPECT_EQ(r.peak_allocated, 700 + 1000);  // the forward's end: both old blocks still alive
  EXPECT_EQ(bytesOn(r, 10), 1000);
  EXPECT_EQ(bytesOn(r, 11), 0);            // zero_grad made nothing
  EXPECT_EQ(bytesOn(r, 12), 400);          // loss.backward() made the gradients
  EXPECT_EQ(bytesOn(r, 13), 0);            // nor did the line that freed the other block make it
  EXPECT_EQ(r.unattributed_at_peak, 300);  // that one's maker is unknown
}

TEST(MemoryReplay, NotASnapshotIsAClearError) {
  std::string error;
  EXPECT_FALSE(ingest::readMemorySnapshot(testing::testDataPath("memory/plain_p4.pickle"), error));
  EXPECT_NE(error.find("no segments and no device_traces"), std::string::npos) << error;
  EXPECT_FALSE(ingest::readMemorySnapshot(testing::testDataPath("memory/absent.pickle"), error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

// Issue 42, item 8: a stack of 100k frames shared by every event is walked once, its one file
// name tested once (each event walked it again and again: 17 s for 455 KB).
TEST(MemoryReplay, AStackSharedByEveryEventIsWalkedOnce) {
  std::string error;
  auto snapshot = ingest::parseMemorySnapshot(testing::sharedStackSnapshot(100000, 2000), error);
  ASSERT_TRUE(snapshot) << error;
  ASSERT_EQ(snapshot->stacks.size(), 2u);
  EXPECT_EQ(snapshot->stacks[1].size(), 100000u);
  size_t asked = 0;
  auto replays = replayMemory(*snapshot, [&](std::string_view) {
    ++asked;
    return false;
  });
  EXPECT_EQ(asked, 1u);
  ASSERT_EQ(replays.size(), 1u);
  EXPECT_EQ(replays[0].peak_allocated, 512);
  EXPECT_EQ(replays[0].peak_phase, MemoryPhase::Forward);
  EXPECT_EQ(replays[0].unattributed_at_peak, 512);
}

// Issue 42, item 9: segments on 6000 device numbers: those past 4095 are an input error, skipped
// and counted; the 4096 others are replayed from one pass over the events and blocks (a replay
// per device scanned them all: 200k devices took 24 s).
TEST(MemoryReplay, DevicesPastTheRangeAreSkippedAndTheRestReplayedInOnePass) {
  std::string error;
  auto snapshot = ingest::parseMemorySnapshot(testing::manyDevicesSnapshot(6000, 100), error);
  ASSERT_TRUE(snapshot) << error;
  EXPECT_EQ(snapshot->blocks.size(), 4096u);
  EXPECT_EQ(snapshot->reserved_at_dump.size(), 4096u);
  ASSERT_EQ(snapshot->warnings.size(), 1u);
  EXPECT_NE(snapshot->warnings[0].find("1904 segments on device numbers outside 0..4095 were skipped"),
            std::string::npos)
      << snapshot->warnings[0];
  auto replays = replayMemory(*snapshot, isDefaultUserFile);
  ASSERT_EQ(replays.size(), 4096u);
  EXPECT_EQ(replays[0].device, 0);
  EXPECT_EQ(replays[0].peak_allocated, 1024);  // its block, and one allocation of the trace at a time
  EXPECT_EQ(replays[0].peak_reserved, 512);
  EXPECT_EQ(replays[4095].device, 4095);
  EXPECT_EQ(replays[4095].peak_allocated, 512);  // its block alone
  EXPECT_EQ(replays[4095].allocated_before_trace, 512);
}

// Issue 46, item 2: the picture's bands. Each sample holds the band lines' bytes alive where it
// took its allocated bytes: at the peak's sample exactly the bytes each line holds at the peak,
// never more than the allocated total; the peak's step is sampled again, finer.
TEST(MemoryReplay, BandsHoldEachTopLinesBytesOverTime) {
  for (const char* name : {"gpt_start", "gpt", "gpt_oom_eval"}) {
    auto r = replayOf(name);
    ASSERT_EQ(r.band_lines.size(), std::min(kMemoryBands, r.lines.size())) << name;
    for (size_t b = 0; b < r.band_lines.size(); ++b)
      EXPECT_EQ(r.band_lines[b], std::make_pair(r.lines[b].file, r.lines[b].line)) << name;
    bool peak_seen = false;
    for (const auto& s : r.series) {
      ASSERT_EQ(s.bands.size(), r.band_lines.size()) << name;
      int64_t sum = 0;
      for (int64_t b : s.bands) {
        EXPECT_GE(b, 0) << name;
        sum += b;
      }
      EXPECT_LE(sum, s.allocated) << name;
      if (s.allocated == r.peak_allocated && s.time_us == r.peak_time_us && !peak_seen) {
        peak_seen = true;
        for (size_t b = 0; b < s.bands.size(); ++b) EXPECT_EQ(s.bands[b], r.lines[b].bytes) << name << " band " << b;
      }
    }
    EXPECT_TRUE(peak_seen) << name;
    if (std::string(name) == "gpt_start") {  // 2 of 12 iterations a sample: the peak's step apart
      ASSERT_GT(r.step_series.size(), 100u);
      int64_t most = 0;
      for (const auto& s : r.step_series) {
        most = std::max(most, s.allocated);
        EXPECT_GT(s.reserved, 0);
      }
      EXPECT_EQ(most, r.peak_allocated);
    }
  }
}

}  // namespace
}  // namespace sightline::attribution
