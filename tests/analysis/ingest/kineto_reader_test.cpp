// The Kineto reader on every shared PyTorch profiler trace (PyTorch 1.9 .. 2.11, CUDA and ROCm,
// training and inference), checked against a DOM parse of the same file with nlohmann::json;
// and on damaged input: truncated files and streams, invalid events, non-traces.
#include "analysis/ingest/kineto_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include <zlib.h>

#include "analysis/ingest/json_scanner.h"
#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::ingest {
namespace {

using nlohmann::json;

const json& eventsOf(const json& doc) { return doc.is_array() ? doc : doc.at("traceEvents"); }

bool isGpuWork(const json& e) {
  static const std::set<std::string> kCats = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"};
  return e.value("ph", "") == "X" && e.contains("cat") && e["cat"].is_string() && kCats.count(e["cat"]) > 0;
}

std::string writeTemp(const std::string& name, const std::string& bytes) {
  auto path = std::filesystem::temp_directory_path() / ("sightline-kineto-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

TEST(KinetoReader, EveryTraceLoadsAndItsGpuTimeEqualsTheSumOfDurations) {
  auto traces = testing::sharedKinetoTraces();
  if (traces.empty()) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles");
  EXPECT_GE(traces.size(), 18u);
  for (const auto& rel : traces) {
    SCOPED_TRACE(rel);
    std::string path = *testing::sharedPath("profiles/" + rel);
    auto loaded = loadProfile(path);  // by extension, as users open them
    ASSERT_TRUE(loaded.profile) << loaded.error;
    const auto& p = *loaded.profile;
    EXPECT_EQ(p.info.format, "kineto-json");
    json doc = json::parse(testing::readMaybeGzip(path));
    int64_t expected = 0;
    size_t gpu_events = 0, runtime_events = 0;
    for (const auto& e : eventsOf(doc)) {
      std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
      if (e.value("ph", "") == "X" && (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime"))
        ++runtime_events;
      if (!isGpuWork(e)) continue;
      ++gpu_events;
      expected += std::llround(e.at("dur").get<double>() * 1000.0);
    }
    EXPECT_EQ(p.totalGpuNs(), expected);
    EXPECT_EQ(p.activities.size(), gpu_events);
    EXPECT_EQ(p.api_calls.size(), runtime_events);
    EXPECT_TRUE(p.info.warnings.empty() || p.activities.empty() || p.calls.empty())
        << "unexpected warning: " << p.info.warnings.front();
    for (size_t i = 1; i < p.activities.size(); ++i) ASSERT_LE(p.activities[i - 1].start_ns, p.activities[i].start_ns);
  }
}

TEST(KinetoReader, GpuWorkJoinsItsLaunchAndPythonCallsKeepTheirParents) {
  SIGHTLINE_REQUIRE_SHARED(path, "profiles/h200-captures/kineto/train_small_naive.pt.trace.json.gz");
  auto loaded = loadKinetoTrace(path);
  ASSERT_TRUE(loaded.profile) << loaded.error;
  const auto& p = *loaded.profile;
  // GPU rows carry the device as pid in the file; in the model they carry the launching process.
  std::set<std::pair<uint32_t, int64_t>> launches;
  for (const auto& c : p.api_calls) launches.insert({c.pid, c.correlation});
  size_t joined = 0;
  for (const auto& a : p.activities) joined += launches.count({a.pid, a.correlation});
  EXPECT_EQ(joined, p.activities.size());
  EXPECT_EQ(p.calls.size(), 5794u);
  size_t roots = 0;
  for (const auto& c : p.calls) {
    if (c.parent < 0) {
      ++roots;
      continue;
    }
    const auto& parent = p.calls[static_cast<size_t>(c.parent)];
    EXPECT_LE(parent.start_ns, c.start_ns);
    EXPECT_GE(parent.end_ns, c.end_ns);
  }
  EXPECT_EQ(roots, 1u);  // train_small.py(97): <module>
  // Autograd ops keep their sequence numbers; steps come from ProfilerStep#N.
  std::set<std::string> steps;
  size_t with_seq = 0;
  for (const auto& r : p.ranges) {
    if (p.strings[r.text].starts_with("ProfilerStep#")) steps.insert(p.strings[r.text]);
    with_seq += r.seq >= 0;
  }
  EXPECT_EQ(steps.size(), 6u);
  EXPECT_GT(with_seq, 500u);
  // Memcpy kinds from their names: the naive loader copies from pageable memory.
  size_t pageable_htod = 0;
  for (const auto& a : p.activities)
    if (a.kind == model::ActivityKind::Memcpy && a.copy == model::CopyKind::HostToDevice &&
        a.src == model::MemoryKind::Pageable)
      ++pageable_htod;
  EXPECT_EQ(pageable_htod, 12u);  // x and y, 6 steps
  EXPECT_EQ(p.info.gpus, std::vector<std::string>{"NVIDIA H200"});
}

// Python calls find their parent by id: Kineto's ids (0, 1, 2, ...) and a crafted trace's
// (huge, far apart) link the same calls, with the same shared ids and rejected links.
TEST(KinetoReader, PythonParentsLinkTheSameWhateverTheIds) {
  auto trace = [](int64_t scale) {
    struct Call {
      int64_t id, parent, ts, dur;
    };
    std::vector<Call> calls{{0, -1, 1000, 1000}, {1, 0, 1100, 200}, {2, 1, 1150, 50},
                            {1, 0, 1400, 100},   {3, 3, 1600, 10},  {4, 1, 1410, 10}};
    json events = json::array();
    auto id = [scale](int64_t v) { return v < 0 ? v : v * scale + 7; };
    for (const auto& c : calls)
      events.push_back({{"ph", "X"},
                        {"cat", "python_function"},
                        {"name", "train.py(1): f"},
                        {"pid", 1},
                        {"tid", 1},
                        {"ts", c.ts},
                        {"dur", c.dur},
                        {"args", {{"Python id", id(c.id)}, {"Python parent id", id(c.parent)}}}});
    return json{{"traceEvents", events}}.dump();
  };
  std::vector<std::vector<int32_t>> parents;
  std::vector<std::vector<std::string>> warnings;
  for (int64_t scale : {int64_t{1}, int64_t{1'000'000'000'000}}) {
    auto loaded = loadKinetoTrace(writeTemp("ids" + std::to_string(scale) + ".json", trace(scale)));
    ASSERT_TRUE(loaded.profile) << loaded.error;
    std::vector<int32_t> of;
    for (const auto& c : loaded.profile->calls) of.push_back(c.parent);
    parents.push_back(of);
    warnings.push_back(loaded.profile->info.warnings);
  }
  // In start order: id 2's and id 4's parent is the first call with id 1 (a parent starts no
  // later than its child); the second call with id 1 is linked too; the call naming itself keeps none.
  EXPECT_EQ(parents[0], (std::vector<int32_t>{-1, 0, 1, 0, 1, -1}));
  EXPECT_EQ(parents[1], parents[0]);
  EXPECT_EQ(warnings[1], warnings[0]);
  std::string said;
  for (const auto& w : warnings[0]) said += w + "\n";
  EXPECT_NE(said.find("1 Python calls name a parent that does not enclose them"), std::string::npos) << said;
  EXPECT_NE(said.find("1 Python calls share another call's id"), std::string::npos) << said;
}

TEST(KinetoReader, OldLayoutsLoadWithCallStacksAndStringThreads) {
  // PyTorch 1.9: Operator/Runtime/Kernel categories, "stream 7" tids, lowercase `external id`,
  // call-site lines in `Call stack`.
  SIGHTLINE_REQUIRE_SHARED(path, "profiles/kineto_tb_plugin_samples/worker0.1623143089861.pt.trace.json.gz");
  auto loaded = loadKinetoTrace(path);
  ASSERT_TRUE(loaded.profile) << loaded.error;
  const auto& p = *loaded.profile;
  EXPECT_EQ(p.activities.size(), 8772u + 312u + 12u);
  EXPECT_GT(p.marks.size(), 1000u);
  const auto& caps = p.info.capabilities;
  EXPECT_NE(std::find(caps.begin(), caps.end(), "call-stacks"), caps.end());
  for (const auto& a : p.activities) EXPECT_EQ(a.stream, 7u);
  // Absolute integer microseconds: nanoseconds on the epoch clock.
  EXPECT_GT(p.activities.front().start_ns, int64_t{1'600'000'000} * 1'000'000'000);
}

// Large plain traces are parsed in two halves on two threads: the merged model is the one a
// single pass reads.
TEST(KinetoReader, TwoHalvesReadTheSameModelAsOnePass) {
  for (const char* rel : {"profiles/h200-captures/kineto/train_small_naive.pt.trace.json.gz",
                          "profiles/kineto_tb_plugin_samples/worker0.1623143089861.pt.trace.json.gz"}) {
    SCOPED_TRACE(rel);
    SIGHTLINE_REQUIRE_SHARED(path, rel);
    auto plain = writeTemp("plain.json", testing::readMaybeGzip(path));
    auto one = loadKinetoTrace(plain);
    KinetoReadOptions split;
    split.parallel_from_bytes = 0;
    KinetoReadStats stats;
    auto two = loadKinetoTrace(plain, &stats, split);
    ASSERT_TRUE(one.profile && two.profile);
    const auto &a = *one.profile, &b = *two.profile;
    EXPECT_EQ(stats.json_bytes, std::filesystem::file_size(plain));
    EXPECT_EQ(a.totalGpuNs(), b.totalGpuNs());
    ASSERT_EQ(a.activities.size(), b.activities.size());
    ASSERT_EQ(a.api_calls.size(), b.api_calls.size());
    ASSERT_EQ(a.ranges.size(), b.ranges.size());
    ASSERT_EQ(a.calls.size(), b.calls.size());
    ASSERT_EQ(a.marks.size(), b.marks.size());
    EXPECT_EQ(a.info.warnings, b.info.warnings);
    for (size_t i = 0; i < a.activities.size(); ++i) {
      EXPECT_EQ(a.strings[a.activities[i].name], b.strings[b.activities[i].name]);
      EXPECT_EQ(a.launch_configs[a.activities[i].launch_config], b.launch_configs[b.activities[i].launch_config]);
    }
    for (size_t i = 0; i < a.calls.size(); ++i) {
      EXPECT_EQ(a.calls[i].parent, b.calls[i].parent);
      EXPECT_EQ(a.strings[a.calls[i].function], b.strings[b.calls[i].function]);
    }
    for (size_t i = 0; i < a.ranges.size(); ++i) EXPECT_EQ(a.strings[a.ranges[i].text], b.strings[b.ranges[i].text]);
    for (size_t i = 0; i < a.marks.size(); ++i)
      EXPECT_EQ(a.strings[a.frames[a.marks[i].first_frame].file], b.strings[b.frames[b.marks[i].first_frame].file]);
    std::filesystem::remove(plain);
  }
}

// The wall clock of the trace's time 0 (baseTimeNanoseconds), to place TORCH_TRACE's compiles.
TEST(KinetoReader, KeepsTheWallClockOfItsTimeZero) {
  auto loaded = loadKinetoTrace(sightline::testing::testDataPath("compile/compiled_kineto.pt.trace.json.gz"));
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_EQ(loaded.profile->info.utc_start_ns, 1790857026000000000);
}

TEST(KinetoReader, AbsoluteFloatTimestampsKeepNanoseconds) {
  EXPECT_EQ(microsToNs("1712195495406752.8"), int64_t{1712195495406752800});
  EXPECT_EQ(microsToNs("4411123883816.4"), int64_t{4411123883816400});
  EXPECT_EQ(microsToNs("0.768"), 768);
  EXPECT_EQ(microsToNs("0.7685"), 769);
  EXPECT_EQ(microsToNs("12"), 12000);
  EXPECT_EQ(microsToNs("-1.5"), -1500);
  EXPECT_EQ(microsToNs("1.5e3"), 1500000);
  EXPECT_FALSE(microsToNs("abc"));
  EXPECT_FALSE(microsToNs(""));
}

// The scanner reads common numbers in place: each must equal what the text path gives.
TEST(KinetoReader, NumbersReadInPlaceEqualTheTextPath) {
  using namespace kineto;
  for (std::string text :
       {"1712195495406752.8", "4411123883816.4", "0.768", "0.7685", "12", "-1.5", "1.5e3", "12.", "999999999999999",
        "9999999999999999", "123456789012345678.5", "7.0001", "4411136907392.42", "1e400", "null", "true"}) {
    for (std::string after : {",", "}", " ", "]"}) {
      std::string block = text + after;
      Cursor c{block.data(), block.data() + block.size()};
      int64_t ns = -7;
      bool ok = false;
      ASSERT_EQ(parseMicros(c, ns, ok), Status::Ok) << text;
      auto expected = microsToNs(text);
      EXPECT_EQ(ok, expected.has_value()) << text;
      if (expected) {
        EXPECT_EQ(ns, *expected) << text;
      }
      EXPECT_EQ(c.p, block.data() + text.size()) << text;
    }
    Cursor cut{text.data(), text.data() + text.size()};  // no delimiter yet: the unit is short
    int64_t ns = 0;
    bool ok = false;
    EXPECT_EQ(parseMicros(cut, ns, ok), Status::Short) << text;
  }
  std::string scratch;
  for (auto [text, want] : std::vector<std::pair<std::string, int64_t>>{{"25738", 25738},
                                                                        {"-3", -3},
                                                                        {"12.0", 12},
                                                                        {"\"stream 7\"", 7},
                                                                        {"null", -1},
                                                                        {"99999999999999999999", INT64_MAX},
                                                                        {"123456789012345678", 123456789012345678}}) {
    std::string block = text + ",";
    Cursor c{block.data(), block.data() + block.size()};
    int64_t v = 0;
    ASSERT_EQ(parseInteger(c, v, scratch), Status::Ok) << text;
    EXPECT_EQ(v, want) << text;
    EXPECT_EQ(*c.p, ',') << text;
  }
}

// Strings: escapes anywhere, a backslash before the closing quote, a block that ends mid-string.
TEST(KinetoReader, StringsWithEscapesAcrossSixteenByteBlocks) {
  using namespace kineto;
  std::string scratch;
  std::string_view out;
  std::string block = R"("abcdefghijklmnopqrstuvwxyz\"quoted\" and \\ tail\u00e9",)";
  Cursor c{block.data(), block.data() + block.size()};
  ASSERT_EQ(parseString(c, out, scratch), Status::Ok);
  EXPECT_EQ(out, "abcdefghijklmnopqrstuvwxyz\"quoted\" and \\ tail\xc3\xa9");
  EXPECT_EQ(*c.p, ',');
  std::string plain = "  \"0123456789abcdefghij\"}";
  Cursor p{plain.data(), plain.data() + plain.size()};
  ASSERT_EQ(parseString(p, out, scratch), Status::Ok);
  EXPECT_EQ(out, "0123456789abcdefghij");
  for (std::string cut : {R"("abc\)", R"("abcdefghijklmnopqrstuvwxyz)", R"("a\"b)"}) {
    Cursor s{cut.data(), cut.data() + cut.size()};
    EXPECT_EQ(parseString(s, out, scratch), Status::Short) << cut;
  }
}

// Skipped values (an op's shapes and strides): nesting, brackets and braces inside strings,
// escaped quotes, runs longer than sixteen bytes; every cut before the end is short.
TEST(KinetoReader, SkippedValuesEndWhereTheyClose) {
  using namespace kineto;
  for (std::string value :
       {std::string(R"([[4096, 512], [], [], []])"), std::string(R"(["", "[512, 4096]", "[1, 512]", "]}"])"),
        std::string(R"({"a": [1, {"b": "x\"]}"}], "c": {}})"), std::string(R"([[[[[[[[[[[]]]]]]]]]]])"),
        "[" + std::string(100, '7') + ", " + std::string(37, ' ') + "\"" + std::string(40, '{') + "\"]",
        std::string(R"({"k": "\\", "l": "\\\""})"), std::string("[\"\xc3\xa9]\", 1]")}) {
    for (std::string after : {",", "}", "]"}) {
      std::string block = value + after + "[[[";
      Cursor c{block.data(), block.data() + block.size()};
      ASSERT_EQ(skipValue(c), Status::Ok) << value;
      EXPECT_EQ(c.p, block.data() + value.size()) << value;
    }
    for (size_t n = 0; n < value.size(); ++n) {
      std::string cut = value.substr(0, n);
      Cursor c{cut.data(), cut.data() + cut.size()};
      EXPECT_EQ(skipValue(c), Status::Short) << cut;
    }
  }
}

