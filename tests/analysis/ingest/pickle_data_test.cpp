// The whitelisting unpickler: plain data of protocols 2-5 read as Python reads it, a real
// memory snapshot, and pickles that would run code or lie about sizes refused with an error.
#include "analysis/ingest/pickle_data.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>

#include "tests/support/crafted_snapshots.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

using testing::dataProfile;
using testing::readFile;
using testing::testDataPath;
using Type = PickleData::Type;

std::string fromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(PickleData, ReadsEveryPlainTypeInProtocolsTwoAndFour) {
  for (const char* name : {"memory/plain_p2.pickle", "memory/plain_p4.pickle"}) {
    SCOPED_TRACE(name);
    std::string error;
    auto doc = readPickleData(readFile(testDataPath(name)), error);
    ASSERT_TRUE(doc) << error;
    auto root = doc->root();
    ASSERT_EQ(doc->type(root), Type::Dict);
    auto a = doc->get(root, "a");
    ASSERT_TRUE(a);
    ASSERT_EQ(doc->size(*a), 11u);
    EXPECT_EQ(doc->integer(doc->item(*a, 0)), 1);
    EXPECT_EQ(doc->integer(doc->item(*a, 1)), -2);
    EXPECT_EQ(doc->integer(doc->item(*a, 2)), 300);
    EXPECT_EQ(doc->integer(doc->item(*a, 3)), 70000);
    EXPECT_EQ(doc->integer(doc->item(*a, 4)), -(int64_t{1} << 40));
    EXPECT_EQ(doc->integer(doc->item(*a, 5)), int64_t{1} << 62);
    EXPECT_EQ(doc->number(doc->item(*a, 6)), 1.5);
    EXPECT_TRUE(doc->isNone(doc->item(*a, 7)));
    EXPECT_EQ(doc->type(doc->item(*a, 8)), Type::Bool);
    EXPECT_EQ(doc->integer(doc->item(*a, 8)), 1);
    EXPECT_EQ(doc->integer(doc->item(*a, 9)), 0);
    EXPECT_EQ(doc->str(doc->item(*a, 10)), "é🚀");
    auto t3 = doc->get(root, "t3");
    ASSERT_TRUE(t3);
    EXPECT_EQ(doc->size(*t3), 3u);
    EXPECT_EQ(doc->integer(doc->item(*t3, 2)), 3);
    auto big = doc->get(root, "big");  // appended in batches of 1000
    ASSERT_TRUE(big);
    ASSERT_EQ(doc->size(*big), 2500u);
    for (size_t i = 0; i < 2500; ++i) ASSERT_EQ(doc->integer(doc->item(*big, i)), static_cast<int64_t>(i));
    EXPECT_EQ(doc->size(*doc->get(root, "e")), 0u);
    auto nested = doc->get(root, "nested");
    ASSERT_EQ(doc->size(*nested), 1u);
    EXPECT_EQ(doc->size(doc->item(doc->item(*nested, 0), 0)), 0u);
    // One dict pickled once, used twice (the memo).
    EXPECT_EQ(*doc->get(root, "m1"), *doc->get(root, "m2"));
    EXPECT_EQ(doc->str(*doc->get(*doc->get(root, "m2"), "x")), "shared");
    EXPECT_FALSE(doc->get(root, "absent"));
  }
}

TEST(PickleData, ReadsARealMemorySnapshot) {
  std::string error;
  auto doc = readPickleData(readFile(dataProfile("memory/gpt_oom_eval.pickle.xz")), error);
  ASSERT_TRUE(doc) << error;
  auto segments = doc->get(doc->root(), "segments");
  auto traces = doc->get(doc->root(), "device_traces");
  ASSERT_TRUE(segments && traces);
  EXPECT_EQ(doc->size(*segments), 99u);  // as Python's pickle.load counts them
  ASSERT_EQ(doc->size(*traces), 1u);
  auto trace = doc->item(*traces, 0);
  EXPECT_EQ(doc->size(trace), 6758u);
  auto last = doc->item(trace, doc->size(trace) - 1);
  EXPECT_EQ(doc->str(*doc->get(last, "action")), "oom");
  EXPECT_EQ(doc->integer(*doc->get(last, "size")), 26373783552);
  EXPECT_EQ(doc->integer(*doc->get(last, "device_free")), 15202451456);
}

