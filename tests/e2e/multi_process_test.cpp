// Real runs as people launch them (tests/data/multi): a 2-GPU torchrun DDP report, one report
// per rank, DataLoader workers, torch.compile and a capture that nsys ended while training.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <numeric>
#include <set>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

json reportJson(const std::string& profile, const std::string& script, const std::string& options = "") {
  auto r = runSightline("report --format json " + options + " --profile '" + profile + "' " + script, sourcePath(""));
  EXPECT_EQ(r.code, 0) << r.out;
  return json::parse(r.out);
}

// GPU time on the lines of files that map onto the repo, over all GPU time.
double userShare(const json& doc) {
  int64_t user = 0;
  for (const auto& f : doc["files"])
    if (!f["local_path"].is_null()) user += f["gpu_ns"].get<int64_t>();
  return static_cast<double>(user) / static_cast<double>(doc["steady_gpu_ns"].get<int64_t>());
}

const json* lineOf(const json& doc, int line) {
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["line"] == line) return &l;
  return nullptr;
}

struct Capture {
  const char* profile;
  const char* script;
};

class MultiCaptures : public ::testing::TestWithParam<Capture> {};

// Every capture decodes (the payload schemas of every process), and at least 95% of its GPU
// time lands on the user's lines: the all-reduce of the autograd thread on `loss.backward()`,
// compiled kernels on the model's lines rather than Inductor's generated files.
TEST_P(MultiCaptures, PutsNearlyAllGpuTimeOnTheUsersLines) {
  std::string profile = repoProfile(std::string("tests/data/multi/") + GetParam().profile);
  // Every step counted: this is about where GPU time lands, warm-up steps included.
  json doc = reportJson(profile, std::string("tests/data/multi/") + GetParam().script, "--all-steps");
  EXPECT_GE(userShare(doc), 0.95) << GetParam().profile;
  for (const auto& w : doc["profile"]["warnings"])
    EXPECT_EQ(w.get<std::string>().find("could not be decoded"), std::string::npos) << w;
  // Per-rank numbers add up to the totals exactly (inside the steps and outside them), per
  // profile and per line.
  int64_t ranks = 0;
  for (const auto& r : doc["ranks"]) ranks += r["gpu_ns"].get<int64_t>();
  EXPECT_EQ(ranks, doc["total_gpu_ns"].get<int64_t>());
  EXPECT_EQ(ranks, doc["steady_gpu_ns"].get<int64_t>() + doc["step_summary"]["oneoff_gpu_ns"].get<int64_t>());
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l.contains("rank_ns")) {
        auto v = l["rank_ns"].get<std::vector<int64_t>>();
        EXPECT_EQ(std::accumulate(v.begin(), v.end(), int64_t{0}), l["gpu_ns"].get<int64_t>()) << l["line"];
      }
}

INSTANTIATE_TEST_SUITE_P(Bundled, MultiCaptures,
                         ::testing::Values(Capture{"ddp/ddp_one.sqlite.xz", "ddp/train_ddp.py"},
                                           Capture{"ddp/ddp_rank0.sqlite.xz", "ddp/train_ddp.py"},
                                           Capture{"ddp/ddp_rank1.sqlite.xz", "ddp/train_ddp.py"},
                                           Capture{"loader/loader.sqlite.xz", "loader/train_resnet.py"},
                                           Capture{"killed/killed.sqlite.xz", "killed/train_resnet.py"},
                                           Capture{"compile/compile.sqlite.xz", "compile/train_ddp.py"},
                                           Capture{"ddp/ddp_rank0.pt.trace.json.gz", "ddp/train_ddp.py"}));

