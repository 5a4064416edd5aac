// Rank summaries of reports joined together: each rank named and tallied as its report alone
// would be (its file, its own pid, its syncs and kernels per line), so a job's report joins its
// reports once and its summaries match those made of each report apart.
#include "analysis/join/rank_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "analysis/ingest/profile_loader.h"
#include "tests/support/test_paths.h"

namespace sightline::join {
namespace {

using testing::testDataPath;

model::Profile loadTrace(const std::string& relative) {
  auto loaded = ingest::loadProfile(testDataPath(relative));
  EXPECT_TRUE(loaded.profile) << loaded.error;
  return loaded.profile ? std::move(*loaded.profile) : model::Profile{};
}

// A join of `profile` with the DDP script, whose lines the traces' Python calls resolve to.
std::unique_ptr<ProfileJoin> joinWithScript(model::Profile profile) {
  JoinEnvironment env;
  std::string script = testDataPath("multi/ddp/train_ddp.py");
  env.mapper.candidates = {script};
  env.mapper.exists = [](const std::string& p) { return std::filesystem::exists(p); };
  env.read_source = [script](const std::string& path) -> std::optional<std::string> {
    if (path != script) return std::nullopt;
    return testing::readFile(path);
  };
  return std::make_unique<ProfileJoin>(std::move(profile), std::move(env), JoinOptions{});
}

void expectSameLines(const RankSummary& alone, const RankSummary& joined) {
  ASSERT_EQ(alone.lines.size(), joined.lines.size()) << alone.report;
  for (size_t i = 0; i < alone.lines.size(); ++i) {
    const auto &a = alone.lines[i], &b = joined.lines[i];
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.line, b.line);
    EXPECT_EQ(a.ns, b.ns) << a.line;
    EXPECT_EQ(a.backward_ns, b.backward_ns) << a.line;
    EXPECT_EQ(a.comm_ns, b.comm_ns) << a.line;
    EXPECT_EQ(a.step_ns, b.step_ns) << a.line;
    EXPECT_EQ(a.syncs, b.syncs) << a.line;
    EXPECT_EQ(a.sync_ns, b.sync_ns) << a.line;
    EXPECT_EQ(a.kernels, b.kernels) << a.line;
  }
}

TEST(RankSummary, ARankOfReportsJoinedTogetherReadsAsItsReportAlone) {
  const std::vector<std::string> traces = {"multi/ddp/ddp_rank0.pt.trace.json.gz",
                                           "multi/ddp/ddp_rank1.pt.trace.json.gz"};
  const std::vector<std::string> names = {"ddp_rank0.pt.trace.json.gz", "ddp_rank1.pt.trace.json.gz"};
  std::vector<RankSummary> alone;
  std::vector<model::Profile> parts;
  for (size_t k = 0; k < traces.size(); ++k) {
    auto one = summarizeRanks(*joinWithScript(loadTrace(traces[k])), names[k]);
    ASSERT_EQ(one.size(), 1u);
    alone.push_back(one.front());
    parts.push_back(loadTrace(traces[k]));
  }
  auto joined = summarizeRanks(*joinWithScript(model::mergeProfiles(std::move(parts), names)), "ignored");
  ASSERT_EQ(joined.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const RankSummary &a = alone[k], &b = joined[k];
    EXPECT_EQ(b.report, names[k]);
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.format, b.format);
    EXPECT_EQ(a.gpu_name, b.gpu_name);
    EXPECT_EQ(a.tool_version, b.tool_version);
    EXPECT_EQ(a.warnings, b.warnings);
    EXPECT_EQ(a.profiler_options, b.profiler_options);
    EXPECT_EQ(a.steps.size(), b.steps.size());
    EXPECT_EQ(a.collectives.size(), b.collectives.size());
    expectSameLines(a, b);
    // The case holds what it tests: lines that wait on the GPU, and their kernels.
    auto syncs = std::count_if(b.lines.begin(), b.lines.end(), [](const SummaryLine& l) { return l.syncs > 0; });
    auto named = std::count_if(b.lines.begin(), b.lines.end(), [](const SummaryLine& l) { return !l.kernels.empty(); });
    EXPECT_GT(syncs, 0) << names[k];
    EXPECT_GT(named, 0) << names[k];
  }
}

// Two reports of one pid (two machines, or one report twice): the merge renumbers the second's
// pid, and its summary names it as its own report does.
TEST(RankSummary, ReportsOfOnePidKeepTheirOwnPid) {
  model::Profile one = loadTrace("multi/ddp/ddp_rank0.pt.trace.json.gz");
  ASSERT_FALSE(one.info.processes.empty());
  std::vector<model::Profile> parts;
  parts.push_back(one);
  parts.push_back(std::move(one));
  auto merged = model::mergeProfiles(std::move(parts), {"a.json", "b.json"});
  ASSERT_EQ(merged.info.parts.size(), 2u);
  uint32_t own = merged.info.parts[1].pids.front().first, renumbered = merged.info.parts[1].pids.front().second;
  EXPECT_NE(own, renumbered);
  auto summaries = summarizeRanks(*joinWithScript(std::move(merged)), "ignored");
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[0].pid, summaries[1].pid);
  std::vector<std::string> reports = {summaries[0].report, summaries[1].report};
  std::sort(reports.begin(), reports.end());
  EXPECT_EQ(reports, (std::vector<std::string>{"a.json", "b.json"}));
}

}  // namespace
}  // namespace sightline::join
