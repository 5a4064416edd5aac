// One truth at every edge: every capture bundled in tests/data (and the README's example) goes
// through `report` (text and JSON), `check`, and the language server (status, the step view's
// headline, story rows and lines, the summary, inlay hints, hovers), and every figure shown on two
// surfaces or more is the same value after formatting: the header's rows on the page and the
// panel, step, the step without the profiler, causes and changes, each line's own and inclusive
// time, share, one-off mark and slowest rank, per-rank min/median/max, waiting and moving, the
// late share, busy, memory peak and the out-of-memory request. Each figure is formatted with the
// one formatter per unit (analysis/features/units.h), so a surface that derived a figure again,
// or formatted it its own way, fails here. (The page's DOM: editors/vscode/test/report_html.mjs.)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "analysis/features/units.h"
#include "server/lsp/uri.h"
#include "tests/support/lsp_client.h"
#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

namespace fs = std::filesystem;
using features::formatBytes;
using features::formatMilliseconds;
using features::formatShare;

struct Capture {
  std::string name;
  std::string profile;  // under the repo, compressed or not
  std::string script;   // the script it measured
};

void PrintTo(const Capture& c, std::ostream* os) { *os << c.name; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A workspace holding the script and the profile (runs/<name>), and its root.
struct Workspace {
  fs::path root;
  std::string profile, script_uri, script_text;
  explicit Workspace(const Capture& c) {
    root = fs::temp_directory_path() / ("sightline-surfaces-" + c.name + "-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "runs");
    fs::path script = sourcePath(c.script);
    fs::copy_file(script, root / script.filename());
    const std::string& relative = c.profile;
    std::string decompressed = relative.ends_with(".xz") ? repoProfile(relative) : sourcePath(relative);
    profile = (root / "runs" / fs::path(decompressed).filename()).string();
    fs::copy_file(decompressed, profile);
    script_text = readFile(script.string());
    script_uri = server::pathToUri((root / script.filename()).string());
  }
  ~Workspace() { fs::remove_all(root); }
  std::string scriptName() const { return fs::path(server::uriToPath(script_uri).value_or("")).filename().string(); }
};

json request(LspClient& client, const std::string& method, const json& params) {
  auto id = client.request(method, params);
  auto r = client.waitForResponse(id, 30s);
  return r && r->contains("result") ? (*r)["result"] : json();
}

// Every surface of one capture: the report's text and JSON, `check`, and a language server
// session on the same workspace with its status, step view, summary and hints.
struct Surfaces {
  std::string text, header;  // the report; its header (up to the first blank line)
  json doc;                  // report --format json
  json findings = json::array();
  std::string check_text;
  std::unique_ptr<LspClient> client;
  json status, view, hints;
  std::string summary;
  const json* file = nullptr;  // doc's entry of the script
};

void runCli(const Workspace& w, Surfaces& s) {
  std::string script = w.scriptName();
  std::string args = "--profile '" + w.profile + "' " + script;
  auto text = runSightline("report " + args, w.root.string());
  auto js = runSightline("report --format json " + args, w.root.string());
  auto check = runSightline("check --format json " + args, w.root.string());
  auto check_text = runSightline("check " + args, w.root.string());
  ASSERT_EQ(text.code, 0) << text.out;
  ASSERT_EQ(js.code, 0) << js.out;
  ASSERT_NE(check.code, 2) << check.out;
  s.text = text.out;
  s.header = s.text.substr(0, s.text.find("\n\n"));
  s.doc = json::parse(js.out);
  s.check_text = check_text.out;
  json checked = json::parse(check.out);
  for (const auto& f : checked["files"])
    for (const auto& d : f["diagnostics"]) s.findings.push_back(d);
  // The script's own entry: its local path, the most lines (an installed package's file of the
  // same name may map there too, with none).
  for (const auto& f : s.doc["files"])
    if (f["local_path"].is_string() && fs::path(f["local_path"].get<std::string>()).filename() == script &&
        (!s.file || f["lines"].size() > (*s.file)["lines"].size()))
      s.file = &f;
}

void runServer(const Workspace& w, Surfaces& s) {
  s.client = LspClient::spawnStdio();
  auto init = s.client->request("initialize",
                                {{"processId", nullptr},
                                 {"rootUri", server::pathToUri(w.root.string())},
                                 {"capabilities", {{"textDocument", {{"hover", {{"contentFormat", {"markdown"}}}}}}}},
                                 {"initializationOptions", {{"settings", {{"profiles", {"runs/*"}}}}}}});
  ASSERT_TRUE(s.client->waitForResponse(init, 10s));
  s.client->notify("initialized", json::object());
  s.client->notify(
      "textDocument/didOpen",
      {{"textDocument", {{"uri", w.script_uri}, {"languageId", "python"}, {"version", 1}, {"text", w.script_text}}}});
  auto loaded = s.client->waitFor(
      [](const json& m) {
        return m.value("method", "") == "sightline/profileStatus" && m["params"].value("loaded", false);
      },
      90s);
  ASSERT_TRUE(loaded) << s.client->stderrText();
  // A load that ended before the server read didOpen is done again once the script shows it opens
  // NVTX ranges the profile recorded: a request answered means didOpen was handled; a load begun
  // meanwhile is waited for.
  size_t before = s.client->seen().size();
  request(*s.client, "sightline/stepView", nullptr);
  for (size_t i = before; i < s.client->seen().size(); ++i) {
    const json& m = s.client->seen()[i];
    bool begun = m.value("method", "") == "window/logMessage" &&
                 m["params"].value("message", "").rfind("Sightline: loading ", 0) == 0;
    if (!begun) continue;
    loaded = s.client->waitFor(
        [](const json& m) {
          return m.value("method", "") == "sightline/profileStatus" && m["params"].value("loaded", false);
        },
        90s);
    ASSERT_TRUE(loaded) << s.client->stderrText();
    break;
  }
  s.status = (*loaded)["params"];
  s.view = request(*s.client, "sightline/stepView", nullptr);
  s.summary = request(*s.client, "workspace/executeCommand", {{"command", "sightline.showProfileSummary"}}).dump();
  s.hints =
      request(*s.client, "textDocument/inlayHint",
              {{"textDocument", {{"uri", w.script_uri}}},
               {"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 100000}, {"character", 0}}}}}});
}

// The header's rows on the panel and the page are the report's, in its order: each story row of
// the server is the next line of the text header (its label in the column of ten), a row's table
// the lines under it, and no header line is left over.
void expectStoryRowsAreTheHeader(const Surfaces& s) {
  ASSERT_TRUE(s.view.is_object() && s.view["story"].is_array()) << s.view.dump().substr(0, 300);
  auto header = linesOf(s.header);
  size_t at = 0;
  for (const auto& row : s.view["story"]) {
    std::string label = row["label"], line = row["lines"][0];
    std::string column = label.empty()       ? std::string(10, ' ')
                         : label.size() < 10 ? label + std::string(10 - label.size(), ' ')
                                             : label + (label.find(' ') != std::string::npos ? "  " : " ");
    if (!label.empty() && row.contains("qualifier")) column += "(" + row["qualifier"].get<std::string>() + ") ";
    ASSERT_LT(at, header.size()) << "the panel has a row the report lacks: " << column + line;
    // The report names the profile by the path it was given, the server by its file.
    if (label == "Profile")
      EXPECT_EQ(header[at].rfind("Profile   ", 0), 0u) << header[at];
    else
      EXPECT_EQ(header[at], column + line) << "row " << at << " of the report's header";
    ++at;
    if (row.contains("table")) {
      const json& t = row["table"];
      size_t lines = 1 + t["rows"].size() + (t["note"].get<std::string>().empty() ? 0 : 1);
      for (size_t r = 0; r < t["rows"].size() && at + 1 + r < header.size(); ++r)
        for (const auto& cell : t["rows"][r])
          EXPECT_TRUE(has(header[at + 1 + r], cell.get<std::string>())) << cell << " in " << header[at + 1 + r];
      at += lines;
    }
  }
  EXPECT_EQ(at, header.size()) << "report header lines on no row of the panel, from: "
                               << (at < header.size() ? header[at] : "");
}

// The verdict: the headline on the status, the lens, the step view and the report; each cause
// and change on the text, the story, the summary and the `step-verdict` finding.
void expectOneVerdict(const Surfaces& s) {
  if (!s.doc.contains("verdict")) return;
  const json& v = s.doc["verdict"];
  const json& headline = s.doc["step_view"]["headline"];
  std::string line = s.status["text"];
  EXPECT_EQ(s.status["verdict"], headline["summary"]);
  EXPECT_TRUE(has(line, headline["summary"].get<std::string>())) << line;
  EXPECT_EQ(s.status["stepWallNs"].get<int64_t>(), static_cast<int64_t>(v["wall_ns"].get<double>()));
  EXPECT_EQ(s.view["headline"], headline);
  std::string story = s.view["story"].dump();
  std::string step = formatMilliseconds(v["wall_ns"].get<double>()) + " ms median as captured";
  EXPECT_TRUE(has(s.text, "Step      " + step)) << s.header;
  EXPECT_TRUE(has(s.text, "GPU busy " + formatShare(v["busy_share"].get<double>())));
  std::string verdict_finding;
  for (const auto& f : s.findings)
    if (f["code"] == "step-verdict") verdict_finding = f["message"];
  for (size_t i = 0; i < v["causes"].size(); ++i) {
    const json& c = v["causes"][i];
    std::string told =
        c["cause"].get<std::string>() + " " + formatMilliseconds(c["ns_per_step"].get<double>()) + " ms/step";
    EXPECT_TRUE(has(s.text, told)) << told;
    EXPECT_TRUE(has(story, told)) << told;
    EXPECT_TRUE(has(s.summary, told)) << told;
    if (!verdict_finding.empty() && i < 3) {
      EXPECT_TRUE(has(verdict_finding, told)) << told << "\n" << verdict_finding;
    }
  }
  for (const auto& c : v["changes"]) {
    std::string sentence = c["text"];
    std::string in_json = json(sentence).dump();
    EXPECT_TRUE(has(s.text, sentence)) << sentence;
    EXPECT_TRUE(has(story, in_json.substr(1, in_json.size() - 2))) << sentence;
    if (!verdict_finding.empty()) {
      EXPECT_TRUE(has(verdict_finding, sentence)) << sentence;
    }
  }
  EXPECT_TRUE(has(s.text, "Unprofiled " + headline["text"].get<std::string>())) << headline.dump();
  if (!verdict_finding.empty()) {
    EXPECT_TRUE(has(verdict_finding, headline["summary"].get<std::string>())) << verdict_finding;
  }
}

const json* jsonLine(const json* file, int line_no) {
  if (!file) return nullptr;
  for (const auto& l : (*file)["lines"])
    if (l["line"] == line_no) return &l;
  return nullptr;
}

// Per line: what a hint, the report's margin and the page show are the report JSON's figures —
// the line's own or inclusive time per step, its share, its one-off mark.
void expectLineFigures(const Surfaces& s, const std::string& script) {
  if (!s.file || s.doc["steps"].get<int>() <= 0 || s.status["format"] == "memory-snapshot") return;
  double steps = s.doc["steps"].get<double>();
  size_t checked = 0;
  std::regex hint_figure(R"(^▮ (Σ )?([0-9.]+) ms · ([0-9.]+%))");
  for (const auto& h : s.hints) {
    std::string label =
        h["label"].is_string() ? h["label"].get<std::string>() : h["label"][0]["value"].get<std::string>();
    std::smatch m;
    if (!std::regex_search(label, m, hint_figure) || m[1].matched) continue;
    const json* l = jsonLine(s.file, h["position"]["line"].get<int>() + 1);
    if (!l) continue;
    bool incl = has(label, " incl");
    EXPECT_EQ(incl, (*l)["inclusive_shown"].get<bool>()) << label;
    std::string ns = formatMilliseconds((*l)[incl ? "inclusive_ns" : "gpu_ns"].get<double>() / steps);
    std::string share = formatShare((*l)[incl ? "inclusive_share" : "share"].get<double>());
    EXPECT_EQ(m[2].str(), ns) << "line " << (*l)["line"] << ": hint " << label;
    EXPECT_EQ(m[3].str(), share) << "line " << (*l)["line"] << ": hint " << label;
    EXPECT_DOUBLE_EQ(h["data"]["share"].get<double>(), (*l)["share"].get<double>()) << label;
    ++checked;
  }
  EXPECT_GT(checked, 0u) << s.hints.dump().substr(0, 500);
  // The margin: "   4.01     81%  1.29 + 2.73  ████ │   33  code", or "incl, self 0.68".
  std::regex margin(R"(^ *([0-9.]+) +([0-9.]+%)  (incl, self [0-9.]+)?.*│ +([0-9]+)  )");
  size_t margins = 0;
  for (const auto& line : linesOf(s.text.substr(s.header.size()))) {
    std::smatch m;
    if (!std::regex_search(line, m, margin)) continue;
    const json* l = jsonLine(s.file, std::stoi(m[4]));
    if (!l) continue;
    bool incl = m[3].matched;
    EXPECT_EQ(incl, (*l)["inclusive_shown"].get<bool>()) << line;
    EXPECT_EQ(m[1].str(), formatMilliseconds((*l)[incl ? "inclusive_ns" : "gpu_ns"].get<double>() / steps)) << line;
    EXPECT_EQ(m[2].str(), formatShare((*l)[incl ? "inclusive_share" : "share"].get<double>())) << line;
    EXPECT_EQ(has(line, "◂ one-off "), (*l)["oneoff_marked"].get<bool>()) << line;
    ++margins;
  }
  EXPECT_GT(margins, 0u);
  // The page's lines (the panel and `report --format html` draw these): the same share and mark.
  for (const auto& v : s.view["lines"]) {
    if (fs::path(v["path"].get<std::string>()).filename() != script) continue;
    const json* l = jsonLine(s.file, v["line"].get<int>());
    if (!l) continue;
    EXPECT_DOUBLE_EQ(v["share"].get<double>(), (*l)["share"].get<double>()) << v.dump();
    EXPECT_EQ(v["oneoffMarked"].get<bool>(), (*l)["oneoff_marked"].get<bool>()) << v.dump();
  }
}

// Several ranks: each line's slowest rank (the margin's column, the hover's) and its per-rank
// min / median / max; the job's waiting and moving and the verdict's cause; the straggler's share.
void expectRankFigures(const Surfaces& s, const Workspace& w) {
  if (s.doc["ranks"].size() < 2) return;
  // The job's waiting: the exposed part is the verdict's "ranks waiting" cause, the sum of the
  // modules' waits; all of it is the rank table's mean.
  if (s.doc.contains("job") && s.doc["job"].is_object() && s.doc["job"]["paired_collectives"].get<int>() > 0) {
    const json& job = s.doc["job"];
    std::string row = "waiting for the last rank " + formatMilliseconds(job["wait_ns_per_step"].get<double>()) +
                      " ms (" + formatMilliseconds(job["exposed_wait_ns_per_step"].get<double>()) + " of it exposed";
    EXPECT_TRUE(has(s.header, row)) << row << "\n" << s.header;
    if (s.doc.contains("verdict"))
      for (const auto& c : s.doc["verdict"]["causes"])
        if (c["cause"] == "ranks waiting for each other" && s.doc["verdict"]["as_captured"] == true) {
          EXPECT_EQ(formatMilliseconds(c["ns_per_step"].get<double>()),
                    formatMilliseconds(job["exposed_wait_ns_per_step"].get<double>()));
        }
    int64_t modules = 0;
    for (const auto& m : job["modules"]) modules += m["wait_ns_per_step"].get<int64_t>();
    EXPECT_NEAR(static_cast<double>(modules), job["exposed_wait_ns_per_step"].get<double>(),
                static_cast<double>(job["modules"].size()));
    if (job["straggler"].is_object()) {
      std::string late = "last to arrive at " + formatShare(job["straggler"]["late_share"].get<double>());
      EXPECT_TRUE(has(s.header, "Straggler " + job["straggler"]["rank"].get<std::string>() + ": " + late))
          << late << "\n"
          << s.header;
      if (has(s.check_text, "last to arrive at")) {
        EXPECT_TRUE(has(s.check_text, late)) << late << "\n" << s.check_text;
      }
    }
  }
  // The costliest line with a figure on every rank: its hover and its margin name the JSON's
  // slowest rank, and the hover's min / median / max are of the ranks' per-step figures.
  const json* top = nullptr;
  if (s.file)
    for (const auto& l : (*s.file)["lines"])
      if (l.contains("slowest_rank") && (!top || l["gpu_ns"] > (*top)["gpu_ns"])) top = &l;
  if (!top) return;
  json hover = request(*s.client, "textDocument/hover",
                       {{"textDocument", {{"uri", w.script_uri}}},
                        {"position", {{"line", (*top)["line"].get<int>() - 1}, {"character", 0}}}});
  std::string md = hover.dump();
  std::string slowest = (*top)["slowest_rank"]["rank"];
  EXPECT_TRUE(has(md, "**" + slowest + "**")) << slowest << " " << md.substr(0, 800);
  std::vector<double> per_step;
  for (size_t r = 0; r < s.doc["ranks"].size(); ++r)
    per_step.push_back((*top)["rank_ns"][r].get<double>() /
                       std::max(1.0, s.doc["ranks"][r]["steady_steps"].get<double>()));
  std::sort(per_step.begin(), per_step.end());
  size_t n = per_step.size();
  double median = n % 2 ? per_step[n / 2] : (per_step[n / 2 - 1] + per_step[n / 2]) / 2;
  std::string spread = "per rank: min " + formatMilliseconds(per_step.front()) + " / median " +
                       formatMilliseconds(median) + " / max " + formatMilliseconds(per_step.back());
  EXPECT_TRUE(has(md, spread)) << spread << "\n" << md.substr(0, 800);
  if ((*top)["slowest_rank"]["shown"].get<bool>()) {
    EXPECT_TRUE(has(s.text, slowest + " ×")) << slowest;
  }
}

// GPU memory: the peak and the out-of-memory request, formatted once.
void expectMemoryFigures(const Surfaces& s) {
  if (!s.doc.contains("memory") || !s.doc["memory"].is_object() || !s.doc["memory"]["peak_allocated_bytes"].is_number())
    return;
  const json& m = s.doc["memory"];
  std::string peak = formatBytes(m["peak_allocated_bytes"].get<int64_t>());
  if (m["peak_allocated_bytes"].get<int64_t>() > 0 && has(s.text, "Memory    ")) {
    EXPECT_TRUE(has(s.text, "peak " + peak)) << peak;
    ASSERT_TRUE(s.status.contains("memory"));
    EXPECT_TRUE(has(s.status["memory"]["summary"].get<std::string>(), peak)) << s.status["memory"].dump();
  }
  if (m["oom"].is_object()) {
    std::string asked = formatBytes(m["oom"]["requested_bytes"].get<int64_t>());
    EXPECT_TRUE(has(s.text, "asked " + asked)) << asked;
    EXPECT_EQ(s.status["memory"]["oom"]["requestedBytes"], m["oom"]["requested_bytes"]);
    std::string oom_finding;
    for (const auto& f : s.findings)
      if (f["code"] == "out-of-memory") oom_finding = f["message"];
    EXPECT_TRUE(has(oom_finding, asked)) << oom_finding;
  }
}

class SurfacesAgree : public ::testing::TestWithParam<Capture> {};

TEST_P(SurfacesAgree, EveryFigureShownTwiceIsTheSame) {
  Workspace w(GetParam());
  Surfaces s;
  runCli(w, s);
  if (HasFatalFailure()) return;
  runServer(w, s);
  if (HasFatalFailure()) return;
  // The status line: the server's own words, each figure by the one formatter.
  std::string line = s.status["text"];
  if (s.status["format"] != "memory-snapshot") {
    EXPECT_TRUE(has(line, formatMilliseconds(static_cast<double>(s.status["gpuNsPerStep"].get<int64_t>())) +
                              (s.status["steps"].get<int>() > 0 ? " ms/step" : " ms")))
        << line;
    EXPECT_EQ(s.status["gpuNsPerStep"].get<int64_t>(),
              s.doc["steps"].get<int>() > 0 ? s.doc["steady_gpu_ns"].get<int64_t>() / s.doc["steps"].get<int>()
                                            : s.doc["steady_gpu_ns"].get<int64_t>());
  }
  expectStoryRowsAreTheHeader(s);
  expectOneVerdict(s);
  expectLineFigures(s, w.scriptName());
  expectRankFigures(s, w);
  expectMemoryFigures(s);
  s.client->closeInput();
  s.client->waitExit(5s);
}

// Every capture bundled (tests/data/captures.json): one GPU and many, nsys and the PyTorch
// profiler, eager and compiled, input-, sync-, launch- and host-bound, captures of sightline
// capture, killed captures, memory snapshots and traces with memory.
std::vector<Capture> bundledCaptures() {
  std::vector<Capture> out;
  json doc = json::parse(readFile(testDataPath("captures.json")));
  for (const auto& c : doc["captures"]) out.push_back({c["name"], c["profile"], c["script"]});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Bundled, SurfacesAgree, ::testing::ValuesIn(bundledCaptures()),
                         [](const ::testing::TestParamInfo<Capture>& info) { return info.param.name; });

// The list holds every capture under tests/data: a capture added without it would go unchecked.
TEST(SurfacesAgree, EveryBundledCaptureIsListed) {
  std::set<std::string> listed;
  for (const auto& c : bundledCaptures()) listed.insert(c.profile);
  for (const auto& entry : fs::recursive_directory_iterator(testDataPath(""))) {
    std::string name = entry.path().filename().string();
    bool profile = name.ends_with(".sqlite.xz") || name.find(".pt.trace.json") != std::string::npos ||
                   (name.ends_with(".pickle.xz") && name.find("plain_p") == std::string::npos);
    if (!entry.is_regular_file() || !profile) continue;
    std::string relative = "tests/data/" + fs::relative(entry.path(), testDataPath("")).string();
    EXPECT_TRUE(listed.count(relative)) << relative << " is not in tests/data/captures.json";
  }
}

// The straggler's late share is one figure: the report's Straggler line, the rank table and the
// `check` finding (which once counted every step, warm-up included, and truncated: "95%"
// beside the report's "100%", FSDP2 on 2 ranks under the PyTorch profiler).
TEST(SurfacesAgree, TheStragglersLateShareIsOneFigure) {
  std::string args = " --profile " + sourcePath("tests/data/capture/runs/fsdp2_torch.rank0.pt.trace.json.gz") +
                     " --profile " + sourcePath("tests/data/capture/runs/fsdp2_torch.rank1.pt.trace.json.gz") + " " +
                     sourcePath("tests/data/capture/train_fsdp2.py");
  auto text = runSightline("report" + args, sourcePath(""));
  auto check = runSightline("check" + args, sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  std::set<std::string> shares;
  std::regex late(R"(last to arrive at ([0-9.]+%))");
  for (const auto* out : {&text.out, &check.out})
    for (std::sregex_iterator it(out->begin(), out->end(), late), end; it != end; ++it) shares.insert((*it)[1]);
  EXPECT_EQ(shares.size(), 1u) << ::testing::PrintToString(shares);
  EXPECT_TRUE(has(check.out, "last to arrive at")) << check.out;
}

// Waiting for other ranks is one figure under one name: the job's exposed waiting is the
// verdict's cause and the sum of the modules' (DDP on 2 ranks once read 54.3 ms/step waiting in
// the Job row, 53.8 in the Comm row and 53.6 in the cause, three rules for one fact).
TEST(SurfacesAgree, WaitingForOtherRanksIsOneFigure) {
  std::string profile = repoProfile("tests/data/multi/ddp/ddp_one.sqlite.xz");
  auto js = runSightline("report --format json --profile '" + profile + "' tests/data/multi/ddp/train_ddp.py",
                         sourcePath(""));
  ASSERT_EQ(js.code, 0) << js.out;
  json doc = json::parse(js.out);
  const json& job = doc["job"];
  ASSERT_TRUE(job.is_object());
  double exposed = job["exposed_wait_ns_per_step"].get<double>();
  EXPECT_GT(exposed, 0);
  EXPECT_LE(exposed, job["wait_ns_per_step"].get<double>());
  EXPECT_NEAR(doc["verdict"]["comm_exposed_wait_ns_per_step"].get<double>(), exposed, 1.0);
  EXPECT_NEAR(doc["verdict"]["comm_wait_ns_per_step"].get<double>(), job["wait_ns_per_step"].get<double>(), 1.0);
}

// A capture without backtraces: "No GPU time could be put on source lines" is a warning on
// every surface; the page's story once labelled it "No" (its first word).
TEST(SurfacesAgree, NothingOnLinesIsAWarningEverywhere) {
  SIGHTLINE_REQUIRE_PROFILE(profile, "h200-captures/nsys/train_small_naive_nobacktrace.sqlite.xz");
  auto text = runSightline("report --profile '" + profile + "'", sourcePath(""));
  auto html = runSightline("report --format html --profile '" + profile + "'", sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  ASSERT_EQ(html.code, 0) << html.out.substr(0, 300);
  EXPECT_TRUE(has(text.out, "\nWarning   No GPU time could be put on source lines: ")) << text.out.substr(0, 2000);
  EXPECT_TRUE(has(html.out, R"("label":"Warning","lines":["No GPU time could be put on source lines)"));
  EXPECT_FALSE(has(html.out, R"("label":"No")"));
}

// A row tells a figure or says nothing: the one-off row once read "0.00 ms of GPU time and 0.00 ms
// of GPU idle outside the steady steps; most at gpt.py:149 0.00 ms" (GPT eager, sightline capture).
TEST(SurfacesAgree, NoRowOfZeros) {
  std::string profile = repoProfile("tests/data/capture/runs/gpt_nsys.sqlite.xz");
  auto text = runSightline("report --profile '" + profile + "' tests/data/capture/gpt.py", sourcePath(""));
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_FALSE(has(text.out, "0.00 ms of GPU time and 0.00 ms of GPU idle")) << text.out.substr(0, 1500);
}

}  // namespace
}  // namespace sightline::testing