TEST(KinetoReader, PythonFunctionNames) {
  auto f = parsePythonName("train_small.py(32): forward");
  EXPECT_EQ(f.kind, model::CallKind::Function);
  EXPECT_EQ(f.file, "train_small.py");
  EXPECT_EQ(f.line, 32);
  EXPECT_EQ(f.function, "forward");
  auto frozen = parsePythonName("<frozen abc>(117): __instancecheck__");
  EXPECT_EQ(frozen.file, "<frozen abc>");
  EXPECT_EQ(frozen.line, 117);
  auto m = parsePythonName("nn.Module: BatchNorm2d_12");
  EXPECT_EQ(m.kind, model::CallKind::Module);
  EXPECT_EQ(m.function, "BatchNorm2d");
  auto item = parsePythonName("<built-in method item of Tensor object at 0x7f4fe8fc7c50>");
  EXPECT_EQ(item.kind, model::CallKind::Builtin);
  EXPECT_EQ(item.function, "item");
  EXPECT_EQ(parsePythonName("<built-in function len>").function, "len");
  EXPECT_EQ(parsePythonName("a (b): c(d)): e").kind, model::CallKind::Builtin);
}

TEST(KinetoReader, ATruncatedTraceLoadsWhatIsCompleteAndSaysSo) {
  SIGHTLINE_REQUIRE_SHARED(path, "profiles/torch2.11_h200_generated/small.pt.trace.json.gz");
  std::string text = testing::readMaybeGzip(path);
  auto full = loadKinetoTrace(path);
  ASSERT_TRUE(full.profile);
  for (double cut : {0.3, 0.6, 0.95}) {
    SCOPED_TRACE(cut);
    auto file = writeTemp("cut.json", text.substr(0, static_cast<size_t>(static_cast<double>(text.size()) * cut)));
    auto loaded = loadKinetoTrace(file);
    ASSERT_TRUE(loaded.profile) << loaded.error;
    ASSERT_FALSE(loaded.profile->info.warnings.empty());
    EXPECT_NE(loaded.profile->info.warnings.front().find("truncated"), std::string::npos);
    EXPECT_LE(loaded.profile->activities.size(), full.profile->activities.size());
    std::filesystem::remove(file);
  }
  // A gzip stream cut in the middle (a file still being written).
  std::string gz = testing::readFile(path);
  auto file = writeTemp("cut.json.gz", gz.substr(0, gz.size() / 2));
  auto loaded = loadKinetoTrace(file);
  ASSERT_TRUE(loaded.profile) << loaded.error;
  ASSERT_FALSE(loaded.profile->info.warnings.empty());
  EXPECT_NE(loaded.profile->info.warnings.front().find("truncated"), std::string::npos);
  std::filesystem::remove(file);
}

