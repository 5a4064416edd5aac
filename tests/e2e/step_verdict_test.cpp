// The step verdict on captures whose bottleneck is known by construction (tests/data/verdict:
// verdict.py injects one cause per capture): the right cause first, with the injected size within
// 10%, one-off costs kept out of per-step figures, and inclusive time on the call lines. These
// are full captures with no measurement of the step without the profiler: the causes are told as
// captured and a bound only where it holds over the whole range (a GPU-bound step).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/scratch_dir.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

struct CaseRun {
  json doc;
  std::string text;
  std::string check;
};

CaseRun runCase(const std::string& name) {
  std::string profile = repoProfile("tests/data/verdict/" + name + ".sqlite.xz");
  std::string args = "--profile '" + profile + "' tests/data/verdict/verdict.py";
  CaseRun r;
  auto json_run = runSightline("report --format json " + args, sourcePath(""));
  EXPECT_EQ(json_run.code, 0) << json_run.out;
  r.doc = json::parse(json_run.out);
  r.text = runSightline("report " + args, sourcePath("")).out;
  r.check = runSightline("check " + args, sourcePath("")).out;
  return r;
}

double perStepMs(const json& summary, int64_t ns) {
  return static_cast<double>(ns) / summary["steady"].get<double>() / 1e6;
}

double waitMs(const json& summary, const char* kind) {
  return perStepMs(summary, summary["waits"][kind]["ns"].get<int64_t>());
}

