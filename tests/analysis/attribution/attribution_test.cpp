// Attribution on real captures: shares, forward/backward placement, steps, and a cross-check
// of every `stack` attribution against a direct decode of the marks with SQL.
#include "analysis/attribution/attribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "analysis/attribution/nvtx_sites.h"
#include "analysis/ingest/nsys_reader.h"
#include "analysis/ingest/sqlite.h"
#include "tests/support/test_paths.h"

namespace sightline::attribution {
namespace {

struct Loaded {
  model::Profile profile;
  Attribution attr;
};

Loaded load(const std::string& path) {
  auto r = ingest::loadNsysSqlite(path);
  EXPECT_TRUE(r.profile) << r.error;
  Loaded out{std::move(*r.profile), {}};
  out.attr = attribute(out.profile);
  return out;
}

const std::map<int32_t, LineCost>* linesOf(const Loaded& l, const std::string& file_suffix) {
  for (const auto& [file, lines] : l.attr.files) {
    const auto& name = l.profile.strings[file];
    if (name.size() >= file_suffix.size() &&
        name.compare(name.size() - file_suffix.size(), file_suffix.size(), file_suffix) == 0)
      return &lines;
  }
  return nullptr;
}

// nsys: the naive run (batches loaded in the training process) idles the GPU for milliseconds
// every step, the tuned one barely; every gap of the naive run finds a host line.
TEST(Attribution, IdleGapsNaiveAgainstTuned) {
  SIGHTLINE_REQUIRE_PROFILE(naive_path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  SIGHTLINE_REQUIRE_PROFILE(tuned_path, "h200-captures/nsys/train_small_tuned.sqlite.xz");
  auto naive = load(naive_path);
  auto tuned = load(tuned_path);
  auto idlePerStep = [](const Loaded& l) {
    int64_t sum = 0;
    for (const auto& g : l.attr.idle_gaps) {
      EXPECT_GE(g.end_ns - g.start_ns, 1'000'000);
      sum += g.end_ns - g.start_ns;
    }
    return static_cast<double>(sum) / std::max(1, l.attr.steps);
  };
  EXPECT_GT(idlePerStep(naive), 1e6) << "more than 1 ms per step";
  EXPECT_LT(idlePerStep(tuned), idlePerStep(naive) / 5);
  for (const auto& g : naive.attr.idle_gaps) EXPECT_NE(g.line.file, 0u);
  int64_t on_lines = 0;
  for (const auto& [file, lines] : naive.attr.files)
    for (const auto& [line, c] : lines) on_lines += c.idle_ns;
  int64_t in_gaps = 0;
  for (const auto& g : naive.attr.idle_gaps) in_gaps += g.end_ns - g.start_ns;
  EXPECT_EQ(on_lines, in_gaps);
}

TEST(Attribution, TrainSmallNaive) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto l = load(path);
  const auto& a = l.attr;
  EXPECT_EQ(a.total_gpu_ns, l.profile.totalGpuNs());
  EXPECT_EQ(a.attributed_gpu_ns + a.unattributed_gpu_ns, a.steady_gpu_ns);
  EXPECT_GE(static_cast<double>(a.attributed_gpu_ns), 0.99 * static_cast<double>(a.steady_gpu_ns));
  EXPECT_EQ(a.steps, 6) << "capture window of steps 4..10";
  const auto* lines = linesOf(l, "/train_small.py");
  ASSERT_NE(lines, nullptr);
  // Line 33, `return F.relu(self.bn(self.conv(x)))`, carries forward and backward time.
  const auto& hot = lines->at(33);
  EXPECT_GT(hot.forward_ns, 0);
  EXPECT_GT(hot.backward_ns, hot.forward_ns);
  EXPECT_GT(hot.gpu_ns, a.steady_gpu_ns / 2);
  // The backward kernels of conv/bn/relu land on line 33, not on `loss.backward()` (line 53).
  int64_t conv_bn_relu_backward = 0, elsewhere = 0;
  for (size_t i = 0; i < l.profile.activities.size(); ++i) {
    const auto& ref = a.activity_lines[i];
    if (!ref.backward) continue;
    std::string name = l.profile.strings[l.profile.activities[i].name];
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    bool ours = name.find("conv") != std::string::npos || name.find("dgrad") != std::string::npos ||
                name.find("wgrad") != std::string::npos || name.find("bn_") != std::string::npos ||
                name.find("batch_norm") != std::string::npos || name.find("relu") != std::string::npos ||
                name.find("threshold") != std::string::npos;
    if (!ours) continue;
    (ref.line == 33 ? conv_bn_relu_backward : elsewhere) += l.profile.activities[i].duration();
  }
  EXPECT_GT(conv_bn_relu_backward, 0);
  EXPECT_EQ(elsewhere, 0);
  auto backward_line = lines->find(53);
  if (backward_line != lines->end()) {
    EXPECT_EQ(backward_line->second.backward_ns, 0);
  }
  // The per-step copies and the .item() sync.
  EXPECT_GT(lines->at(102).memcpy_bytes, 0u);
  EXPECT_EQ(lines->at(102).pageable_bytes, lines->at(102).memcpy_bytes) << "naive: pageable host memory";
  EXPECT_GT(lines->at(109).sync_ns, 0);
  EXPECT_GT(a.by_method[static_cast<size_t>(Method::Stack)], 0);
  EXPECT_GT(a.by_method[static_cast<size_t>(Method::Op)], 0);
  EXPECT_GT(a.by_method[static_cast<size_t>(Method::Backward)], 0);
}

TEST(Attribution, TunedCopiesArePinned) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_tuned.sqlite.xz");
  auto l = load(path);
  const auto* lines = linesOf(l, "/train_small.py");
  ASSERT_NE(lines, nullptr);
  uint64_t bytes = 0, pageable = 0;
  for (const auto& [line, c] : *lines) bytes += c.memcpy_bytes, pageable += c.pageable_bytes;
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(pageable, 0u);
}

TEST(Attribution, TrainGptWithSampling) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_gpt_sampling.sqlite.xz");
  auto l = load(path);
  const auto& a = l.attr;
  EXPECT_GE(static_cast<double>(a.attributed_gpu_ns), 0.95 * static_cast<double>(a.steady_gpu_ns));
  const auto* lines = linesOf(l, "/train_gpt.py");
  ASSERT_NE(lines, nullptr);
  // The MLP line (`return self.out(F.gelu(self.fc(x)))`) is the hottest, forward and backward.
  auto hottest = std::max_element(lines->begin(), lines->end(),
                                  [](const auto& x, const auto& y) { return x.second.gpu_ns < y.second.gpu_ns; });
  EXPECT_EQ(hottest->first, 36);
  EXPECT_GT(hottest->second.backward_ns, 0);
  EXPECT_GT(lines->at(107).sync_ns, 0) << "loss.item() in the print";
}