// A small gzip file of 300 MB of whitespace around and between real events (a decompression
// bomb): whitespace streams through the reader's block and is never kept.
TEST(KinetoReader, WhitespaceBombStreamsThrough) {
  auto path = std::filesystem::temp_directory_path() / ("sightline-bomb-" + std::to_string(::getpid()) + ".json.gz");
  gzFile out = gzopen(path.c_str(), "wb1");
  ASSERT_TRUE(out);
  std::string spaces(1 << 20, ' ');
  auto pad = [&](int mib) {
    for (int i = 0; i < mib; ++i) gzwrite(out, spaces.data(), static_cast<unsigned>(spaces.size()));
  };
  const std::string event =
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {}})";
  gzputs(out, R"({"traceEvents": [)");
  pad(100);
  gzputs(out, event.c_str());
  pad(100);
  gzputs(out, ",");
  pad(100);
  gzputs(out, event.c_str());
  gzputs(out, "]}");
  gzclose(out);
  EXPECT_LT(std::filesystem::file_size(path), 2u << 20);
  KinetoReadStats stats;
  auto loaded = loadKinetoTrace(path.string(), &stats);
  ASSERT_TRUE(loaded.profile) << loaded.error;
  EXPECT_EQ(loaded.profile->activities.size(), 2u);
  EXPECT_GT(stats.json_bytes, uint64_t{300} << 20);
  EXPECT_LE(stats.block_bytes, uint64_t{4} << 20) << "the reader kept the whitespace: its block grew";
  std::filesystem::remove(path);
}

