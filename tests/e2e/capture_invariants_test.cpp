// Issue 55's rules, on every capture we have: each one bundled (tests/data/captures.json, with
// its script, its steps file and its other ranks beside it, as its user has them) and every
// profile under ../shared/profiles. On each report:
//  - no bound or cause rests on lines whose records were lost (a cause names no line that lost
//    most of its launches; a report that lost most of its launches names a bound only measured);
//  - the bound compares the step with compute time: the busy share never counts the time NCCL
//    kernels spin waiting for other ranks (busy + that exposed wait fit in the step);
//  - no "Try" that the run already does: a run that replays CUDA graphs is told neither to
//    compile nor to graph, a compiled one not to compile;
//  - stragglers are judged on the measured steps where there are any: the straggler found in the
//    profiled steps is said to be as captured, beside what the timed steps show.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/lost_records.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Case {
  std::string name;
  std::vector<std::string> profiles;  // one, or every rank's trace
  std::string script;                 // "" where none is known (../shared)
};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A bundled capture as its user has it: decompressed with its steps file beside it, and for one
// trace per rank (NAME.rank0...), every rank's.
std::vector<Case> bundledCases() {
  std::vector<Case> out;
  std::set<std::string> seen;
  json doc = json::parse(readFile(testDataPath("captures.json")));
  static const std::regex rank(R"(\.rank([0-9]+)\.)");
  for (const auto& c : doc["captures"]) {
    std::string profile = c["profile"];
    std::smatch m;
    std::vector<std::string> profiles;
    if (std::regex_search(profile, m, rank)) {
      std::string prefix = m.prefix().str(), suffix = m.suffix().str();
      if (!seen.insert(prefix + suffix).second) continue;  // its ranks are one case
      for (int r = 0; r < 4096; ++r) {
        std::string sibling = prefix + ".rank" + std::to_string(r) + "." + suffix;
        if (!fs::exists(sourcePath(sibling))) break;
        profiles.push_back(sibling.ends_with(".xz") ? repoProfile(sibling) : sourcePath(sibling));
      }
    }
    if (profiles.empty()) profiles.push_back(profile.ends_with(".xz") ? repoProfile(profile) : sourcePath(profile));
    out.push_back({c["name"], profiles, sourcePath(c["script"])});
  }
  return out;
}

std::vector<Case> sharedCases() {
  std::vector<Case> out;
  for (const auto& list : {sharedNsysExports(), sharedKinetoTraces()})
    for (const auto& relative : list)
      if (auto path = sharedProfile(relative)) out.push_back({"shared/" + relative, {*path}, ""});
  return out;
}

// The line entries of the report, by (path, line).
std::map<std::pair<std::string, int64_t>, const json*> linesOf(const json& doc) {
  std::map<std::pair<std::string, int64_t>, const json*> out;
  for (const auto& f : doc["files"])
    for (const auto& l : f["lines"]) out[{f["path"].get<std::string>(), l["line"].get<int64_t>()}] = &l;
  return out;
}

double number(const json& j) { return j.is_number() ? j.get<double>() : 0.0; }

void expectNoCauseOnLostLines(const json& doc) {
  const json& v = doc["verdict"];
  auto lines = linesOf(doc);
  for (const auto& c : v["causes"])
    for (const auto& place : c["lines"]) {
      auto it = lines.find({place["path"].get<std::string>(), place["line"].get<int64_t>()});
      if (it == lines.end()) continue;
      double launches = number((*it->second)["launches"]), lost = number((*it->second)["lost_launches"]);
      EXPECT_LE(2 * lost, launches) << "a cause (" << c["cause"]
                                    << ") on a line that lost most of its records: " << it->second->dump();
    }
  // Steps that lost most of their launches name no bound the lost records would set: only a
  // measured step's, or none.
  const json& s = doc["step_summary"];
  if (!s.is_object()) return;
  double launches = number(s["launches"]), lost = number(s["lost_launches"]);
  if (launches > 0 && 2 * lost > launches) {
    EXPECT_TRUE(v["unprofiled_busy_share"].is_null()) << v.dump();
    for (const auto& c : v["causes"]) EXPECT_EQ(c["measured"], true) << c.dump();
  }
}

// The busy share is the GPU's own work: within the range of the steady steps' busy time less
// their communication spent waiting for other ranks (the step view's parts), never above it as
// when NCCL kernels spinning for a late rank counted as busy.
void expectBusyIsCompute(const json& doc) {
  const json& v = doc["verdict"];
  EXPECT_LE(number(v["busy_share"]), 1.0 + 1e-9) << v.dump();
  const json& u = v["unprofiled"];
  if (u["busy_share"].is_number()) {
    EXPECT_LE(u["busy_share"].get<double>(), 1.0 + 1e-9) << u.dump();
  }
  const json& view = doc["step_view"];
  if (!view.is_object() || !view["ranks"].is_array() || view["ranks"].size() != doc["ranks"].size()) return;
  double lo = 2, hi = -1;
  for (const auto& r : view["ranks"])
    for (const auto& st : r["steps"]) {
      double wall = number(st["wallNs"]);
      if (st["kind"] != "steady" || wall <= 0) continue;
      double own = number(st["computeNs"]) + number(st["copyNs"]) + number(st["commNs"]) - number(st["commWaitNs"]);
      lo = std::min(lo, own / wall), hi = std::max(hi, own / wall);
    }
  if (hi < 0) return;
  EXPECT_LE(number(v["busy_share"]), hi + 0.02)
      << "the busy share counts NCCL kernels waiting for other ranks: the steps' own work is " << lo << "-" << hi;
  EXPECT_GE(number(v["busy_share"]), lo - 0.02) << lo << "-" << hi;
}

