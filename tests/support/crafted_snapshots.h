// Memory snapshots crafted opcode by opcode (pickle protocol 4) that attack the snapshot reader
// and the replay as issue 42's items 5-10 did: references shared many times, a long string,
// many device numbers, a memo index and MARKs out of proportion to the file. Used by the unit
// tests, the end-to-end test and the `crafted_snapshot` tool (which writes one to a file, for
// fuzz seeds and measurements). Not a general pickler: only the opcodes these shapes need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sightline::testing {

// Pickle bytes written one opcode at a time, protocol 4.
class PickleWriter {
 public:
  PickleWriter();
  PickleWriter& op(char opcode);
  PickleWriter& str(std::string_view s);  // SHORT_BINUNICODE or BINUNICODE
  PickleWriter& integer(int64_t v);       // BININT1, BININT, LONG1
  uint32_t memoize();                     // MEMOIZE the value on top: its memo index
  PickleWriter& get(uint32_t index);      // BINGET or LONG_BINGET
  // A string memoized the first time it is written and fetched from the memo after (as
  // Python's pickler does for a string object used many times).
  PickleWriter& key(std::string_view s);
  std::string finish();  // STOP; the bytes
  size_t size() const { return out_.size(); }

 private:
  std::string out_;
  uint32_t memo_ = 0;
  std::unordered_map<std::string, uint32_t> strings_;
};

// 5: `device_traces` is one list T of `events` allocations named `devices` times ([T] * devices).
// T is built from a MARK (LIST), not appended to, so no sink takes its entries as they come.
std::string sharedTraceSnapshot(int devices, int events);
// 6: `frames` allocations, each with a stack of one frame of its own: all the frames share one
// user file name of `name_bytes` bytes (pickled once), each on another line.
std::string sharedFileNameSnapshot(size_t name_bytes, int frames);
// 7: `segments` references to one segment whose `blocks` is one list holding one allocated
// block `blocks` times; `distinct_segments`: as many segments of their own sharing that list.
std::string sharedBlocksSnapshot(int segments, int blocks, bool distinct_segments = false);
// 8: `events` allocations (and their frees) sharing one stack of `depth` references to one
// library frame (no user frame, no backward: every walk goes to its end).
std::string sharedStackSnapshot(int depth, int events);
// 9: `devices` segments on device numbers 0, 1, 2, ..., each with one allocated block, and a
// trace of `events` allocations on device 0.
std::string manyDevicesSnapshot(int devices, int events);
// A full ring buffer as PyTorch pickles it: `entries` trace entries in APPENDS batches of 1000,
// each a memoized dict with a fresh memoized `compile_context` string; an allocation's frames
// a fresh memoized list of `depth` frames (one of `stacks` stacks, the frames memoized where
// first met); the free after it names that same list from the memo (free_completed).
std::string ringBufferSnapshot(int entries, int stacks, int depth);
// 10: None put in the memo at index 2^28 - 1 (9 bytes); `marks` MARK opcodes and nothing else.
std::string largeMemoIndexPickle();
std::string marksPickle(size_t marks);

}  // namespace sightline::testing