// One report of two ranks: two ranks, two GPUs, the communication of the backward pass on
// `loss.backward()` (line 150) and the explicit all_reduce on its own line (155); backward
// work on the forward lines of the model, never on `pos = torch.arange(...)` (line 60).
TEST(MultiProcess, OneReportOfTwoRanksReadsAsTwoRanks) {
  json doc = reportJson(repoProfile("tests/data/multi/ddp/ddp_one.sqlite.xz"), "tests/data/multi/ddp/train_ddp.py");
  ASSERT_EQ(doc["ranks"].size(), 2u);
  EXPECT_EQ(doc["ranks"][0]["label"], "GPU 0");
  EXPECT_EQ(doc["ranks"][1]["label"], "GPU 1");
  EXPECT_EQ(doc["steps_per_rank"], 5) << "gradient-accumulation micro-steps are not steps";
  EXPECT_EQ(doc["steps"], 10) << "per-step figures are per GPU: each rank's steps count";
  const json* backward = lineOf(doc, 150);
  ASSERT_NE(backward, nullptr);
  EXPECT_GT((*backward)["comm_ns"].get<int64_t>(), 0);
  EXPECT_GT((*backward)["by_method"]["caller"].get<int64_t>(), 0);
  const json* all_reduce = lineOf(doc, 155);
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_GT((*all_reduce)["comm_ns"].get<int64_t>(), 0);
  const json* arange = lineOf(doc, 60);
  if (arange) {
    EXPECT_EQ((*arange)["backward_ns"].get<int64_t>(), 0);
  }
  const json* mlp = lineOf(doc, 45);
  ASSERT_NE(mlp, nullptr);
  EXPECT_GT((*mlp)["backward_ns"].get<int64_t>(), 0);
  auto text = runSightline("report --profile '" + repoProfile("tests/data/multi/ddp/ddp_one.sqlite.xz") +
                               "' tests/data/multi/ddp/train_ddp.py",
                           sourcePath(""));
  EXPECT_NE(text.out.find("GPUs      2 × NVIDIA H200"), std::string::npos) << text.out.substr(0, 600);
  EXPECT_NE(text.out.find("Ranks     2 (2 processes"), std::string::npos) << text.out.substr(0, 600);
}