std::string headerLine(const std::string& text, const std::string& prefix) {
  auto at = text.find("\n" + prefix);
  return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// Not measured, and too wide a range for a bound: the first cause is told as captured.
void expectFirstCauseAsCaptured(const CaseRun& r, const std::string& cause) {
  const json& u = r.doc["verdict"]["unprofiled"];
  EXPECT_TRUE(u["wall_ns"].is_null()) << u.dump();
  EXPECT_TRUE(u["bound"].is_null()) << u.dump();
  EXPECT_NE(headerLine(r.text, "Unprofiled ").find("bound: cannot tell from this capture"), std::string::npos)
      << r.text.substr(0, 1500);
  EXPECT_NE(r.text.find("\nWaits     as captured: " + cause + " "), std::string::npos) << r.text.substr(0, 1500);
  ASSERT_FALSE(r.doc["verdict"]["causes"].empty());
  EXPECT_EQ(r.doc["verdict"]["causes"][0]["cause"], cause);
  EXPECT_TRUE(r.doc["verdict"]["as_captured"].get<bool>());
}

// The first three steps (and the evaluation pass after step 10) are not steady: 25 steps, one
// warm-up or more, one outlier or more; start-up's idle seconds are one-off, never per step.
void expectSteadyState(const CaseRun& r, int steps) {
  const auto& s = r.doc["step_summary"];
  EXPECT_EQ(s["steady"].get<int>() + s["warmup"].get<int>() + s["outliers"].get<int>(), steps);
  EXPECT_GE(s["warmup"].get<int>(), 1);
  EXPECT_GE(s["outliers"].get<int>(), 1) << "the evaluation pass after step 10";
  EXPECT_GT(s["oneoff_idle_ns"].get<int64_t>(), 1'000'000'000) << "start-up";
  // No line gets a per-step idle figure built from a one-off gap (seconds of start-up).
  for (const auto& f : r.doc["files"])
    for (const auto& l : f["lines"]) EXPECT_LT(perStepMs(s, l["idle_ns"].get<int64_t>()), 30.0) << l["line"];
  EXPECT_NE(r.check.find("[step-verdict]"), std::string::npos) << r.check;
}

TEST(StepVerdict, HostSleepIsHostBoundAtTheSleep) {
  CaseRun r = runCase("sleep");
  expectSteadyState(r, 25);
  expectFirstCauseAsCaptured(r, "other host work");
  double host = waitMs(r.doc["step_summary"], "host");
  EXPECT_NEAR(host, 10.0, 1.0) << "time.sleep(0.010) per step";
  EXPECT_EQ(r.doc["step_summary"]["waits"]["host"]["lines"][0]["line"], 66);
}

TEST(StepVerdict, SlowLoaderIsInputBoundInGetItem) {
  CaseRun r = runCase("loader");
  expectSteadyState(r, 25);
  expectFirstCauseAsCaptured(r, "input pipeline");
  double input = waitMs(r.doc["step_summary"], "input");
  EXPECT_NEAR(input, 16.0, 1.6) << "8 samples × 2 ms per batch";
  EXPECT_EQ(r.doc["step_summary"]["waits"]["input"]["lines"][0]["line"], 23);
  // verdict.py's DataLoader sets none of them: the report and the finding name all three.
  EXPECT_NE(r.text.find("DataLoader workers (num_workers, pin_memory=True, persistent_workers=True)"),
            std::string::npos)
      << r.text.substr(0, 1500);
  EXPECT_NE(r.check.find("DataLoader workers (num_workers, pin_memory=True, persistent_workers=True)"),
            std::string::npos)
      << r.check;
}

TEST(StepVerdict, TinyKernelsAreLaunchBound) {
  CaseRun r = runCase("tiny");
  expectSteadyState(r, 15);
  expectFirstCauseAsCaptured(r, "host launch overhead");
  const auto& s = r.doc["step_summary"];
  double kernels = s["kernels"].get<double>() / s["steady"].get<double>();
  EXPECT_NEAR(kernels, 2000 + 25, 0.1 * 2000) << "2,000 tiny kernels per step, plus the model's";
  EXPECT_NE(r.text.find("torch.compile"), std::string::npos);
}

// The host waits at `.item()` each step for ~20 ms of GPU work: the GPU is busy nine tenths of
// even the captured step, so the step is GPU-bound whatever the profiler cost, and dropping the
// sync is still advised with its figure.
TEST(StepVerdict, ItemEveryStepIsGpuBoundWithTheSyncAdvised) {
  CaseRun r = runCase("item");
  expectSteadyState(r, 25);
  EXPECT_NE(headerLine(r.text, "Unprofiled ").find("GPU-bound"), std::string::npos) << r.text.substr(0, 1500);
  EXPECT_NE(r.text.find("sync less often: the host blocks"), std::string::npos) << r.text.substr(0, 2000);
  const auto& s = r.doc["step_summary"];
  EXPECT_EQ(s["sync_lines"][0]["line"], 85);
  // The host waits at `.item()` for the GPU work queued before it: more than half the step.
  EXPECT_GT(perStepMs(s, s["sync_ns"].get<int64_t>()), 0.5 * static_cast<double>(s["wall_ns"].get<int64_t>()) / 1e6);
}

TEST(StepVerdict, Fp32MatmulsAreGpuBoundWithTf32Advice) {
  CaseRun r = runCase("fp32");
  expectSteadyState(r, 25);
  EXPECT_NE(headerLine(r.text, "Unprofiled ").find("GPU-bound"), std::string::npos) << r.text.substr(0, 1500);
  const auto& s = r.doc["step_summary"];
  // 8 matmuls of 4096² per step in fp32: nearly all of the step.
  EXPECT_GT(static_cast<double>(s["fp32_matmul_ns"].get<int64_t>()), 0.9 * s["gpu_ns"].get<double>());
  EXPECT_NE(r.check.find("verdict.py:78:23: warning:"), std::string::npos) << r.check;
  EXPECT_NE(r.check.find("[fp32-matmul]"), std::string::npos);
  EXPECT_NE(headerLine(r.text, "Try ").find("set_float32_matmul_precision"), std::string::npos);
}

// Inclusive time: `out = model(x)` launches nothing itself; everything of the forward (and its
// backward) runs beneath it, and the loop's Σ holds the whole step.
TEST(StepVerdict, CallLinesCarryWhatRunsBeneathThem) {
  CaseRun r = runCase("fp32");
  const json* call = nullptr;
  const json* forward = nullptr;
  for (const auto& f : r.doc["files"])
    for (const auto& l : f["lines"]) {
      if (l["line"] == 73) call = &l;
      if (l["line"] == 34) forward = &l;
    }
  ASSERT_TRUE(call && forward);
  EXPECT_EQ((*call)["gpu_ns"], 0);
  int64_t beneath = (*forward)["gpu_ns"].get<int64_t>();
  EXPECT_GE(static_cast<double>((*call)["inclusive_ns"].get<int64_t>()), 0.9 * static_cast<double>(beneath));
  EXPECT_GT((*call)["inclusive_backward_ns"].get<int64_t>(), 0) << "the backward of the forward ops";
  // Σ on the loop line is the whole step's GPU time.
  std::string loop;
  std::istringstream lines(r.text);
  for (std::string l; std::getline(lines, l);)
    if (l.find("for step in range(args.steps):") != std::string::npos) loop = l;
  EXPECT_NE(loop.find("Σ 21.7"), std::string::npos) << loop;
}

// The same on our real captures (nsys with backtraces, PyTorch profiler traces, DDP, torchvision
// models whose frames are library code): the call line of the model's forward carries at least
// 90% of the forward and backward time of the model lines beneath it, and the training loop's Σ
// is the whole step.
struct RealCapture {
  const char* profile;  // under the repo (.xz decompressed once)
  const char* script;
  int call;                     // `out = model(x)`
  int model_first, model_last;  // the model's classes in the script (0, 0: a library model)
  int loop;
};

class RealCaptures : public ::testing::TestWithParam<RealCapture> {};

double msOn(const std::string& text, const std::string& marker, const std::string& after) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l.find(marker) == std::string::npos) continue;
    auto at = l.find(after);
    if (at == std::string::npos) continue;
    return std::stod(l.substr(at + after.size()));
  }
  return -1;
}

