// End-to-end: the server with a real profile. A workspace holding our H200 capture of
// train_small.py and the script itself; the client sees progress, the status notification,
// inlay hints, hovers, the summary command, and a reload when the profile file changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>

#include "server/lsp/uri.h"
#include "tests/e2e/profile_session_support.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using namespace session;

TEST(ProfileSession, HintsHoverStatusAndProgressFromTheProfileSetting) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto w = makeWorkspace("hints", naive);
  auto client = LspClient::spawnStdio();
  auto s = startOnRuns(*client, w);
  ASSERT_TRUE(s) << client->stderrText();
  const json& st = *s;
  EXPECT_EQ(st["loaded"], true) << st.dump();
  EXPECT_EQ(st["format"], "nsys-sqlite");
  EXPECT_EQ(st["steps"], 6);
  EXPECT_GT(st["attributedShare"].get<double>(), 0.99);
  // Progress: begin, reports with rows read and rising percentages, end, on one token.
  bool begin = false, end = false;
  std::vector<int> percents;
  std::string reports;
  for (const auto& m : client->seen()) {
    if (m.value("method", "") != "$/progress") continue;
    const json& v = m["params"]["value"];
    begin = begin || v["kind"] == "begin";
    end = end || v["kind"] == "end";
    if (v["kind"] == "report") {
      percents.push_back(v.value("percentage", -1));
      reports += v.value("message", "") + "\n";
    }
  }
  EXPECT_TRUE(begin && end);
  EXPECT_GE(percents.size(), 3u) << reports;
  EXPECT_TRUE(std::is_sorted(percents.begin(), percents.end())) << reports;
  EXPECT_NE(reports.find("630 GPU activities, 1677 CUDA API calls read"), std::string::npos) << reports;
  EXPECT_NE(reports.find("NVTX ranges"), std::string::npos) << reports;

  // Diagnostics republished with the profile: the `.item()` line cites its measured sync, the
  // `.to(device)` copies from pageable memory get the profile-only rule.
  auto published = client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "textDocument/publishDiagnostics" &&
               m["params"]["diagnostics"].dump().find("pageable-memcpy") != std::string::npos;
      },
      10s);
  ASSERT_TRUE(published);
  bool measured_item = false;
  std::vector<int> pageable_lines;
  for (const auto& d : (*published)["params"]["diagnostics"]) {
    if (d["code"] == "sync-in-loop" && d["range"]["start"]["line"] == 108)
      measured_item = d["message"].get<std::string>().find("measured: blocks the host") != std::string::npos &&
                      d["message"].get<std::string>().find("cudaStreamSynchronize") != std::string::npos;
    if (d["code"] == "pageable-memcpy") pageable_lines.push_back(d["range"]["start"]["line"]);
  }
  EXPECT_TRUE(measured_item) << (*published).dump();
  EXPECT_EQ((*published)["params"]["diagnostics"].dump().find("profile-source-mismatch"), std::string::npos);
  EXPECT_EQ((*published)["params"]["diagnostics"].dump().find("sync-memcpy"), std::string::npos)
      << "PyTorch copies with cudaMemcpyAsync";
  EXPECT_EQ(pageable_lines, (std::vector<int>{101})) << "x.to(device): 3 MiB/step; y (3 KiB) is below the cut-off";

  json hints = hintsOf(*client, w.script_uri);
  const json* hot = hintOnLine(hints, 32);  // line 33: return F.relu(self.bn(self.conv(x)))
  ASSERT_NE(hot, nullptr) << hints.dump();
  std::string label = (*hot)["label"];
  EXPECT_NE(label.find(" ms"), std::string::npos) << label;
  EXPECT_NE(label.find("fwd "), std::string::npos) << label;
  EXPECT_NE(label.find("bwd "), std::string::npos) << label;
  EXPECT_EQ((*hot)["position"]["character"], 44) << "end of the line";
  const json* def = hintOnLine(hints, 31);  // def forward(self, x): rolls up its body
  ASSERT_NE(def, nullptr);
  EXPECT_EQ((*def)["label"].get<std::string>().rfind("Σ ", 0), 0u);

  auto hover = hoverText(*client, w.script_uri, 32, 20);
  ASSERT_TRUE(hover);
  std::string card = *hover;
  EXPECT_NE(card.find("ms/step"), std::string::npos) << card;
  EXPECT_NE(card.find("| GPU work | count | ms |"), std::string::npos) << card;
  EXPECT_NE(card.find("backward"), std::string::npos) << card;
  EXPECT_NE(card.find("aten::"), std::string::npos) << "autograd ops: " << card;

  // On the `.item()` diagnostic: why it costs and the fix, with the measured message; the
  // line's own cost card follows.
  auto item_line = w.script_text.substr(0, w.script_text.find("loss.item()"));
  int item_column = static_cast<int>(item_line.size() - item_line.rfind('\n') - 1);
  auto why = hoverText(*client, w.script_uri, 108, item_column + 2);
  ASSERT_TRUE(why);
  std::string why_card = *why;
  EXPECT_NE(why_card.find("**`sync-in-loop`**"), std::string::npos) << why_card;
  EXPECT_NE(why_card.find("measured: blocks the host"), std::string::npos) << why_card;
  EXPECT_NE(why_card.find("**Why it costs:**"), std::string::npos) << why_card;
  EXPECT_NE(why_card.find("**Fix:**"), std::string::npos) << why_card;

  // The NVTX-range action on the hot line is named after its top autograd op (one the hover
  // lists), not after the first callee (`F.relu`).
  auto actions_id = client->request(
      "textDocument/codeAction",
      {{"textDocument", {{"uri", w.script_uri}}},
       {"range", {{"start", {{"line", 32}, {"character", 10}}}, {"end", {{"line", 32}, {"character", 10}}}}},
       {"context", {{"diagnostics", json::array()}}}});
  auto actions = client->waitForResponse(actions_id);
  ASSERT_TRUE(actions);
  std::string wrap_title;
  for (const auto& a : (*actions)["result"])
    if (a["title"].get<std::string>().rfind("Wrap in NVTX range", 0) == 0) wrap_title = a["title"];
  ASSERT_FALSE(wrap_title.empty()) << (*actions).dump();
  std::string op = wrap_title.substr(std::string("Wrap in NVTX range \"").size());
  op.pop_back();
  EXPECT_NE(op, "F.relu");
  EXPECT_NE(card.find("`aten::" + op + "`"), std::string::npos) << wrap_title << "\n" << card;

  auto summary_id = client->request("workspace/executeCommand", {{"command", "sightline.showProfileSummary"}});
  auto summary = client->waitForResponse(summary_id);
  ASSERT_TRUE(summary);
  EXPECT_NE((*summary)["result"].get<std::string>().find("## Hottest lines"), std::string::npos);

  // Two lines typed at the top: the costs move down with their lines; the diagnostics that cite
  // measured time follow too. Then the hot line itself is edited: it keeps its cost, stale.
  client->notify("textDocument/didChange", insertion(w.script_uri, 2, 0, 0, "# one\n# two\n"));
  json shifted = hintsOf(*client, w.script_uri);
  ASSERT_NE(hintOnLine(shifted, 34), nullptr) << shifted.dump();
  EXPECT_EQ((*hintOnLine(shifted, 34))["label"], label);
  EXPECT_EQ(hintOnLine(shifted, 32), nullptr) << "nothing left behind on the old line";
  auto republished = client->waitFor(
      [](const json& m) {
        if (m.value("method", "") != "textDocument/publishDiagnostics") return false;
        for (const auto& d : m["params"]["diagnostics"])
          if (d["code"] == "sync-in-loop" && d["range"]["start"]["line"] == 110 &&
              d["message"].get<std::string>().find("measured") != std::string::npos)
            return true;
        return false;
      },
      10s);
  EXPECT_TRUE(republished) << "the measured .item() sync follows its line to 111";
  client->notify("textDocument/didChange", insertion(w.script_uri, 3, 34, 8, "h = "));
  auto stale = hoverText(*client, w.script_uri, 34, 20);
  ASSERT_TRUE(stale);
  std::string stale_card = *stale;
  EXPECT_NE(stale_card.find("Edited since it was profiled"), std::string::npos) << stale_card;
  EXPECT_NE(stale_card.find("ms/step"), std::string::npos) << stale_card;
  // Its hint says so too; the lines not edited do not.
  json edited = hintsOf(*client, w.script_uri);
  ASSERT_NE(hintOnLine(edited, 34), nullptr) << edited.dump();
  EXPECT_NE((*hintOnLine(edited, 34))["label"].get<std::string>().find("edited since profiled"), std::string::npos)
      << edited.dump();
  for (const auto& h : edited) {
    if (h["position"]["line"] == 34) continue;
    EXPECT_EQ(h["label"].get<std::string>().find("edited since"), std::string::npos) << h.dump();
  }

  auto nsys_id = client->request("workspace/executeCommand",
                                 {{"command", "sightline.profileWithNsys"}, {"arguments", {w.script_uri}}});
  auto nsys = client->waitForResponse(nsys_id);
  ASSERT_TRUE(nsys);
  const json& run = (*nsys)["result"];
  EXPECT_EQ(run["cwd"], w.root.string());
  ASSERT_EQ(run["commands"].size(), 2u) << run.dump();
  EXPECT_NE(run["commands"][0].get<std::string>().find("--capture-range=cudaProfilerApi"), std::string::npos);
  EXPECT_NE(run["commands"][1].get<std::string>().find("--include-blobs=true"), std::string::npos);

  auto toggle_id = client->request("workspace/executeCommand", {{"command", "sightline.toggleHints"}});
  auto toggled = client->waitForResponse(toggle_id);
  ASSERT_TRUE(toggled);
  EXPECT_EQ((*toggled)["result"], false);
  EXPECT_TRUE(hintsOf(*client, w.script_uri).empty());
  fs::remove_all(w.root);
}

