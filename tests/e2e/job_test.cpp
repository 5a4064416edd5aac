// Jobs of many ranks (docs/jobs.md): each rank's report reduced to a summary where it was made,
// the summaries merged into the job, equal field by field to the reports read in one process;
// rank identity, FSDP's communication per module, the straggler on a real capture.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string quoted(const std::vector<std::string>& paths, const std::string& flag) {
  std::string out;
  for (const auto& p : paths) out += " " + flag + " '" + p + "'";
  return out;
}

// The keys of two objects whose values differ ("" when equal): a failure names them, not the
// whole job.
std::string differingKeys(const json& a, const json& b) {
  if (a == b) return "";
  if (!a.is_object() || !b.is_object()) return "(not objects)";
  std::string out;
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b[key] != value) out += key + " ";
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) out += key + " ";
  return out;
}

// The reports' summaries, one file each in a fresh folder (with the script named, as the
// reports read together have it: a PyTorch-profiler trace's lines need its source).
std::string summarize(const std::vector<std::string>& reports, const std::string& name,
                      const std::string& script = "") {
  std::string dir = ::testing::TempDir() + "/job_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (size_t i = 0; i < reports.size(); ++i) {
    std::string out = dir + "/rank" + std::to_string(i) + ".json";
    auto r = runSightline("report --format summary --profile '" + reports[i] + "' -o '" + out + "' " + script,
                          sourcePath(""));
    EXPECT_EQ(r.code, 0) << r.out;
  }
  return dir;
}

json runJson(const std::string& args) {
  auto r = runSightline(args, sourcePath(""));
  EXPECT_EQ(r.code, 0) << r.out;
  return json::parse(r.out, nullptr, false);
}

struct Job {
  const char* name;
  std::vector<std::string> reports;  // under tests/data
  const char* script;
};

class JobMerge : public ::testing::TestWithParam<Job> {};

// The job from summaries merged (a folder of them) is the job of the same reports read in one
// process: every field, ranks, pairing, straggler, spread, modules, steps.
TEST_P(JobMerge, MergedSummariesEqualTheReportsReadTogether) {
  std::vector<std::string> reports;
  for (const auto& r : GetParam().reports) reports.push_back(repoProfile("tests/data/" + r));
  std::string script = std::string("tests/data/") + GetParam().script;
  std::string dir = summarize(reports, GetParam().name, script);
  json merged = runJson("report --format json --merge '" + dir + "'");
  json together = runJson("report --format json" + quoted(reports, "--profile") + " " + script);
  ASSERT_TRUE(merged.contains("job") && together.contains("job"));
  EXPECT_EQ(differingKeys(merged["job"], together["job"]), "");
  EXPECT_EQ(merged["job"]["ranks"].size(), reports.size());
  EXPECT_FALSE(merged["job"]["lines"].empty());
  EXPECT_GT(merged["job"]["paired_collectives"].get<int>(), 0);
  // The same from the reports' own JSON (`--format json` carries the summaries too).
  std::vector<std::string> full;
  for (size_t i = 0; i < reports.size(); ++i) {
    std::string path = dir + "/full" + std::to_string(i) + ".json.txt";
    auto r =
        runSightline("report --format json --profile '" + reports[i] + "' -o '" + path + "' " + script, sourcePath(""));
    ASSERT_EQ(r.code, 0) << r.out;
    full.push_back(path);
  }
  json from_full = runJson("report --format json" + quoted(full, "--merge"));
  EXPECT_EQ(differingKeys(from_full["job"], together["job"]), "");
}

INSTANTIATE_TEST_SUITE_P(Captures, JobMerge,
                         ::testing::Values(Job{"ddp_nsys",
                                               {"multi/ddp/ddp_rank0.sqlite.xz", "multi/ddp/ddp_rank1.sqlite.xz"},
                                               "multi/ddp/train_ddp.py"},
                                           Job{"fsdp_nsys",
                                               {"multi/fsdp/fsdp_rank0.sqlite.xz", "multi/fsdp/fsdp_rank1.sqlite.xz",
                                                "multi/fsdp/fsdp_rank2.sqlite.xz", "multi/fsdp/fsdp_rank3.sqlite.xz"},
                                               "multi/fsdp/train_fsdp.py"},
                                           Job{"fsdp_torch",
                                               {"capture/runs/fsdp2_torch.rank0.pt.trace.json.gz",
                                                "capture/runs/fsdp2_torch.rank1.pt.trace.json.gz"},
                                               "capture/train_fsdp2.py"}),
                         [](const auto& info) { return std::string(info.param.name); });