TEST(Attribution, ProfilesWithoutBacktracesAttributeNothingAndSayAllIsUnattributed) {
  for (const char* rel : {"h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz",
                          "h200-captures/nsys/train_small_naive_noblobs.sqlite.xz", "nsysai_mfu_2gpu_before.sqlite.xz",
                          "cs336_zx3xyy_result_2_7B_compile_ro.sqlite.xz", "dlprof_nsys_2022_1.sqlite.xz"}) {
    auto path = testing::sharedProfile(rel);
    if (!path) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles");
    auto l = load(*path);
    EXPECT_EQ(l.attr.attributed_gpu_ns, 0) << rel;
    EXPECT_EQ(l.attr.unattributed_gpu_ns, l.attr.steady_gpu_ns) << rel;
  }
}

// Independent decode: the outer runtime row's start and thread, the mark there, frames by the
// byte layout measured in shared/reference/nsys-python-backtraces.md.
TEST(Attribution, StackAttributionsMatchADirectDecodeOfTheMarks) {
  SIGHTLINE_REQUIRE_PROFILE(path, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto l = load(path);
  std::string error;
  auto db = ingest::Database::openReadOnly(path, error);
  ASSERT_TRUE(db) << error;
  auto call = db->prepare(
      "SELECT MIN(start), globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ?1 AND "
      "((globalTid >> 24) & 16777215) = ?2",
      error);
  ASSERT_TRUE(call) << error;
  size_t checked = 0;
  for (size_t i = 0; i < l.profile.activities.size(); ++i) {
    const auto& ref = l.attr.activity_lines[i];
    if (ref.file == 0 || ref.method != Method::Stack) continue;
    const auto& act = l.profile.activities[i];
    std::string sql = "SELECT MIN(start), globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = " +
                      std::to_string(act.correlation) +
                      " AND ((globalTid >> 24) & 16777215) = " + std::to_string(act.pid);
    auto q = db->prepare(sql, error);
    ASSERT_TRUE(q && q->step() == ingest::Statement::Step::Row);
    int64_t start = q->int64(0), tid = q->int64(1);
    auto mark =
        db->prepare("SELECT binaryData FROM NVTX_EVENTS WHERE eventType = 34 AND start = " + std::to_string(start) +
                        " AND globalTid = " + std::to_string(tid),
                    error);
    ASSERT_TRUE(mark && mark->step() == ingest::Statement::Step::Row) << "no mark at the call's start";
    std::string blob(mark->blob(0));
    ASSERT_GE(blob.size(), 48u);
    uint64_t payload_offset;
    std::memcpy(&payload_offset, blob.data() + 24, 8);
    uint32_t count;
    std::memcpy(&count, blob.data() + payload_offset + 12, 4);
    int32_t expected_line = -1;
    std::string expected_file;
    for (uint32_t f = 0; f < count && expected_line < 0; ++f) {
      uint64_t file_id;
      int32_t line;
      std::memcpy(&file_id, blob.data() + payload_offset + 16 + 24 * f + 8, 8);
      std::memcpy(&line, blob.data() + payload_offset + 16 + 24 * f + 16, 4);
      auto name = db->prepare("SELECT value FROM StringIds WHERE id = " + std::to_string(file_id), error);
      ASSERT_TRUE(name && name->step() == ingest::Statement::Step::Row);
      std::string file(name->text(0));
      if (file.find("site-packages") == std::string::npos && file.find("/lib/python") == std::string::npos)
        expected_file = file, expected_line = line;
    }
    EXPECT_EQ(l.profile.strings[ref.file], expected_file);
    EXPECT_EQ(ref.line, expected_line);
    ++checked;
  }
  EXPECT_GT(checked, 50u);
}

// Our capture of train_small.py annotated by the "Annotate training step" action: the NVTX
// range sites of the script, charged to its local path.
struct NvtxCapture {
  model::Profile profile;
  std::string script = testing::testDataPath("h100-nvtx/train_small.py");
  Options options;
};

NvtxCapture loadNvtxCapture(const std::string& name) {
  auto r = ingest::loadNsysSqlite(testing::dataProfile("h100-nvtx/" + name));
  EXPECT_TRUE(r.profile) << r.error;
  NvtxCapture c{std::move(*r.profile)};
  source::SourceFile file(testing::readFile(c.script));
  auto index = source::buildSourceIndex(file);
  c.options.nvtx_sites = findNvtxSites(file, index, c.profile.strings.intern(c.script));
  return c;
}

TEST(Attribution, UserNvtxRangesAloneChargeTheLinesThatOpenThem) {
  auto c = loadNvtxCapture("train_small_nvtx_only.sqlite.xz");
  ASSERT_EQ(c.options.nvtx_sites.size(), 4u);
  EXPECT_EQ(attribute(c.profile).attributed_gpu_ns, 0) << "no backtraces: nothing without the sites";
  auto a = attribute(c.profile, c.options);
  EXPECT_GE(static_cast<double>(a.attributed_gpu_ns), 0.95 * static_cast<double>(a.steady_gpu_ns));
  EXPECT_EQ(a.by_method[static_cast<size_t>(Method::Nvtx)], a.attributed_gpu_ns);
  EXPECT_EQ(a.steps, 6);
  EXPECT_NE(a.steps_source.find("NVTX range"), std::string::npos) << a.steps_source;
  const auto& lines = a.files.at(c.profile.strings.intern(c.script));
  // Line 51 opens "forward", 55 "backward": the backward kernels run on the autograd thread,
  // outside the main thread's range, and still land on line 55.
  EXPECT_GT(lines.at(51).gpu_ns, a.steady_gpu_ns / 5);
  EXPECT_GT(lines.at(55).gpu_ns, a.steady_gpu_ns / 2);
  for (const auto& [line, cost] : lines) EXPECT_TRUE(line == 51 || line == 53 || line == 55 || line == 57) << line;
}

TEST(Attribution, NvtxLinesAgreeWithThePythonFrames) {
  auto c = loadNvtxCapture("train_small_nvtx_backtrace.sqlite.xz");
  const auto& p = c.profile;
  auto full = attribute(p, c.options);
  EXPECT_GE(static_cast<double>(full.attributed_gpu_ns), 0.99 * static_cast<double>(full.steady_gpu_ns));
  EXPECT_EQ(full.steps, 6);
  c.options.methods = 1u << static_cast<unsigned>(Method::Nvtx);
  auto nvtx = attribute(p, c.options);
  // Where the launching call has a backtrace, its train_step() frame is the line inside the
  // `with` block that the nvtx method charged (the line after it).
  size_t checked = 0;
  for (size_t i = 0; i < p.activities.size(); ++i) {
    const auto& ref = nvtx.activity_lines[i];
    if (ref.file == 0) continue;
    const auto& act = p.activities[i];
    auto call = std::find_if(p.api_calls.begin(), p.api_calls.end(),
                             [&](const auto& k) { return k.pid == act.pid && k.correlation == act.correlation; });
    ASSERT_NE(call, p.api_calls.end());
    for (const auto& m : p.marks) {
      if (m.pid != call->pid || m.tid != call->tid || m.time_ns < call->start_ns || m.time_ns > call->end_ns) continue;
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& frame = p.frames[m.first_frame + f];
        if (p.strings[frame.function] != "train_step") continue;
        EXPECT_EQ(frame.line, ref.line + 1) << p.strings[act.name];
        ++checked;
      }
      break;
    }
  }
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace sightline::attribution