// One report per rank, matched by the profiles setting's glob, loads as one 2-rank profile: the
// status says so, and the straggler line's hover shows each rank's time and the slowest.
TEST(ProfileSession, ReportsOfEachRankLoadAsOneProfile) {
  Workspace w;
  w.root = fs::temp_directory_path() / ("sightline-ws-ranks-" + std::to_string(::getpid()));
  fs::remove_all(w.root);
  fs::create_directories(w.root / "runs");
  w.script_text = readFile(sourcePath("tests/data/multi/ddp/train_ddp.py"));
  fs::copy_file(sourcePath("tests/data/multi/ddp/train_ddp.py"), w.root / "train_ddp.py");
  for (const char* r : {"0", "1"})
    fs::copy_file(repoProfile(std::string("tests/data/multi/ddp/ddp_rank") + r + ".sqlite.xz"),
                  w.root / "runs" / (std::string("ddp_rank") + r + ".sqlite"));
  w.script_uri = server::pathToUri((w.root / "train_ddp.py").string());
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/ddp_rank*.sqlite"}}});
  auto s = status(*client);
  ASSERT_TRUE(s) << client->stderrText();
  const json& st = (*s)["params"];
  EXPECT_EQ(st["loaded"], true) << st.dump();
  EXPECT_NE(st["warnings"].dump().find("2 ranks (2 reports)"), std::string::npos) << st.dump();
  auto hover = hoverText(*client, w.script_uri, 71, 14);  // `a = torch.tanh(a @ a)` in extra_work
  ASSERT_TRUE(hover);
  EXPECT_NE(hover->find("slowest **rank 1 (vm, GPU 1)**"), std::string::npos) << *hover;
  // The status bar names the job's ranks and its straggler.
  EXPECT_EQ(st.value("job", ""), "2 ranks · straggler rank 1 (vm, GPU 1)") << st.dump();
  fs::remove_all(w.root);
}