// What the run already does is never advised: from its kernels (Triton's, graph launches).
void expectNoTryItAlreadyDoes(const json& doc, const std::string& header) {
  const json& s = doc["step_summary"];
  if (!s.is_object()) return;
  bool graphs = number(s["graph_launches"]) > 0;
  bool compiled = number(s["kernels"]) > 0 && number(s["triton_kernels"]) * 10 >= number(s["kernels"]);
  for (const auto& c : doc["verdict"]["changes"]) {
    std::string change = c["change"];
    if (graphs) {
      EXPECT_TRUE(change != "torch-compile" && change != "cuda-graphs") << c.dump();
    }
    if (compiled) {
      EXPECT_NE(change, "torch-compile") << c.dump();
    }
  }
  if (graphs) {
    EXPECT_EQ(header.find("reduce-overhead"), std::string::npos) << header;
  }
  if (graphs || compiled) {
    EXPECT_EQ(header.find("fuse kernels with torch.compile"), std::string::npos) << header;
  }
}

// With a measured step of several ranks, the profiled steps' straggler is the capture's.
void expectStragglerJudgedOnMeasuredSteps(const json& doc, const std::string& header) {
  const json& u = doc["verdict"]["unprofiled"];
  if (!doc.contains("job") || !doc["job"].is_object() || doc["job"]["straggler"].is_null()) return;
  if (u["source"] != "measured" || number(u["ranks"]) < 2) return;
  EXPECT_NE(header.find("Straggler as captured, "), std::string::npos) << header;
  EXPECT_NE(header.find("without the profiler each rank's timed step (median) is"), std::string::npos) << header;
}

struct Checked {
  size_t reports = 0, measured = 0, graphs = 0, compiled = 0, stragglers = 0, lost = 0;
};

void checkCase(const Case& c, Checked& seen) {
  SCOPED_TRACE(c.name);
  std::string args;
  for (const auto& p : c.profiles) args += " --profile " + quoted(p);
  if (!c.script.empty()) args += " " + quoted(c.script);
  auto js = runSightline("report --format json" + args, c.script.empty() ? "" : fs::path(c.script).parent_path());
  // ../shared holds files no report reads (a memory snapshot's pickle, an event tree): skipped.
  if (js.code != 0 && c.script.empty()) return;
  ASSERT_EQ(js.code, 0) << js.out.substr(0, 2000);
  json doc = json::parse(js.out, nullptr, false);
  ASSERT_TRUE(doc.is_object());
  if (!doc.contains("verdict") || !doc["verdict"].is_object()) return;  // a memory snapshot
  auto text = runSightline("report" + args, c.script.empty() ? "" : fs::path(c.script).parent_path());
  ASSERT_EQ(text.code, 0);
  std::string header = text.out.substr(0, text.out.find("\n\n"));
  ++seen.reports;
  seen.measured += doc["verdict"]["unprofiled"]["source"] == "measured";
  seen.graphs += doc["step_summary"].is_object() && number(doc["step_summary"]["graph_launches"]) > 0;
  seen.compiled += doc["step_summary"].is_object() && number(doc["step_summary"]["triton_kernels"]) > 0;
  seen.stragglers += doc.contains("job") && doc["job"].is_object() && !doc["job"]["straggler"].is_null();
  seen.lost += doc["step_summary"].is_object() && number(doc["step_summary"]["lost_launches"]) > 0;
  expectNoCauseOnLostLines(doc);
  expectBusyIsCompute(doc);
  expectNoTryItAlreadyDoes(doc, header);
  expectStragglerJudgedOnMeasuredSteps(doc, header);
}

TEST(CaptureInvariants, HoldOnEveryBundledCapture) {
  Checked seen;
  for (const auto& c : bundledCases()) checkCase(c, seen);
  // And the capture whose backward pass lost its records (none bundled loses them on its own).
  fs::path dir = fs::temp_directory_path() / ("sightline-invariants-" + std::to_string(::getpid()));
  std::string error, lost = craftLostBackwardCapture(dir.string(), error);
  ASSERT_FALSE(lost.empty()) << error;
  checkCase({"lost backward", {lost}, sourcePath("tests/data/capture/resnet.py")}, seen);
  fs::remove_all(dir);
  // The rules were tried, not skipped: the bundle has each kind they speak of.
  EXPECT_GE(seen.reports, 50u);
  EXPECT_GE(seen.measured, 10u);
  EXPECT_GE(seen.graphs, 1u);
  EXPECT_GE(seen.compiled, 2u);
  EXPECT_GE(seen.stragglers, 3u);
  EXPECT_GE(seen.lost, 1u);
}

TEST(CaptureInvariants, HoldOnEveryProfileInShared) {
  auto cases = sharedCases();
  if (cases.empty()) SIGHTLINE_SKIP_WITHOUT_SHARED("../shared/profiles");
  Checked seen;
  for (const auto& c : cases) checkCase(c, seen);
  EXPECT_GE(seen.reports, 25u);
}

}  // namespace
}  // namespace sightline::testing