TEST(KinetoReader, BadEventsAreSkippedAndNonTracesFailClearly) {
  // Old Kineto wrote unescaped quotes in names: that event is skipped, the rest loads.
  std::string trace = R"({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2.25, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "bad "quoted" name", "pid": 0, "tid": 7, "ts": 5, "dur": 1},
  {"ph": "X", "cat": "kernel", "name": "k\u00e9\"3", "pid": "0", "tid": "stream 7", "ts": 9, "dur": 1, "args": {"Comms Id": 123456789012345678901234567890, "correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 6, "ts": 1, "dur": 0.5, "args": {"correlation": 1}}
]})";
  auto file = writeTemp("quotes.json", trace);
  auto loaded = loadKinetoTrace(file);
  ASSERT_TRUE(loaded.profile) << loaded.error;
  const auto& p = *loaded.profile;
  ASSERT_EQ(p.activities.size(), 2u);
  EXPECT_EQ(p.totalGpuNs(), 2250 + 1000);
  EXPECT_EQ(p.strings[p.activities[1].name], "k\xc3\xa9\"3");
  EXPECT_EQ(p.activities[0].pid, 5u);  // joined to its launch's process
  EXPECT_TRUE(std::any_of(p.info.warnings.begin(), p.info.warnings.end(),
                          [](const std::string& w) { return w.find("skipped 1 ") != std::string::npos; }));
  std::filesystem::remove(file);

  for (std::string bad :
       {std::string("[1, 2, 3]"), std::string("not json"), std::string(""), std::string("{\"a\": 1}")}) {
    SCOPED_TRACE(bad);
    auto f = writeTemp("bad.json", bad);
    auto r = loadKinetoTrace(f);
    EXPECT_FALSE(r.profile);
    EXPECT_FALSE(r.error.empty());
    std::filesystem::remove(f);
  }
  auto missing = loadProfile("/nonexistent/run.pt.trace.json");
  EXPECT_FALSE(missing.profile);
  EXPECT_NE(missing.error.find("no such file"), std::string::npos);
}

}  // namespace
}  // namespace sightline::ingest