// Ranks are named by the job's rank, host and GPU: from the reports' file names (nsys records no
// rank of its own here) and the export's host name.
TEST(Job, RanksNamedByRankHostAndGpu) {
  std::vector<std::string> reports;
  for (int r = 0; r < 4; ++r)
    reports.push_back(repoProfile("tests/data/multi/fsdp/fsdp_rank" + std::to_string(r) + ".sqlite.xz"));
  json doc = runJson("report --format json" + quoted(reports, "--profile") + " tests/data/multi/fsdp/train_fsdp.py");
  ASSERT_EQ(doc["ranks"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(doc["ranks"][r]["label"], "rank " + std::to_string(r) + " (vm, GPU " + std::to_string(r) + ")");
    EXPECT_EQ(doc["ranks"][r]["rank_source"], "file name");
    EXPECT_EQ(doc["ranks"][r]["gpu_uuid"].get<std::string>().size(), 36u);
  }
  EXPECT_EQ(doc["job"]["hosts"], json::array({"vm"}));
}

// Steps both ranks' traces mark ProfilerStep#4..#8 line up as marked: counting collectives once
// shifted rank 0's by one (its first step caught the previous step's tail), leaving 12
// collectives unpaired, the straggler holding up steps 2-5 of 1-5, and bucket advice beside
// "communication settings would not help".
TEST(Job, MarkedStepsLineUpAsMarked) {
  json doc =
      runJson("report --format json --profile '" + sourcePath("tests/data/multi/ddp/ddp_rank0.pt.trace.json.gz") +
              "' --profile '" + sourcePath("tests/data/multi/ddp/ddp_rank1.pt.trace.json.gz") +
              "' tests/data/multi/ddp/train_ddp.py");
  const json& job = doc["job"];
  EXPECT_EQ(doc["steps_source"], "ProfilerStep ranges");
  EXPECT_EQ(job["straggler"]["steps"], json::array({0, 1, 2, 3, 4})) << job["straggler"].dump();
  EXPECT_LT(job["unpaired_collectives"].get<int>() * 4, job["paired_collectives"].get<int>())
      << job.dump().substr(0, 400);
  for (const auto& a : job["advice"]) EXPECT_NE(a["change"], "ddp-buckets") << a.dump();
}

// A line only one rank spends time on (rank 2's extra work in the 4-rank FSDP capture) is told
// against the others' median in milliseconds, never as a ratio to next to nothing (it once read
// "4165726.0× the median of 4 ranks"), and the waiting it may cause is not asserted.
TEST(Job, ARankOnlyLineIsNoRatioToNothing) {
  std::vector<std::string> reports;
  for (int r = 0; r < 4; ++r)
    reports.push_back(repoProfile("tests/data/multi/fsdp/fsdp_rank" + std::to_string(r) + ".sqlite.xz"));
  auto out =
      runSightline("check" + quoted(reports, "--profile") + " tests/data/multi/fsdp/train_fsdp.py", sourcePath(""));
  size_t at = out.out.find("[rank-imbalance]");
  ASSERT_NE(at, std::string::npos) << out.out;
  size_t begin = out.out.rfind('\n', at) + 1;
  std::string finding = out.out.substr(begin, out.out.find('\n', at) - begin);
  EXPECT_NE(finding.find("while the median of 4 ranks spends"), std::string::npos) << finding;
  EXPECT_EQ(finding.find("×"), std::string::npos) << finding;
  EXPECT_NE(finding.find("may wait for it"), std::string::npos) << finding;
}

// FSDP2's collectives land on the module they serve, forward and backward apart: each layer's
// all-gather twice a step (forward, and backward's prefetch) and its reduce-scatter in backward;
// the root's own in forward and backward. From nsys's NVTX ranges and the trace's annotations.
TEST(Job, FsdpCommunicationPerModule) {
  struct Case {
    const char* report;
    const char* script;
    const char* module;  // the blocks' name, "layers" / "blocks"
    int layers, steps;
  };
  for (const auto& c :
       {Case{"multi/fsdp/fsdp_rank0.sqlite.xz", "multi/fsdp/train_fsdp.py", "layers", 8, 5},
        Case{"capture/runs/fsdp2_torch.rank0.pt.trace.json.gz", "capture/train_fsdp2.py", "blocks", 2, 5}}) {
    json doc = runJson("report --format json --profile '" + repoProfile(std::string("tests/data/") + c.report) +
                       "' tests/data/" + c.script);
    std::map<std::string, int> seen;
    const auto& s = doc["rank_summaries"][0];
    for (const auto& col : s["collectives"]) {
      if (col[8].get<int>() < 0) continue;
      std::string name = s["names"][col[2].get<int>()], module = s["names"][col[8].get<int>()];
      std::string kind = name.find("AllGather") != std::string::npos ? "all-gather" : "reduce-scatter";
      ++seen[module + " " + kind + " " + (col[7].get<int>() ? "backward" : "forward")];
    }
    for (int layer = 0; layer < c.layers; ++layer) {
      std::string m = std::string(c.module) + "." + std::to_string(layer);
      EXPECT_EQ(seen[m + " all-gather forward"], c.steps) << c.report << " " << m;
      EXPECT_EQ(seen[m + " all-gather backward"], c.steps) << c.report << " " << m;
      EXPECT_EQ(seen[m + " reduce-scatter backward"], c.steps) << c.report << " " << m;
    }
    EXPECT_EQ(seen["(root) all-gather forward"], c.steps) << c.report;
    EXPECT_EQ(seen["(root) reduce-scatter backward"], c.steps) << c.report;
  }
}

// The DDP run where rank 1 does extra work on purpose: the job names it the straggler, in every
// step, and the line that made it late.
TEST(Job, FindsTheStragglerAndItsLine) {
  std::vector<std::string> reports = {repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz"),
                                      repoProfile("tests/data/multi/ddp/ddp_rank1.sqlite.xz")};
  std::string dir = summarize(reports, "straggler");
  json job = runJson("report --format json --merge '" + dir + "'")["job"];
  ASSERT_TRUE(job["straggler"].is_object()) << job.dump();
  EXPECT_EQ(job["straggler"]["rank"], "rank 1 (vm, GPU 1)");
  EXPECT_EQ(job["straggler"]["steps"], json::array({0, 1, 2, 3, 4}));
  EXPECT_EQ(job["straggler"]["line"]["line"], 72);
  EXPECT_EQ(job["bound"], "waiting-ranks");
  auto text = runSightline("report --merge '" + dir + "'", sourcePath(""));
  EXPECT_NE(text.out.find("Straggler rank 1 (vm, GPU 1)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("train_ddp.py:72 runs"), std::string::npos) << text.out;
}

// More reports than one process joins: each read, summarized and dropped; the same report twice
// is said to repeat a rank.
TEST(Job, ManyReportsMakeTheJobOnlyAndRepeatsAreSaid) {
  std::string r0 = repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz");
  std::string r1 = repoProfile("tests/data/multi/ddp/ddp_rank1.sqlite.xz");
  std::vector<std::string> reports;
  for (int i = 0; i < 5; ++i) reports.push_back(r0), reports.push_back(r1);
  auto text = runSightline("report -j 2" + quoted(reports, "--profile"), sourcePath(""));
  EXPECT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("Job       2 ranks"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("8 summaries repeat a rank another has"), std::string::npos) << text.out;
  json doc = runJson("report --format json" + quoted(reports, "--profile"));
  EXPECT_EQ(doc["job"]["duplicate_ranks"], 8);
  EXPECT_EQ(doc["job"]["ranks"].size(), 2u);
  EXPECT_EQ(doc["rank_summaries"].size(), 10u);
}

// bench/make_job.py's jobs of 16 and 256 ranks, made from a real rank's summary with a straggler
// of known truth (its host delayed in chosen steps): the job finds its rank, its steps and the
// line it ran longer.
TEST(Job, FindsTheInjectedStragglerOfGeneratedJobs) {
  std::string report = repoProfile("tests/data/multi/fsdp/fsdp_rank0.sqlite.xz");
  std::string dir = summarize({report}, "template", "tests/data/multi/fsdp/train_fsdp.py");
  struct Case {
    int ranks, straggler;
    const char* steps;
    json expected_steps;
  };
  for (const auto& c : {Case{16, 5, "1,3", json::array({1, 3})}, Case{256, 200, "2-4", json::array({2, 3, 4})}}) {
    std::string job_dir = ::testing::TempDir() + "/job_generated_" + std::to_string(c.ranks);
    fs::remove_all(job_dir);
    std::string cmd = "python3 '" + sourcePath("bench/make_job.py") + "' --ranks " + std::to_string(c.ranks) +
                      " --out '" + job_dir + "' --straggler " + std::to_string(c.straggler) + ":" + c.steps + ":25 '" +
                      dir + "/rank0.json'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    json truth = json::parse(std::ifstream(job_dir + "/truth.txt"), nullptr, false);
    json job = runJson("report --format json --merge '" + job_dir + "'")["job"];
    ASSERT_EQ(job["ranks"].size(), static_cast<size_t>(c.ranks));
    ASSERT_TRUE(job["straggler"].is_object()) << c.ranks;
    std::string node = "node" + std::to_string(c.straggler / 8) + ", GPU " + std::to_string(c.straggler % 8);
    EXPECT_EQ(job["straggler"]["rank"], "rank " + std::to_string(c.straggler) + " (" + node + ")");
    EXPECT_EQ(job["straggler"]["steps"], c.expected_steps) << c.ranks;
    EXPECT_EQ(job["straggler"]["line"]["line"], truth[0]["line"][1]) << c.ranks;
    EXPECT_EQ(job["hosts"].size(), static_cast<size_t>((c.ranks + 7) / 8));
    EXPECT_EQ(job["duplicate_ranks"], 0);
  }
}

// `report A B` reads each report once: the ranks' summaries come from the reports joined
// together, so nothing is kept in the reopen cache for a second read of reports that read in
// well under a second (a job's summaries alone, --format summary, read each report alone).
TEST(Job, AJobsReportsAreReadOnce) {
  std::vector<std::string> reports{repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz"),
                                   repoProfile("tests/data/multi/ddp/ddp_rank1.sqlite.xz")};
  auto modelsIn = [](const fs::path& cache) {
    size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cache / "sightline", ec))
      n += entry.path().filename().string().rfind("model-", 0) == 0 ? 1 : 0;
    return n;
  };
  for (const char* format : {"json", "summary"}) {
    fs::path cache = ::testing::TempDir() + "/job_cache_" + format;
    fs::remove_all(cache);
    fs::create_directories(cache);
    std::string cmd = "env XDG_CACHE_HOME='" + cache.string() + "' " + binaryPath() + " report --format " + format +
                      quoted(reports, "--profile") + " > /dev/null 2>&1";
    int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    EXPECT_EQ(modelsIn(cache), 0u) << format;
    fs::remove_all(cache);
  }
}

// A straggler whose lines are unknown: the remedy fits how the job was loaded. Reports loaded
// together without the script are told to name it after them; summaries made without it, to
// make them naming it.
TEST(Job, ARankWithoutLinesIsToldWhatFitsHowTheJobWasLoaded) {
  std::vector<std::string> reports{repoProfile("tests/data/capture/runs/ddp_torch.rank0.pt.trace.json.gz"),
                                   repoProfile("tests/data/capture/runs/ddp_torch.rank1.pt.trace.json.gz")};
  auto together = runSightline("report" + quoted(reports, "--profile"), sourcePath(""));
  ASSERT_EQ(together.code, 0) << together.out;
  EXPECT_NE(together.out.find("its lines are unknown (no script was named: name it after the profiles"),
            std::string::npos)
      << together.out;
  EXPECT_EQ(together.out.find("--format summary"), std::string::npos) << together.out;
  auto merged = runSightline("report --merge '" + summarize(reports, "no_script") + "'", sourcePath(""));
  ASSERT_EQ(merged.code, 0) << merged.out;
  EXPECT_NE(merged.out.find("its summary has none: name the script with --format summary"), std::string::npos)
      << merged.out;
}

// A collective's pass is said only where it is known: DDP's all-reduces without the script
// (no line) are of an unknown pass, not "forward"; with it, those of loss.backward() are in
// backward and the loss's own all_reduce outside it.
TEST(Job, ACollectivesPassIsNamedOnlyWhereKnown) {
  std::vector<std::string> reports{repoProfile("tests/data/capture/runs/ddp_torch.rank0.pt.trace.json.gz"),
                                   repoProfile("tests/data/capture/runs/ddp_torch.rank1.pt.trace.json.gz")};
  auto passes = [&](const std::string& script) {
    std::set<std::string> out;
    json doc = runJson("report --format json" + quoted(reports, "--profile") + script);
    for (const auto& m : doc["job"]["modules"])
      out.insert(m["kind"].get<std::string>() + " " + m["pass"].get<std::string>());
    return out;
  };
  EXPECT_EQ(passes(""), (std::set<std::string>{"all-reduce unknown"}));
  EXPECT_EQ(passes(" '" + sourcePath("tests/data/capture/train_ddp.py") + "'"),
            (std::set<std::string>{"all-reduce backward", "all-reduce other"}));
}

// One report named twice is refused (its rank would be paired with itself), by any path to it.
TEST(Job, AReportNamedTwiceIsRefused) {
  std::string report = repoProfile("tests/data/capture/runs/ddp_torch.rank0.pt.trace.json.gz");
  std::string other = fs::path(report).parent_path().string() + "/../runs/" + fs::path(report).filename().string();
  std::string script = " '" + sourcePath("tests/data/capture/train_ddp.py") + "'";
  for (const char* verb : {"report", "check"}) {
    auto r = runSightline(std::string(verb) + quoted({report, other}, "--profile") + script, sourcePath(""));
    EXPECT_EQ(r.code, 2) << verb << r.out;
    EXPECT_NE(r.out.find(other + ": the same report as " + report), std::string::npos) << verb << r.out;
  }
}

// Summaries come from other machines: a damaged one is refused with its reason, never a crash.
TEST(Job, DamagedSummariesAreRefused) {
  std::string dir = ::testing::TempDir() + "/job_damaged";
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  struct Case {
    std::string text, says;
  };
  for (
      const auto& c : std::vector<Case>{
          {R"({"sightline_rank_summary": 1, "summaries": [{"steps": [[0, 1]]}]})", "a step is not"},
          {R"({"sightline_rank_summary": 1, "summaries": [{"names": ["a"], "collectives": [[0,0,5,0,1,0,-1,0,-1]]}]})",
           "out of range"},
          {R"({"sightline_rank_summary": 1, "summaries": [{"names": ["a"], "collectives": [[-1,0,0,5,1,0,-1,0,-1]]}]})",
           "not a span"},
          {R"({"sightline_rank_summary": 2, "summaries": []})", "another version"},
          {R"({"sightline_rank_summary": 1, "summaries": [{"lines": [{"path": "a.py", "line": 0}]}]})",
           "without a path and line"},
          {R"({"sightline_rank_summary": 1, "summ)", "not JSON"}}) {
    std::string path = write("bad.json", c.text);
    auto r = runSightline("report --merge '" + path + "'", sourcePath(""));
    EXPECT_EQ(r.code, 2) << c.text;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.text << "\n" << r.out;
  }
  auto empty = runSightline("report --merge '" + ::testing::TempDir() + "/job_nothing_here'", sourcePath(""));
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.out.find("no such file or folder"), std::string::npos) << empty.out;
}

}  // namespace
}  // namespace sightline::testing