TEST_P(RealCaptures, CallLineCarriesTheForwardAndTheLoopTheStep) {
  const RealCapture& c = GetParam();
  std::string path = c.profile;
  std::string profile = path.ends_with(".xz") ? repoProfile(path) : sourcePath(path);
  std::string args = "--profile '" + profile + "' " + c.script;
  auto run = runSightline("report --format json " + args, sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = json::parse(run.out);
  ASSERT_EQ(doc["files"].size(), 1u);
  int64_t beneath = 0, inclusive = -1;
  for (const auto& l : doc["files"][0]["lines"]) {
    int line = l["line"];
    if (line == c.call) {
      inclusive = l["inclusive_ns"];
      beneath += l["gpu_ns"].get<int64_t>();
    }
    if (line >= c.model_first && line <= c.model_last) beneath += l["gpu_ns"].get<int64_t>();
  }
  ASSERT_GT(beneath, 0);
  // No per-step idle figure from a one-off gap: a line's idle per step fits in a step.
  const auto& s = doc["step_summary"];
  ASSERT_GT(s["steady"].get<int>(), 0);
  for (const auto& l : doc["files"][0]["lines"])
    EXPECT_LE(l["idle_ns"].get<double>() / s["steady"].get<double>(), s["wall_ns"].get<double>()) << l["line"];
  EXPECT_GE(static_cast<double>(inclusive), 0.9 * static_cast<double>(beneath))
      << c.script << ":" << c.call << " carries " << inclusive << " ns of " << beneath;
  std::string text = runSightline("report " + args, sourcePath("")).out;
  double step = msOn(text, "GPU time", "steps, ");
  char loop_marker[16];
  std::snprintf(loop_marker, sizeof loop_marker, "│ %4d ", c.loop);
  double loop = msOn(text, loop_marker, "Σ ");
  EXPECT_GT(step, 0) << text.substr(0, 600);
  EXPECT_NEAR(loop, step, 0.01 * step) << "the loop's Σ is the whole step";
}

INSTANTIATE_TEST_SUITE_P(Bundled, RealCaptures,
                         ::testing::Values(RealCapture{"examples/train_small_naive.sqlite.xz",
                                                       "examples/train_small.py", 51, 26, 48, 100},
                                           RealCapture{"tests/data/h100-nvtx/train_small_nvtx_backtrace.sqlite.xz",
                                                       "tests/data/h100-nvtx/train_small.py", 52, 26, 48, 104},
                                           RealCapture{"tests/data/h200/kineto/train_small_naive.pt.trace.json.gz",
                                                       "tests/data/h200/kineto/train_small.py", 51, 26, 48, 79},
                                           RealCapture{"tests/data/multi/ddp/ddp_rank0.sqlite.xz",
                                                       "tests/data/multi/ddp/train_ddp.py", 147, 16, 65, 140},
                                           RealCapture{"tests/data/multi/ddp/ddp_rank0.pt.trace.json.gz",
                                                       "tests/data/multi/ddp/train_ddp.py", 147, 16, 65, 140},
                                           RealCapture{"tests/data/multi/loader/loader.sqlite.xz",
                                                       "tests/data/multi/loader/train_resnet.py", 49, 0, 0, 43},
                                           RealCapture{"tests/data/multi/killed/killed.sqlite.xz",
                                                       "tests/data/multi/killed/train_resnet.py", 50, 0, 0, 44}),
                         [](const ::testing::TestParamInfo<RealCapture>& info) {
                           std::string name = std::string(info.param.profile);
                           name = name.substr(name.find_last_of('/') + 1);
                           name = name.substr(0, name.find('.'));
                           return name + "_" + std::to_string(info.index);
                         });

// DDP with a straggler (rank 1 does 8x the extra work): rank 0's GPU is "busy" in NCCL kernels
// that wait for rank 1, so the verdict is communication-bound, not GPU- or sync-bound; the
// advice to load every rank's report appears only while one rank's report is loaded.
TEST(StepVerdict, ExposedCommunicationOfAStraggler) {
  std::string r0 = repoProfile("tests/data/multi/ddp/ddp_rank0.sqlite.xz");
  std::string r1 = repoProfile("tests/data/multi/ddp/ddp_rank1.sqlite.xz");
  auto one =
      runSightline("report --format json --profile '" + r0 + "' tests/data/multi/ddp/train_ddp.py", sourcePath(""));
  ASSERT_EQ(one.code, 0) << one.out;
  json v = json::parse(one.out)["verdict"];
  EXPECT_EQ(v["bound"], "communication-bound") << v.dump();
  EXPECT_GT(v["comm_exposed_ns_per_step"].get<double>(), 0.5 * v["wall_ns"].get<double>());
  ASSERT_FALSE(v["changes"].empty());
  EXPECT_EQ(v["changes"][0]["change"], "overlap-communication");
  EXPECT_NE(v["changes"][0]["text"].get<std::string>().find("train_ddp.py:150"), std::string::npos);
  EXPECT_NE(v["changes"][0]["text"].get<std::string>().find("load every rank's report with this one"),
            std::string::npos);
  auto both = runSightline(
      "report --format json --profile '" + r0 + "' --profile '" + r1 + "' tests/data/multi/ddp/train_ddp.py",
      sourcePath(""));
  ASSERT_EQ(both.code, 0) << both.out;
  json v2 = json::parse(both.out)["verdict"];
  // Both ranks loaded: each all-reduce is paired across them, and rank 0's NCCL time is waiting
  // for rank 1 (its kernels run the shortest: it arrives last at every one), not moving data.
  EXPECT_EQ(v2["bound"], "bound by waiting ranks") << v2.dump();
  EXPECT_GT(v2["comm_wait_ns_per_step"].get<double>(), 50 * v2["comm_transfer_ns_per_step"].get<double>());
  EXPECT_EQ(v2["late_rank"]["label"], "rank 1 (vm, GPU 1)") << v2.dump();
  EXPECT_DOUBLE_EQ(v2["late_rank"]["late_share"].get<double>(), 1.0);
  EXPECT_EQ(v2["late_rank"]["line"]["line"], 72) << "the extra_work line rank 1 runs 6x";
  ASSERT_FALSE(v2["changes"].empty());
  EXPECT_EQ(v2["changes"][0]["change"], "balance-ranks");
  std::string text = v2["changes"][0]["text"];
  EXPECT_NE(text.find("for rank 1 (vm, GPU 1), last to arrive at 100%"), std::string::npos) << text;
  EXPECT_NE(text.find("train_ddp.py:72 runs"), std::string::npos) << text;
  EXPECT_EQ(text.find("every rank's report"), std::string::npos) << "both ranks are loaded already";
  EXPECT_EQ(text.find("bucket_cap_mb"), std::string::npos) << text;
  json ranks = json::parse(both.out)["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_GT(ranks[0]["comm_wait_ns"].get<double>(), 0.9 * ranks[0]["comm_ns"].get<double>());
  EXPECT_EQ(ranks[1]["comm_wait_ns"], 0);
  // Each rank's wait and transfer add up to its NCCL time.
  for (const auto& r : ranks)
    EXPECT_EQ(r["comm_wait_ns"].get<int64_t>() + r["comm_transfer_ns"].get<int64_t>(), r["comm_ns"].get<int64_t>());
}

// One rank's trace of a 2-rank DDP run, loaded alone without its steps file: the command that
// measures the step is the launcher's for the job's two ranks (its distributedInfo), not
// `python train_ddp.py`, which would start one process of a job that needs two.
TEST(StepVerdict, OneRankOfAJobIsToldTheLaunchersCommand) {
  ScratchDir dir("sightline_one_rank");
  std::filesystem::copy_file(testDataPath("capture/runs/ddp_torch.rank0.pt.trace.json.gz"),
                             dir / "ddp_torch.rank0.pt.trace.json.gz");
  auto run = runSightline("report --format json --profile '" + (dir / "ddp_torch.rank0.pt.trace.json.gz") +
                              "' tests/data/capture/train_ddp.py",
                          sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = json::parse(run.out);
  EXPECT_EQ(doc["ranks"].size(), 1u);
  json v = doc["verdict"];
  std::string measure = v["unprofiled"].value("measure", "");
  EXPECT_NE(measure.find("`sightline capture -- torchrun --nproc_per_node=2 train_ddp.py`"), std::string::npos)
      << measure;
}

// A public 2-GPU training capture (nsys-ai's mfu_2gpu_before) without a straggler: each rank
// arrives last in turn, so no rank is named late, and the rank table splits waiting from moving.
TEST(StepVerdict, RanksLateInTurnNameNoStraggler) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "nsysai_mfu_2gpu_before.sqlite.xz");
  auto run = runSightline("report --format json --profile '" + profile + "' tests/data/multi/ddp/train_ddp.py",
                          sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = json::parse(run.out);
  ASSERT_EQ(doc["ranks"].size(), 2u);
  for (const auto& r : doc["ranks"]) {
    EXPECT_GT(r["paired_collectives"].get<int>(), 10) << r.dump();
    EXPECT_LT(r["late_share"].get<double>(), 0.75) << r.dump();
    EXPECT_GT(r["late_share"].get<double>(), 0.25) << r.dump();
    // Collectives found on one rank only (the capture's window cut them) stay unsplit.
    int64_t split = r["comm_wait_ns"].get<int64_t>() + r["comm_transfer_ns"].get<int64_t>();
    EXPECT_LE(split, r["comm_ns"].get<int64_t>());
    EXPECT_GT(split, r["comm_ns"].get<int64_t>() * 8 / 10);
  }
  auto text = runSightline("report --profile '" + profile + "' tests/data/multi/ddp/train_ddp.py", sourcePath(""));
  EXPECT_NE(text.out.find("waiting  moving  last in"), std::string::npos) << text.out;
  // Its capture cut one rank's last step: the job's line gives the ranks' counts as they are
  // (one 15, one 16), not the larger as every rank's.
  std::set<int> steps;
  for (const auto& r : doc["job"]["ranks"]) steps.insert(r["steady_steps"].get<int>());
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(doc["job"]["min_steady_steps"].get<int>(), *steps.begin());
  EXPECT_EQ(doc["job"]["max_steady_steps"].get<int>(), *steps.rbegin());
  std::string counts =
      std::to_string(*steps.begin()) + "–" + std::to_string(*steps.rbegin()) + " steady steps per rank";
  EXPECT_NE(text.out.find(counts), std::string::npos) << text.out;
}

// train_small: kernels average 50 µs, yet the GPU runs dry between them in the capture: with a
// step log that says the run takes as long without the profiler, the verdict is the capture's
// and says the host is too slow between launches, not that fusing short kernels helps.
TEST(StepVerdict, HostPaceBetweenLongKernels) {
  std::string log = (std::filesystem::temp_directory_path() / "sightline_host_pace.log").string();
  {
    std::ofstream out(log);
    for (int i = 0; i < 20; ++i) out << "iter " << i << ": loss 2.3, time 13.3 ms\n";
  }
  auto run = runSightline("report --format json --step-log '" + log + "' --profile '" +
                              repoProfile("examples/train_small_naive.sqlite.xz") + "' examples/train_small.py",
                          sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  json v = json::parse(run.out)["verdict"];
  EXPECT_TRUE(v["calibrated"]) << v.dump();
  EXPECT_FALSE(v["estimate_applied"]) << v.dump();
  EXPECT_EQ(v["bound"], "launch-bound") << v.dump();
  ASSERT_FALSE(v["changes"].empty());
  EXPECT_EQ(v["changes"][0]["change"], "host-pace") << v.dump();
  EXPECT_NE(v["changes"][0]["text"].get<std::string>().find("runs dry between them"), std::string::npos);
  for (const auto& c : v["changes"]) EXPECT_NE(c["change"], "torch-compile");
}

// A model torch.compile already compiled (tests/data/multi/compile: Inductor's triton_* kernels)
// is never told to use torch.compile: launches still set its pace, so the advice is CUDA graphs.
// Syncs of other threads (compile workers) are not the loop's: no sync cause larger than a step.
TEST(StepVerdict, ACompiledModelGetsCudaGraphsNotCompile) {
  auto run =
      runSightline("report --format json --profile '" + repoProfile("tests/data/multi/compile/compile.sqlite.xz") +
                       "' tests/data/multi/compile/train_ddp.py",
                   sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  json doc = json::parse(run.out);
  json v = doc["verdict"];
  EXPECT_GT(doc["step_summary"]["triton_kernels"].get<int>(), 0);
  ASSERT_FALSE(v["causes"].empty());
  EXPECT_EQ(v["causes"][0]["cause"], "host launch overhead") << v.dump();
  bool graphs = false;
  for (const auto& c : v["changes"]) {
    EXPECT_NE(c["change"], "torch-compile") << c.dump();
    graphs = graphs || c["change"] == "cuda-graphs";
  }
  EXPECT_TRUE(graphs) << v.dump();
  for (const auto& c : v["causes"]) EXPECT_LE(c["ns_per_step"].get<double>(), v["wall_ns"].get<double>()) << c.dump();
  // The header says where the compiled kernels' time stands: the compiled forward's `def`.
  std::string text = runSightline("report --profile '" + repoProfile("tests/data/multi/compile/compile.sqlite.xz") +
                                      "' tests/data/multi/compile/train_ddp.py",
                                  sourcePath(""))
                         .out;
  std::string compiled = headerLine(text, "Compiled  ");
  EXPECT_NE(compiled.find("torch.compile kernels/step, on train_ddp.py:58"), std::string::npos) << text.substr(0, 1500);
  // The line's own finding says the same: graphs, never compile again; and its idle figures are
  // the capture's (not measured without the profiler).
  std::string check = runSightline("check --profile '" + repoProfile("tests/data/multi/compile/compile.sqlite.xz") +
                                       "' tests/data/multi/compile/train_ddp.py",
                                   sourcePath(""))
                          .out;
  auto at = check.find("train_ddp.py:58:5: warning: ");
  ASSERT_NE(at, std::string::npos) << check;
  std::string launch = check.substr(at, check.find('\n', at) - at);
  EXPECT_NE(launch.find("[launch-bound]"), std::string::npos) << launch;
  EXPECT_NE(launch.find("replay them as CUDA graphs"), std::string::npos) << launch;
  EXPECT_EQ(launch.find("fuse them with torch.compile"), std::string::npos) << launch;
  // Not measured: the pace is the capture's, said so (the verdict beside it "cannot tell").
  EXPECT_NE(launch.find("as captured, launch overhead, not the GPU, sets the pace"), std::string::npos) << launch;
  at = check.find("[gpu-idle]");
  ASSERT_NE(at, std::string::npos) << check;
  std::string idle = check.substr(check.rfind('\n', at) + 1, at - check.rfind('\n', at));
  EXPECT_NE(idle.find("ms/step as captured while the host runs this line"), std::string::npos) << idle;
}

}  // namespace
}  // namespace sightline::testing