// Takes the dicts with an `action` (as the snapshot reader does).
struct ActionSink : PickleSink {
  int taken = 0, moves = 0;
  bool take(const PickleData& doc, PickleData::Ref, PickleData::Ref item) override {
    if (doc.type(item) != Type::Dict || !doc.get(item, "action")) return false;
    ++taken;
    return true;
  }
  void moved(PickleData::Ref, const std::unordered_map<PickleData::Ref, PickleData::Ref>&) override { ++moves; }
};

// {'device_traces': [[x, y]], 'again': x, 'action': 'z'} with x, y dicts with an 'action': the
// batch of x and y is taken whole and its values given back, but the strings its dicts met first
// ('action', memoized inside x) stay for the root's keys; the memo's x is gone (None).
TEST(PickleData, ASinkTakesABatchAndWhatTheMemoStillNamesStays) {
  const std::string hex =
      "8004955b000000000000007d94288c0d6465766963655f747261636573945d945d94287d94288c06616374696f6e948c05616c6c6f"
      "63948c0461646472944b01757d942868058c04667265659468074b017565618c05616761696e94680468058c017a94752e";
  for (bool from_file : {false, true}) {
    ActionSink sink;
    std::string error;
    std::optional<PickleData> doc;
    if (from_file) {
      std::string path = ::testing::TempDir() + "/sink.pickle";
      std::FILE* f = std::fopen(path.c_str(), "wb");
      ASSERT_TRUE(f);
      std::string bytes = fromHex(hex);
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
      PickleLimits small;
      small.read_size = 3;  // every piece boundary crossed
      doc = readPickleFile(path, error, small, &sink);
    } else {
      doc = readPickleData(fromHex(hex), error, PickleLimits{}, &sink);
    }
    ASSERT_TRUE(doc) << error;
    EXPECT_EQ(sink.taken, 2);
    EXPECT_EQ(sink.moves, 1);
    auto root = doc->root();
    auto traces = doc->get(root, "device_traces");
    ASSERT_TRUE(traces);
    ASSERT_EQ(doc->size(*traces), 1u);
    EXPECT_EQ(doc->size(doc->item(*traces, 0)), 0u);  // taken
    auto action = doc->get(root, "action");
    ASSERT_TRUE(action);
    EXPECT_EQ(doc->str(*action), "z");
    auto again = doc->get(root, "again");
    ASSERT_TRUE(again);
    EXPECT_TRUE(doc->isNone(*again));
  }
}

TEST(PickleData, FloatsReadAsIntegersOnlyWhenTheyFit) {
  // [1e58, -2.5, nan] as protocol 2 (BINFLOAT is big-endian).
  std::string error;
  auto doc = readPickleData(fromHex("80025d710028474bf97d4df19d605747c004000000000000477ff8000000000000652e"), error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->number(doc->item(doc->root(), 0)), 1e58);
  EXPECT_EQ(doc->integer(doc->item(doc->root(), 0)), 0);  // once undefined behaviour (pickle_fuzz)
  EXPECT_EQ(doc->integer(doc->item(doc->root(), 1)), -2);
  EXPECT_EQ(doc->integer(doc->item(doc->root(), 2)), 0);
}