// What a user reads on a call line, byte for byte (tests/data/golden/verdict_fp32_call_lines.md;
// SIGHTLINE_UPDATE_GOLDEN=1 rewrites it): `out = model(x)` launches nothing itself, so its hint
// shows the inclusive time with self 0, its hover lists the lines beneath it with links; the
// loop and `def` show Σ, and `loss.backward()` what it ran.
TEST(ProfileSession, CallLineHintsAndHoverMatchGolden) {
  Workspace w;
  w.root = fs::temp_directory_path() / ("sightline-ws-golden-" + std::to_string(::getpid()));
  fs::remove_all(w.root);
  fs::create_directories(w.root / "runs");
  w.script_text = readFile(sourcePath("tests/data/verdict/verdict.py"));
  fs::copy_file(sourcePath("tests/data/verdict/verdict.py"), w.root / "verdict.py");
  fs::copy_file(repoProfile("tests/data/verdict/fp32.sqlite.xz"), w.root / "runs" / "fp32.sqlite");
  w.script_uri = server::pathToUri((w.root / "verdict.py").string());
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/*.sqlite"}}});
  auto s = status(*client);
  ASSERT_TRUE(s) << client->stderrText();
  ASSERT_EQ((*s)["params"]["loaded"], true) << s->dump();
  json hints = hintsOf(*client, w.script_uri);
  std::string got = "status: " + (*s)["params"].value("verdict", "") + "\n";
  for (int line : {33, 34, 64, 73, 82}) {  // 1-based: def forward, its body, the loop, the call, backward
    const json* h = hintOnLine(hints, line - 1);
    got += "\n## line " + std::to_string(line) + ": " + (h ? (*h)["label"].get<std::string>() : "(no hint)") + "\n";
    if (line == 64) continue;
    auto hover = hoverText(*client, w.script_uri, line - 1, 12);
    ASSERT_TRUE(hover);
    got += "\n" + *hover + "\n";
  }
  // The workspace's path (in links) differs per run.
  std::string root = server::pathToUri(w.root.string());
  for (size_t at = got.find(root); at != std::string::npos; at = got.find(root, at))
    got.replace(at, root.size(), "<ws>");
  std::string golden = testDataPath("golden/verdict_fp32_call_lines.md");
  const char* update = std::getenv("SIGHTLINE_UPDATE_GOLDEN");
  fs::remove_all(w.root);
  if (update && *update == '1') {
    std::ofstream(golden, std::ios::binary) << got;
    GTEST_SKIP() << "rewrote " << golden;
  }
  EXPECT_EQ(got, readFile(golden)) << "hint or hover text changed; if intended, rerun with SIGHTLINE_UPDATE_GOLDEN=1";
  EXPECT_NE(got.find("self 0"), std::string::npos);
  EXPECT_NE(got.find("<ws>/verdict.py#L34"), std::string::npos) << "a link to the forward line beneath the call";
}

// The script on disk is not the one profiled (three imports added above): one warning at the
// top says so; the same file as profiled gets none (checked in the test above via its
// diagnostics having no such code).
TEST(ProfileSession, WarnsOnceWhenTheFileIsNotTheProfiledSource) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto w = makeWorkspace("mismatch", naive);
  w.script_text = "import os\nimport sys\nimport math\n" + w.script_text;
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/*.sqlite"}}});
  ASSERT_TRUE(status(*client)) << client->stderrText();
  auto published = client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "textDocument/publishDiagnostics" &&
               m["params"]["diagnostics"].dump().find("profile-source-mismatch") != std::string::npos;
      },
      10s);
  ASSERT_TRUE(published) << client->stderrText();
  int count = 0;
  for (const auto& d : (*published)["params"]["diagnostics"]) {
    if (d["code"] != "profile-source-mismatch") continue;
    ++count;
    EXPECT_EQ(d["range"]["start"]["line"], 0);
    // Three lines were added above the code: the profile's lines follow it, and it says so.
    EXPECT_EQ(d["severity"], 3);
    EXPECT_NE(d["message"].get<std::string>().find("its code moved down 3 lines"), std::string::npos) << d.dump();
  }
  EXPECT_EQ(count, 1);
  fs::remove_all(w.root);
}

// The same file with a function rewritten in place (its lines no longer where the profile saw
// them, the rest unmoved): no shift explains it, so it stays a warning.
TEST(ProfileSession, WarnsWhenNoShiftExplainsTheEdit) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto w = makeWorkspace("mismatch_rewritten", naive);
  // Every `def forward` renamed: the profile's frames of `forward` fit no def of that name.
  for (size_t at = w.script_text.find("def forward("); at != std::string::npos;
       at = w.script_text.find("def forward(", at + 1))
    w.script_text.replace(at, 12, "def compute(");
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/*.sqlite"}}});
  ASSERT_TRUE(status(*client)) << client->stderrText();
  auto published = client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "textDocument/publishDiagnostics" &&
               m["params"]["diagnostics"].dump().find("profile-source-mismatch") != std::string::npos;
      },
      10s);
  ASSERT_TRUE(published) << client->stderrText();
  for (const auto& d : (*published)["params"]["diagnostics"]) {
    if (d["code"] != "profile-source-mismatch") continue;
    EXPECT_EQ(d["severity"], 2);
    EXPECT_NE(d["message"].get<std::string>().find("differs from the source the profile measured"), std::string::npos);
  }
  fs::remove_all(w.root);
}

// A capture without Python backtraces: nothing lands on lines, and the status says what the
// next capture must add (and not what this one already used).
TEST(ProfileSession, StatusSaysWhatACaptureWithoutBacktracesLacks) {
  SIGHTLINE_REQUIRE_PROFILE(plain, "h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz");
  auto w = makeWorkspace("nobacktrace", plain);
  auto client = LspClient::spawnStdio();
  auto s = startOnRuns(*client, w);
  ASSERT_TRUE(s && (*s)["loaded"] == true) << client->stderrText();
  EXPECT_EQ((*s)["attributedShare"], 0.0) << s->dump();
  std::string warnings = (*s)["warnings"].dump();
  EXPECT_NE(warnings.find("No GPU time could be put on source lines"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("--python-backtrace=cuda"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("--pytorch=autograd-nvtx"), std::string::npos) << warnings;
  fs::remove_all(w.root);
}

// compareWith: the tuned capture loaded, the naive one compared. Hints carry the change per
// step; the naive copy line whose cost is gone gets a hint of its own; the hover says both.
TEST(ProfileSession, CompareWithShowsPerLineChanges) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  SIGHTLINE_REQUIRE_PROFILE(tuned, "h200-captures/nsys/train_small_tuned.sqlite.xz");
  auto w = makeWorkspace("compare", naive);
  fs::copy_file(tuned, w.root / "runs" / "tuned.sqlite");
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/tuned.sqlite"}}, {"compareWith", "runs/naive.sqlite"}});
  auto s = compareStatus(*client);
  ASSERT_TRUE(s) << client->stderrText() << [&] {
    std::string all;
    for (const auto& m : client->seen()) all += m.dump().substr(0, 300) + "\n";
    return all;
  }();
  EXPECT_NE((*s)["params"]["file"].get<std::string>().find("tuned.sqlite"), std::string::npos);
  EXPECT_NE((*s)["params"]["compareWith"].get<std::string>().find("naive.sqlite"), std::string::npos);
  json hints = hintsOf(*client, w.script_uri);
  const json* copy = hintOnLine(hints, 104);  // x = x.to(device, non_blocking=True): new in tuned
  ASSERT_NE(copy, nullptr) << hints.dump();
  EXPECT_NE((*copy)["label"].get<std::string>().find("▲ +"), std::string::npos) << (*copy)["label"];
  const json* gone = hintOnLine(hints, 101);  // x = x.to(device): naive only
  ASSERT_NE(gone, nullptr) << hints.dump();
  EXPECT_NE((*gone)["label"].get<std::string>().find("▼ −"), std::string::npos) << (*gone)["label"];
  EXPECT_NE((*gone)["label"].get<std::string>().find("(gone)"), std::string::npos) << (*gone)["label"];
  auto hover = hoverText(*client, w.script_uri, 104, 20);
  ASSERT_TRUE(hover);
  std::string card = *hover;
  // The same version of the script: the regression gate's change, with its interval.
  EXPECT_NE(card.find("**Since the baseline** `naive.sqlite`: "), std::string::npos) << card;
  EXPECT_NE(card.find("ms/step, ▲ +"), std::string::npos) << card;
  EXPECT_NE(card.find(", 95% interval +"), std::string::npos) << card;
  EXPECT_TRUE((*copy)["data"].contains("regression")) << copy->dump();
  fs::remove_all(w.root);
}

// The compare profile measured an earlier version of the script (the workspace holds the edited
// one and its own capture): hints and hovers compare lines matched by the work they ran.
TEST(ProfileSession, CompareWithAnEarlierVersionMatchesLinesByTheirWork) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto w = makeWorkspace("compare-versions", naive);
  fs::remove(w.root / "train_small.py");
  fs::copy_file(testDataPath("h200/nsys-edited/train_small.py"), w.root / "train_small.py");
  w.script_text = readFile(testDataPath("h200/nsys-edited/train_small.py"));
  fs::copy_file(dataProfile("h200/nsys-edited/train_small_tuned_edited.sqlite.xz"), w.root / "runs" / "edited.sqlite");
  auto client = LspClient::spawnStdio();
  start(*client, w, {{"profiles", {"runs/edited.sqlite"}}, {"compareWith", "runs/naive.sqlite"}});
  auto s = compareStatus(*client);
  ASSERT_TRUE(s) << client->stderrText();
  json hints = hintsOf(*client, w.script_uri);
  const json* copy = hintOnLine(hints, 104);  // x = x.to(device, non_blocking=True), was line 102
  ASSERT_NE(copy, nullptr) << hints.dump();
  EXPECT_NE((*copy)["label"].get<std::string>().find("▼ −"), std::string::npos) << (*copy)["label"];
  const json* hot = hintOnLine(hints, 34);  // the forward line, was 33: about the same time
  ASSERT_NE(hot, nullptr) << hints.dump();
  EXPECT_EQ((*hot)["label"].get<std::string>().find("(gone)"), std::string::npos) << (*hot)["label"];
  for (const auto& h : hints)  // nothing lands on the lines the old numbers would give
    EXPECT_EQ(h["label"].get<std::string>().find("(gone)"), std::string::npos) << h.dump();
  auto hover = hoverText(*client, w.script_uri, 34, 20);
  ASSERT_TRUE(hover);
  EXPECT_NE(hover->find("**Compared with** `naive.sqlite`: "), std::string::npos) << *hover;
  EXPECT_NE(hover->find("the script changed in between: 9 of 10 profiled lines matched"), std::string::npos) << *hover;
  fs::remove_all(w.root);
}

// A PyTorch profiler trace, discovered in the workspace: frames are named by callee, so the
// server maps them onto the workspace's script and aligns call sites (method "aligned").
TEST(ProfileSession, KinetoTraceGivesHintsOnCallLines) {
  fs::path root = fs::temp_directory_path() / ("sightline-ws-kineto-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "traces");
  fs::copy_file(testDataPath("h200/kineto/train_small.py"), root / "train_small.py");
  fs::copy_file(testDataPath("h200/kineto/train_small_naive.pt.trace.json.gz"),
                root / "traces" / "worker0.pt.trace.json.gz");
  Workspace w = workspaceAt(root, "train_small.py");
  auto client = LspClient::spawnStdio();
  auto s = started(*client, w, json::object());
  ASSERT_TRUE(s) << client->stderrText();
  const json& st = *s;
  EXPECT_EQ(st["loaded"], true) << st.dump();
  EXPECT_EQ(st["format"], "kineto-json");
  EXPECT_EQ(st["steps"], 6);
  EXPECT_GT(st["attributedShare"].get<double>(), 0.99);
  json hints = hintsOf(*client, w.script_uri);
  const json* hot = hintOnLine(hints, 32);  // line 33: return F.relu(self.bn(self.conv(x)))
  ASSERT_NE(hot, nullptr) << hints.dump();
  EXPECT_NE((*hot)["label"].get<std::string>().find("bwd "), std::string::npos);
  EXPECT_NE(hintOnLine(hints, 80), nullptr) << "x = x.to(device): the batch copy";
  const json* def = hintOnLine(hints, 48);  // def train_step: only its body's roll-up, no time of its own
  ASSERT_NE(def, nullptr);
  EXPECT_EQ((*def)["label"].get<std::string>().rfind("Σ ", 0), 0u) << (*def)["label"];
  auto hover = hoverText(*client, w.script_uri, 32, 20);
  ASSERT_TRUE(hover);
  std::string card = *hover;
  EXPECT_NE(card.find("aligned"), std::string::npos) << card;

  // The idle GPU while __getitem__ builds a batch (line 21), then the same with the gap threshold
  // set lower: the profile is attributed again and the message names the new threshold.
  auto idleMessage = [&](const std::string& wanted) -> std::string {
    std::string last;
    for (int i = 0; i < 20; ++i) {
      auto d = client->waitForNotification("textDocument/publishDiagnostics", 10s);
      if (!d) break;
      for (const auto& diag : (*d)["params"]["diagnostics"])
        if (diag.value("code", "") == "gpu-idle" && diag["range"]["start"]["line"] == 20)
          last = diag["message"].get<std::string>();
      if (last.find(wanted) != std::string::npos) return last;
    }
    return last;
  };
  client->notify("workspace/didChangeConfiguration", {{"settings", {{"sightline", json::object()}}}});
  EXPECT_NE(idleMessage("gaps of 1 ms or more").find("gaps of 1 ms or more"), std::string::npos);
  client->notify("workspace/didChangeConfiguration",
                 {{"settings", {{"sightline", {{"thresholds", {{"gpuIdleGapMs", 0.25}}}}}}}});
  ASSERT_TRUE(status(*client));
  EXPECT_NE(idleMessage("gaps of 0.25 ms").find("gaps of 0.25 ms or more"), std::string::npos);
  client->notify("workspace/didChangeConfiguration",
                 {{"settings", {{"sightline", {{"thresholds", {{"gpuIdleMsPerStep", 50}}}}}}}});
  ASSERT_TRUE(status(*client));  // the gap went back to 1 ms: loaded again
  bool quiet = false;            // diagnostics published since then lose the finding
  for (int i = 0; i < 20 && !quiet; ++i) {
    auto d = client->waitForNotification("textDocument/publishDiagnostics", 10s);
    if (!d) break;
    quiet = std::none_of((*d)["params"]["diagnostics"].begin(), (*d)["params"]["diagnostics"].end(),
                         [](const json& diag) { return diag.value("code", "") == "gpu-idle"; });
  }
  EXPECT_TRUE(quiet);
  fs::remove_all(root);
}

TEST(ProfileSession, DiscoversTheNewestProfileAndReloadsWhenItChanges) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  SIGHTLINE_REQUIRE_PROFILE(tuned, "h200-captures/nsys/train_small_tuned.sqlite.xz");
  auto w = makeWorkspace("reload", naive);
  auto client = LspClient::spawnStdio();
  start(*client, w, json::object());
  auto first = status(*client);
  ASSERT_TRUE(first) << client->stderrText();
  ASSERT_EQ((*first)["params"]["loaded"], true) << (*first).dump();
  EXPECT_EQ((*first)["params"]["file"], w.profile);
  int64_t before = (*first)["params"]["totalGpuNs"];
  // Overwrite the profile in place, the way a new capture lands: first a truncated half, then
  // the whole file. The server keeps serving and picks up the new numbers.
  {
    std::string bytes = readFile(tuned);
    std::ofstream half(w.profile, std::ios::binary | std::ios::trunc);
    half.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  std::this_thread::sleep_for(300ms);
  fs::copy_file(tuned, w.profile, fs::copy_options::overwrite_existing);
  std::optional<json> next;
  for (int i = 0; i < 10; ++i) {
    next = status(*client);
    if (!next || ((*next)["params"]["loaded"] == true && (*next)["params"]["totalGpuNs"] != before)) break;
  }
  ASSERT_TRUE(next) << client->stderrText();
  EXPECT_NE((*next)["params"]["totalGpuNs"], before);
  EXPECT_TRUE(client->running());
  EXPECT_FALSE(hintsOf(*client, w.script_uri).empty());
  fs::remove_all(w.root);
}

// A configured profile that cannot be read (a truncated export, a directory named like one,
// a FIFO): the editor is told once with window/showMessage, the status carries the error, and
// the server keeps answering.
TEST(ProfileSession, ALoadThatFailsIsShownToTheUserOnce) {
  SIGHTLINE_REQUIRE_PROFILE(naive, "h200-captures/nsys/train_small_naive.sqlite.xz");
  auto w = makeWorkspace("broken", naive);
  std::ofstream(w.root / "runs" / "cut.sqlite", std::ios::binary) << readFile(naive).substr(0, 3000);
  fs::create_directories(w.root / "runs" / "dir.sqlite");
  ASSERT_EQ(::mkfifo((w.root / "runs" / "fifo.sqlite").c_str(), 0600), 0);
  for (const char* name : {"cut.sqlite", "dir.sqlite", "fifo.sqlite"}) {
    auto client = LspClient::spawnStdio();
    start(*client, w, {{"profiles", {std::string("runs/") + name}}});
    auto st = client->waitFor(
        [](const json& m) { return m.value("method", "") == "sightline/profileStatus" && !m["params"]["loaded"]; },
        30s);
    ASSERT_TRUE(st) << name << "\n" << client->stderrText();
    EXPECT_FALSE((*st)["params"]["error"].get<std::string>().empty());
    auto shown = client->waitForNotification("window/showMessage", 10s);
    ASSERT_TRUE(shown) << name << "\n" << client->stderrText();
    EXPECT_EQ((*shown)["params"]["type"], 1);
    EXPECT_NE((*shown)["params"]["message"].get<std::string>().find(name), std::string::npos) << *shown;
    EXPECT_FALSE(client->waitForNotification("window/showMessage", 1s)) << name << ": shown once";
    EXPECT_TRUE(hoverText(*client, w.script_uri, 32, 10)) << name << ": still serving";
  }
  fs::remove_all(w.root);
}

}  // namespace
}  // namespace sightline::testing
