// Capture's per-rank parts read back within their bounds (issue 54): the number of parts and
// their bytes in all, each part's size for its window, each value's range, and the warnings
// kept to kMaxPartWarnings with a count of the rest. Issue 55: how steps were told, the loop's
// wait for data and its line, carried into the steps document and the summary; the message
// for a loop with too few backward() calls.
#include "server/capture/capture_steps.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "tests/support/scratch_dir.h"

namespace sightline::server::capture {
namespace {

using nlohmann::json;

CaptureWindow smallWindow() {
  CaptureWindow w;
  w.warmup = 2, w.timed = 3, w.profiled = 0, w.profiler = "none";
  return w;
}

json rankPart(int64_t rank, int64_t gpu_ns = 2'000'000) {
  json timed = json::array();
  for (int i = 0; i < 3; ++i) timed.push_back({{"step", 3 + i}, {"gpu_ns", gpu_ns}, {"host_ns", 2'100'000}});
  return {{"rank", rank}, {"local_rank", 0}, {"world_size", 1},           {"host", "node"}, {"pid", 100 + rank},
          {"device", 0},  {"timed", timed},  {"profiled", json::array()}, {"hook_ns", 5000}};
}

TEST(CaptureParts, EveryValueInItsRange) {
  CaptureWindow w = smallWindow();
  std::vector<PartFile> files;
  auto with = [&](const std::string& name, json part) { files.push_back({name, part.dump()}); };
  with("rank.0.json", rankPart(0));
  with("rank.1.json", rankPart(1, int64_t{1} << 62));  // a step of 146 years
  json negative_rank = rankPart(2);
  negative_rank["rank"] = -3;
  with("rank.2.json", negative_rank);
  json big_world = rankPart(3);
  big_world["world_size"] = 1 << 20;
  with("rank.3.json", big_world);
  json device = rankPart(4);
  device["device"] = 1 << 20;
  with("rank.4.json", device);
  json hook = rankPart(5);
  hook["hook_ns"] = int64_t{1} << 62;
  with("rank.5.json", hook);
  json early = rankPart(6);
  early["timed"][0]["step"] = 1;  // a warm-up step is not timed
  with("rank.6.json", early);
  json backwards = rankPart(7);
  backwards["timed"][1]["step"] = 3;  // the same step twice
  with("rank.7.json", backwards);
  json unsigned_huge = rankPart(8);
  unsigned_huge["timed"][0]["gpu_ns"] = UINT64_MAX;
  with("rank.8.json", unsigned_huge);
  json peak_above = rankPart(9);  // more allocated than reserved
  peak_above["memory_peak"] = {{"allocated_bytes", 5}, {"reserved_bytes", 4}};
  with("rank.9.json", peak_above);
  json peak_text = rankPart(10);
  peak_text["memory_peak"] = {{"allocated_bytes", "a lot"}, {"reserved_bytes", 4}};
  with("rank.10.json", peak_text);
  json peak_huge = rankPart(11);
  peak_huge["memory_peak"] = {{"allocated_bytes", 1}, {"reserved_bytes", int64_t{1} << 60}};
  with("rank.11.json", peak_huge);
  json good = rankPart(0);
  good["memory_peak"] = {{"allocated_bytes", 3}, {"reserved_bytes", 4}};
  files.front() = {"rank.0.json", good.dump()};
  auto parts = parseCaptureParts(files, w);
  ASSERT_EQ(parts.ranks.size(), 1u) << ::testing::PrintToString(parts.warnings);
  EXPECT_EQ(parts.ranks[0].rank, 0);
  EXPECT_EQ(parts.ranks[0].peak_allocated_bytes, 3);
  EXPECT_EQ(parts.ranks[0].peak_reserved_bytes, 4);
  EXPECT_EQ(parts.warnings.size(), 11u);
  for (const auto& warning : parts.warnings) EXPECT_NE(warning.find("not a rank's steps"), std::string::npos);
  // The summary of what was kept says no negative figure.
  std::ostringstream summary;
  writeRanksSummary(w, parts.ranks, summary);
  EXPECT_EQ(summary.str().find("-"), std::string::npos) << summary.str();
}

TEST(CaptureParts, ThePartsAndTheirBytesAreBounded) {
  CaptureWindow w = smallWindow();
  testing::ScratchDir dir("sightline_capture_parts");
  for (int i = 0; i < 10; ++i) dir.write("rank." + std::to_string(10 + i) + ".json", rankPart(i).dump());
  dir.write("status.1.json", json{{"pid", 1}, {"steps", 5}, {"argv", {std::string(100000, 'a')}}}.dump());
  dir.write("notes.txt", std::string(1 << 20, 'x'));  // not a part: never read
  PartLimits limits;
  limits.parts = 4;
  auto parts = readCaptureParts(dir.path().string(), w, limits);
  EXPECT_EQ(parts.ranks.size(), 4u);
  ASSERT_FALSE(parts.warnings.empty());
  EXPECT_NE(parts.warnings.back().find("more parts than 4"), std::string::npos) << parts.warnings.back();
  // Their bytes in all: the first two fit.
  limits = PartLimits{};
  limits.total_bytes = 2 * rankPart(0).dump().size() + 10;
  parts = readCaptureParts(dir.path().string(), w, limits);
  EXPECT_EQ(parts.ranks.size(), 2u);
  // One part's size: what the hook writes for the window, with room to spare.
  limits = PartLimits{};
  auto size = rankPart(0).dump().size();
  limits.base_bytes = size - 1, limits.bytes_per_step = 0;
  parts = readCaptureParts(dir.path().string(), w, limits);
  EXPECT_TRUE(parts.ranks.empty());
  EXPECT_NE(parts.warnings[0].find("larger than the " + std::to_string(size - 1) + " bytes"), std::string::npos);
  // The status with its long argument is over the default bound too: a warning, nothing else.
  parts = readCaptureParts(dir.path().string(), w);
  EXPECT_EQ(parts.ranks.size(), 10u);
  EXPECT_TRUE(parts.statuses.empty());
}

// A hand-written loop (stepped by backward()) that waits for its DataLoader at train.py:12.
json loopPart(int64_t rank) {
  json part = rankPart(rank);
  part["step_by"] = "backward";
  part["input_site"] = {{"path", "/w/train.py"}, {"line", 12}};
  for (int i = 0; i < 3; ++i) part["timed"][i]["input_ns"] = 1'000'000 + 500'000 * i;
  return part;
}

TEST(CaptureParts, TheLoopsWaitItsLineAndHowStepsWereTold) {
  CaptureWindow w = smallWindow();
  auto parts = parseCaptureParts({{"rank.0.json", loopPart(0).dump()}, {"rank.1.json", rankPart(1).dump()}}, w);
  ASSERT_EQ(parts.ranks.size(), 2u) << ::testing::PrintToString(parts.warnings);
  const RankPart& r = parts.ranks[0];
  EXPECT_EQ(r.step_by, "backward");
  EXPECT_EQ(r.input_path, "/w/train.py");
  EXPECT_EQ(r.input_line, 12);
  ASSERT_EQ(r.timed.size(), 3u);
  EXPECT_EQ(r.timed[2].input_ns, 2'000'000);
  EXPECT_EQ(medianInputNs(r.timed), 1'500'000);
  EXPECT_EQ(parts.ranks[1].step_by, "optimizer") << "a part without it: the optimizer's";
  EXPECT_EQ(parts.ranks[1].timed[0].input_ns, -1) << "no DataLoader asked: no wait";
  EXPECT_EQ(medianInputNs(parts.ranks[1].timed), -1);
  // Into the document, and back as it was.
  auto doc = stepsDocument(w, {"python", "train.py"}, {}, parts.ranks);
  EXPECT_EQ(doc["ranks"][0]["step_by"], "backward");
  EXPECT_EQ(doc["ranks"][0]["input_site"], (nlohmann::ordered_json{{"path", "/w/train.py"}, {"line", 12}}));
  EXPECT_EQ(doc["ranks"][0]["timed"][1]["input_ns"], 1'500'000);
  EXPECT_EQ(doc["ranks"][1]["step_by"], "optimizer");
  EXPECT_FALSE(doc["ranks"][1].contains("input_site"));
  EXPECT_FALSE(doc["ranks"][1]["timed"][0].contains("input_ns"));
  EXPECT_EQ(nlohmann::ordered_json::parse(formatStepsDocument(doc)), doc);
  // The summary says how the steps were told and how long the loop waited, where.
  std::ostringstream summary;
  writeRanksSummary(w, parts.ranks, summary);
  EXPECT_NE(summary.str().find("rank 0: 3 steps (each a backward(): no optimizer step was seen) without a profiler, "
                               "median 2.00 ms (host 2.10 ms), waiting for data 1.50 ms at /w/train.py:12;"),
            std::string::npos)
      << summary.str();
  EXPECT_NE(summary.str().find("rank 1: 3 steps without a profiler, median 2.00 ms (host 2.10 ms);"), std::string::npos)
      << summary.str();
}

TEST(CaptureParts, TheLoopsFactsInTheirRanges) {
  CaptureWindow w = smallWindow();
  std::vector<PartFile> files;
  auto with = [&](json part) { files.push_back({"rank." + std::to_string(files.size()) + ".json", part.dump()}); };
  json longer = loopPart(0);
  longer["timed"][0]["input_ns"] = 2'100'001;  // a wait longer than its step
  with(longer);
  json negative = loopPart(1);
  negative["timed"][1]["input_ns"] = -1;
  with(negative);
  json kind = loopPart(2);
  kind["step_by"] = "epoch";
  with(kind);
  json path = loopPart(3);
  path["input_site"]["path"] = std::string(kMaxPartText + 1, 'p');
  with(path);
  json line = loopPart(4);
  line["input_site"]["line"] = 0;
  with(line);
  json empty = loopPart(5);
  empty["input_site"]["path"] = "";
  with(empty);
  json site = loopPart(6);
  site["input_site"] = "train.py:12";
  with(site);
  auto parts = parseCaptureParts(files, w);
  EXPECT_TRUE(parts.ranks.empty());
  ASSERT_EQ(parts.warnings.size(), 7u);
  EXPECT_NE(parts.warnings[0].find("input_ns is not 0 to its host_ns"), std::string::npos) << parts.warnings[0];
  EXPECT_NE(parts.warnings[2].find("step_by is not"), std::string::npos) << parts.warnings[2];
  EXPECT_NE(parts.warnings[3].find("input_site is not a path"), std::string::npos) << parts.warnings[3];
  // At the bounds: a wait of the whole step, a path of 4 KiB; a profiled step's wait is not read.
  CaptureWindow profiled = w;
  profiled.profiled = 1, profiled.profiler = "torch";
  json whole = loopPart(7);
  whole["timed"][0]["input_ns"] = 2'100'000;
  whole["input_site"]["path"] = std::string(kMaxPartText, 'p');
  whole["profiled"] = json::array({{{"step", 6}, {"gpu_ns", 1}, {"host_ns", 1}, {"input_ns", 5}}});
  parts = parseCaptureParts({{"rank.7.json", whole.dump()}}, profiled);
  ASSERT_EQ(parts.ranks.size(), 1u) << ::testing::PrintToString(parts.warnings);
  EXPECT_EQ(parts.ranks[0].timed[0].input_ns, 2'100'000);
  EXPECT_EQ(parts.ranks[0].input_path.size(), kMaxPartText);
  EXPECT_EQ(parts.ranks[0].profiled[0].input_ns, -1);
}

TEST(CaptureParts, TooFewBackwardCallsSayHowManyAndAWindowThatFits) {
  CaptureWindow w;  // 5 warm-up, 20 timed, 5 profiled
  ProcessStatus s;
  s.pid = 42, s.torch = true, s.hook = true, s.backwards = 40;
  std::string text = explainMissingWindow(w, {s});
  EXPECT_NE(text.find("no optimizer step was seen, and the run ended after 40 backward() calls. A loop that steps no "
                      "optimizer is stepped by backward() once 32 calls have passed with none, so the window of 30 "
                      "steps (5 warm-up, 20 timed, 5 profiled) needs 62 calls.\nA window that fits 40 calls: "
                      "--warmup 1 --timed 6 --steps 1 (or run the command longer)."),
            std::string::npos)
      << text;
  s.backwards = 34;
  text = explainMissingWindow(w, {s});
  EXPECT_NE(text.find("The window needs at least 35 backward() calls (32, then one warm-up, one timed, one profiled "
                      "step): run the command longer."),
            std::string::npos)
      << text;
  // Neither an optimizer step nor a backward(): both named.
  s.backwards = 0;
  text = explainMissingWindow(w, {s});
  EXPECT_NE(text.find("pid 42: torch imported, step hook on, CUDA not asked, 0 steps, 0 backward() calls"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("each backward()"), std::string::npos) << text;
}

TEST(CaptureParts, TwentyWarningsAndACountOfTheRest) {
  std::vector<PartFile> files;
  for (int i = 0; i < 45; ++i) files.push_back({"rank." + std::to_string(i) + ".json", "{"});
  auto parts = parseCaptureParts(files, smallWindow());
  EXPECT_EQ(parts.warnings.size(), kMaxPartWarnings);
  EXPECT_EQ(parts.warnings_left_out, 25u);
}

}  // namespace
}  // namespace sightline::server::capture