TEST(PickleData, RefusesPicklesThatWouldRunCode) {
  // `os.system("echo pwned")` through __reduce__, as protocol 2 (GLOBAL) and 4 (STACK_GLOBAL).
  for (const char* hex : {"800263706f7369780a73797374656d0a7100580a0000006563686f2070776e656471018571025271032e",
                          "80049525000000000000008c05706f736978948c0673797374656d9493948c0a6563686f2070776e65649485"
                          "9452942e"}) {
    std::string error;
    EXPECT_FALSE(readPickleData(fromHex(hex), error));
    EXPECT_NE(error.find("GLOBAL"), std::string::npos) << error;
    EXPECT_NE(error.find("not read"), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(readPickleData(fromHex("80025d71004e85520a2e"), error));  // REDUCE on a list
  EXPECT_NE(error.find("REDUCE"), std::string::npos) << error;
}

TEST(PickleData, HostileSizesAndShapesAreErrors) {
  auto rejects = [](const std::string& bytes, const std::string& what) {
    std::string error;
    EXPECT_FALSE(readPickleData(bytes, error)) << what;
    EXPECT_FALSE(error.empty()) << what;
    return error;
  };
  // A string claiming 4 GiB; a BINUNICODE8 claiming 2^63 bytes.
  EXPECT_NE(rejects(fromHex("800258ffffffff61622e"), "long string").find("runs past the end"), std::string::npos);
  rejects(fromHex("80028d0000000000000080612e"), "huge string8");
  rejects(fromHex("80028a09010203040506070809012e"), "LONG1 of 9 bytes");
  rejects(fromHex("80024e72ffffff7f2e"), "memo index 2^31");
  rejects(fromHex("80026a050000002e"), "a memo entry never set");
  rejects(fromHex("800261"), "APPEND on nothing");
  rejects(fromHex("80024e4e2e"), "two values at STOP");
  rejects(fromHex("800a4e2e"), "protocol 10");
  rejects(std::string(), "empty");
  rejects(fromHex("8002284e"), "cut after MARK");
  rejects(fromHex("80028552292e"), "tuple of nothing");
  // APPENDS to a tuple, SETITEMS to a list.
  rejects(fromHex("800229284e652e"), "APPENDS to a tuple");
  rejects(fromHex("80025d284e4e752e"), "SETITEMS to a list");
  // APPEND to a list below the MARK, then LIST from that MARK (once a length_error abort).
  rejects(fromHex("80025d5d28616c2e"), "APPEND across a MARK");
  // Every cut of a real pickle is an error, never a crash.
  std::string whole = readFile(testDataPath("memory/plain_p4.pickle"));
  for (size_t n = 0; n < whole.size(); n += 7) {
    std::string error;
    EXPECT_FALSE(readPickleData(whole.substr(0, n), error)) << n;
  }
  // 200k nested lists read without recursion; a value limit is an error.
  std::string deep = fromHex("8002");
  for (int i = 0; i < 200000; ++i) deep += "]";
  for (int i = 0; i < 199999; ++i) deep += "a";
  deep += ".";
  std::string error;
  auto doc = readPickleData(deep, error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->size(doc->root()), 1u);
  EXPECT_FALSE(readPickleData(deep, error, {1000, 1000}));
  EXPECT_NE(error.find("more than 1000 values"), std::string::npos) << error;
}

// Issue 42, item 10: a memo index or MARKs that the file's bytes cannot account for are refused
// at the opcode, before any table grows (9 bytes once took 1 GB of memo, 20 MB of MARKs 2.4 GB,
// both refused only at the end).
TEST(PickleData, AMemoIndexOrMarksBeyondWhatTheBytesHoldAreRefusedAtOnce) {
  std::string error;
  EXPECT_FALSE(readPickleData(testing::largeMemoIndexPickle(), error));
  EXPECT_NE(error.find("memo index 268435455 is beyond the 1 values read so far (at byte 3)"), std::string::npos)
      << error;
  // Indices in order, as Python writes them ([None], the list and None memoized), read; one
  // past the values read refused.
  auto doc = readPickleData(fromHex("80025d71004e710161") + ".", error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->size(doc->root()), 1u);
  EXPECT_FALSE(readPickleData(fromHex("80025d71014e710261") + ".", error));
  EXPECT_NE(error.find("memo index 1 is beyond the 1 values read so far"), std::string::npos) << error;

  EXPECT_FALSE(readPickleData(testing::marksPickle(20'000'000), error));
  EXPECT_NE(error.find("MARKs nested deeper than 65536 (at byte 65538)"), std::string::npos) << error;
  EXPECT_FALSE(readPickleData(fromHex("80022828282828") + ".", error));
  EXPECT_NE(error.find("4 MARKs open with 2 bytes left to close them (at byte 5)"), std::string::npos) << error;
  // Nesting as deep as the limit still reads.
  std::string nested = fromHex("8002");
  for (int i = 0; i < 1000; ++i) nested += "(";
  for (int i = 0; i < 1000; ++i) nested += "l";
  ASSERT_TRUE(readPickleData(nested + ".", error)) << error;
  PickleLimits shallow;
  shallow.max_marks = 999;
  EXPECT_FALSE(readPickleData(nested + ".", error, shallow));
  EXPECT_NE(error.find("MARKs nested deeper than 999"), std::string::npos) << error;
}

}  // namespace
}  // namespace sightline::ingest