// Rank 1 runs the extra_work line 200 times per micro-step (rank 0 once): the straggler is on
// line 72 and names GPU 1; rank 0 waits in the all-reduce, exposed on `loss.backward()`.
TEST(MultiProcess, StragglerAndExposedCommunicationOnTheLinesThatCauseThem) {
  for (const char* file : {"tests/data/multi/ddp/ddp_one.sqlite.xz"}) {
    auto r =
        runSightline("check --profile '" + repoProfile(file) + "' tests/data/multi/ddp/train_ddp.py", sourcePath(""));
    EXPECT_NE(r.out.find("train_ddp.py:72:13: warning: GPU 1 spends"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[rank-imbalance]"), std::string::npos) << r.out;
    auto exposed = r.out.find("train_ddp.py:150:");
    ASSERT_NE(exposed, std::string::npos) << r.out;
    std::string line = r.out.substr(exposed, r.out.find('\n', exposed) - exposed);
    EXPECT_NE(line.find("[exposed-communication]"), std::string::npos) << line;
    // Paired across the ranks, the NCCL time is GPU 0 waiting for GPU 1: no transfer advice.
    EXPECT_NE(line.find("the others wait for GPU 1, last to arrive at 100% of the collectives"), std::string::npos)
        << line;
    EXPECT_NE(line.find("is ranks waiting for the last one to arrive"), std::string::npos) << line;
    EXPECT_EQ(line.find("bucket_cap_mb"), std::string::npos) << line;
    // The script already uses no_sync(): the message does not advise it.
    EXPECT_EQ(line.find("no_sync"), std::string::npos) << line;
    // The threshold is a setting: 2x the median is no straggler at 500%.
    auto lenient = runSightline("check --threshold rankImbalancePercent=500 --profile '" + repoProfile(file) +
                                    "' tests/data/multi/ddp/train_ddp.py",
                                sourcePath(""));
    EXPECT_EQ(lenient.out.find("[rank-imbalance]"), std::string::npos) << lenient.out;
  }
  json doc = reportJson(repoProfile("tests/data/multi/ddp/ddp_one.sqlite.xz"), "tests/data/multi/ddp/train_ddp.py");
  const auto& ranks = doc["ranks"];
  EXPECT_GT(ranks[0]["comm_exposed_ns"].get<int64_t>(), 10 * ranks[1]["comm_exposed_ns"].get<int64_t>());
  const json* straggler = lineOf(doc, 72);
  ASSERT_NE(straggler, nullptr);
  auto per_rank = (*straggler)["rank_ns"].get<std::vector<int64_t>>();
  EXPECT_GT(per_rank[1], 50 * per_rank[0]);
}

// nsys ended the app while it trained: the launches without GPU records are counted exactly,
// warned about with a remedy for a time-limited capture, and no profile-only rule fires on
// their lines.
TEST(MultiProcess, LostRecordsAreCountedAndSilenceTheirLines) {
  std::string profile = repoProfile("tests/data/multi/killed/killed.sqlite.xz");
  json doc = reportJson(profile, "tests/data/multi/killed/train_resnet.py");
  EXPECT_EQ(doc["lost_launches"], 19);
  ASSERT_EQ(doc["ranks"].size(), 1u);
  EXPECT_EQ(doc["ranks"][0]["lost_launches"], 19);
  int lost_lines = 0;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["lost_launches"].get<int>() > 0) ++lost_lines;
  EXPECT_GT(lost_lines, 0);
  auto text =
      runSightline("report --profile '" + profile + "' tests/data/multi/killed/train_resnet.py", sourcePath(""));
  EXPECT_NE(text.out.find("Warning   19 of "), std::string::npos) << text.out.substr(0, 800);
  EXPECT_NE(text.out.find("instead of a time limit"), std::string::npos);
  auto check =
      runSightline("check --profile '" + profile + "' tests/data/multi/killed/train_resnet.py", sourcePath(""));
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["lost_launches"].get<int>() > 0) {
        EXPECT_EQ(check.out.find("train_resnet.py:" + std::to_string(l["line"].get<int>()) + ":"), std::string::npos)
            << check.out;
      }
}

// A whole run of a cuDNN LSTM under --cudabacktrace=all that exited normally: cuDNN launches
// through the driver (twin rows per call), and 240 of its cudaMemsetAsync calls fill zero bytes
// and put nothing on the GPU. Every launch is counted once, none is lost, no warning is given
// and the confidence stays (it was "240 of 30646 GPU launches (0.8%) have no GPU record").
TEST(MultiProcess, AWholeRunThatExitedLosesNoRecords) {
  std::string profile = repoProfile("tests/data/lstm/lstm.sqlite.xz");
  json doc = reportJson(profile, "tests/data/lstm/lstm.py");
  EXPECT_EQ(doc["launches"], 30646);  // distinct correlation ids of launching calls (sqlite3 count)
  EXPECT_EQ(doc["lost_launches"], 0);
  EXPECT_EQ(doc["step_summary"]["lost_launches"], 0);
  EXPECT_NE(doc["verdict"]["confidence"], "low") << doc["verdict"].dump();
  auto text = runSightline("report --profile '" + profile + "' tests/data/lstm/lstm.py", sourcePath(""));
  EXPECT_EQ(text.code, 0);
  EXPECT_EQ(text.out.find("no GPU record"), std::string::npos) << text.out.substr(0, 2000);
  auto check = runSightline("check --profile '" + profile + "' tests/data/lstm/lstm.py", sourcePath(""));
  EXPECT_EQ(check.out.find("no GPU record"), std::string::npos) << check.out;
}

// The killed capture with the GPU records of two long stretches removed, as CUPTI loses whole
// buffers when nsys ends an app that queued far ahead: most steps have launches and no GPU work.
std::string lossyCopy(const std::string& from) {
  std::string to = (std::filesystem::temp_directory_path() / "sightline_lossy.sqlite").string();
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(to.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT MIN(start), MAX(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL", -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
  int64_t lo = sqlite3_column_int64(st, 0), span = sqlite3_column_int64(st, 1) - lo;
  sqlite3_finalize(st);
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    std::string sql = std::string("DELETE FROM ") + table + " WHERE start BETWEEN " + std::to_string(lo + span / 5) +
                      " AND " + std::to_string(lo + span * 9 / 20) + " OR start BETWEEN " +
                      std::to_string(lo + span * 3 / 5) + " AND " + std::to_string(lo + span * 19 / 20);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  }
  sqlite3_close(db);
  return to;
}

// Steps whose launches lost their GPU records leave the steady set; the verdict says its
// confidence is low and why, names no cause on a line whose kernels were lost, and the JSON
// carries every warning the text shows.
TEST(MultiProcess, StepsWithoutGpuRecordsLeaveTheSteadySet) {
  std::string profile = lossyCopy(repoProfile("tests/data/multi/killed/killed.sqlite.xz"));
  json doc = reportJson(profile, "tests/data/multi/killed/train_resnet.py");
  const auto& steps = doc["step_summary"];
  EXPECT_GE(steps["lost"].get<int>(), 5) << steps.dump();
  EXPECT_LE(steps["steady"].get<int>(), 4);
  for (const auto& p : steps["processes"])
    for (const auto& st : p["steps"])
      if (st["kind"] == "steady") {
        EXPECT_GT(st["gpu_ns"].get<int64_t>(), 0) << "a steady step has GPU records";
      }
  ASSERT_TRUE(doc.contains("verdict"));
  EXPECT_EQ(doc["verdict"]["confidence"], "low");
  EXPECT_NE(doc["verdict"]["confidence_reason"].get<std::string>().find("left out"), std::string::npos);
  std::set<int> lost;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"])
      if (l["lost_launches"].get<int>() > 0) lost.insert(l["line"].get<int>());
  for (const auto& c : doc["verdict"]["causes"])
    for (const auto& l : c["lines"]) EXPECT_FALSE(lost.count(l["line"].get<int>())) << c.dump();
  ASSERT_FALSE(doc["warnings"].empty());
  EXPECT_EQ(doc["warnings"], doc["profile"]["warnings"]);
  auto text =
      runSightline("report --profile '" + profile + "' tests/data/multi/killed/train_resnet.py", sourcePath(""));
  EXPECT_NE(text.out.find("confidence low"), std::string::npos) << text.out.substr(0, 1500);
  for (const auto& w : doc["warnings"])
    EXPECT_NE(text.out.find("Warning   " + w.get<std::string>()), std::string::npos) << w;
  std::filesystem::remove(profile);
}

// A capture range that closed in time loses nothing, and says nothing about it.
TEST(MultiProcess, NoLostRecordsNoWarning) {
  json doc = reportJson(repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz"), "tests/data/multi/ddp/train_ddp.py");
  EXPECT_EQ(doc["lost_launches"], 0);
  for (const auto& w : doc["profile"]["warnings"])
    EXPECT_EQ(w.get<std::string>().find("no GPU record"), std::string::npos);
}

// torch.compile, whole run: the autograd thread's backtraces (compiled backward graphs) stop in
// generated code; steps come from the main thread's loop, and compiled work lands on the model.
TEST(MultiProcess, CompiledRunCountsStepsOnItsPythonThread) {
  json doc =
      reportJson(repoProfile("tests/data/multi/compile/compile.sqlite.xz"), "tests/data/multi/compile/train_ddp.py");
  const auto& steps = doc["step_summary"];
  EXPECT_EQ(steps["steady"].get<int>() + steps["warmup"].get<int>() + steps["outliers"].get<int>(), 5);
  EXPECT_GE(steps["warmup"].get<int>(), 1) << "the first, compiling step is warm-up";
  EXPECT_EQ(doc["steps"], steps["steady"]);
  EXPECT_EQ(doc["steps_source"], "loop line of main() in Python backtraces");
  for (const auto& f : doc["files"])
    EXPECT_EQ(f["path"].get<std::string>().find("inductor"), std::string::npos) << f["path"];
}

// The PyTorch profiler trace names its rank (distributedInfo).
TEST(MultiProcess, KinetoTraceNamesItsRank) {
  json doc =
      reportJson(repoProfile("tests/data/multi/ddp/ddp_rank1.pt.trace.json.gz"), "tests/data/multi/ddp/train_ddp.py");
  ASSERT_EQ(doc["ranks"].size(), 1u);
  EXPECT_EQ(doc["ranks"][0]["label"], "rank 1 (GPU 1)");
  EXPECT_EQ(doc["ranks"][0]["rank_source"], "distributedInfo");
  EXPECT_EQ(doc["ranks"][0]["rank"], 1);
}

// One report per rank, loaded together, reads like the one report of both ranks; and the JSON
// summaries of single ranks, merged, give the same per-line, per-rank numbers.
TEST(MultiProcess, ReportsPerRankLoadTogetherAndSummariesMerge) {
  std::string r0 = repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz");
  std::string r1 = repoProfile("tests/data/multi/ddp/ddp_rank1.sqlite.xz");
  std::string script = "tests/data/multi/ddp/train_ddp.py";
  auto both =
      runSightline("report --format json --profile '" + r0 + "' --profile '" + r1 + "' " + script, sourcePath(""));
  ASSERT_EQ(both.code, 0) << both.out;
  json together = json::parse(both.out);
  ASSERT_EQ(together["ranks"].size(), 2u);
  EXPECT_EQ(together["profile"]["parts"].size(), 2u);
  auto check = runSightline("check --profile '" + r0 + "' --profile '" + r1 + "' " + script, sourcePath(""));
  EXPECT_NE(check.out.find("train_ddp.py:72:13: warning: rank 1 (vm, GPU 1) spends"), std::string::npos) << check.out;

  std::string dir = ::testing::TempDir();
  auto save = [&](const std::string& profile, const std::string& name) {
    auto r = runSightline("report --format json --profile '" + profile + "' " + script, sourcePath(""));
    std::string path = dir + "/" + name;
    FILE* f = std::fopen(path.c_str(), "w");
    std::fwrite(r.out.data(), 1, r.out.size(), f);
    std::fclose(f);
    return path;
  };
  std::string j0 = save(r0, "rank0.json"), j1 = save(r1, "rank1.json");
  auto merged_run = runSightline("report --format json --merge '" + j0 + "' --merge '" + j1 + "'", sourcePath(""));
  ASSERT_EQ(merged_run.code, 0) << merged_run.out;
  json merged = json::parse(merged_run.out);
  EXPECT_EQ(merged["total_gpu_ns"], together["total_gpu_ns"]);
  EXPECT_EQ(merged["ranks"].size(), 2u);
  for (int line : {72, 147, 150, 155}) {
    const json* a = lineOf(together, line);
    const json* b = lineOf(merged, line);
    ASSERT_TRUE(a && b) << line;
    EXPECT_EQ((*a)["gpu_ns"], (*b)["gpu_ns"]) << line;
    EXPECT_EQ((*a)["rank_ns"], (*b)["rank_ns"]) << line;
    EXPECT_EQ((*a)["comm_ns"], (*b)["comm_ns"]) << line;
  }
  auto bad = runSightline("report --format json --merge '" + script + "'", sourcePath(""));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("not JSON"), std::string::npos) << bad.out;
  // A profile given to --merge: make its summary first, and how.
  auto profile = runSightline("report --merge '" + r0 + "'", sourcePath(""));
  EXPECT_EQ(profile.code, 2);
  EXPECT_NE(profile.out.find("a profile, not a rank summary: make its summary where it lies first"), std::string::npos)
      << profile.out;
}

}  // namespace
}  // namespace sightline::testing
