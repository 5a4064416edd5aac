// `sightline report` on torch.compile captures (tests/data/compile): the compiled kernels on the
// model's lines when the generated code is named or found, and what to keep when it is not.
#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>
#include <regex>

#include <filesystem>

#include "tests/support/test_paths.h"

namespace sightline::testing {
namespace {

using nlohmann::json;

std::string headerLine(const std::string& text, const std::string& prefix) {
  auto at = text.find("\n" + prefix);
  return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

std::string args(const std::string& capture) {
  return "--profile '" + dataProfile("compile/" + capture + ".sqlite.xz") + "' '" +
         testDataPath("compile/train_gpt.py") + "'";
}

TEST(CompiledReport, NamedCacheFolderPutsKernelsOnModelLines) {
  std::string cache = dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache";
  auto run = runSightline("report " + args("compiled_run") + " --compiled-code '" + cache + "'", sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  EXPECT_NE(compiled.find("most on train_gpt.py:41"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("model lines from the generated code in " + cache), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("with whole stacks from Inductor's line map"), std::string::npos) << compiled;
  // The reduce-overhead run loaded the entries compiled without provenance: innermost lines.
  auto plain = runSightline("report " + args("compiled_graphs") + " --compiled-code '" + cache + "'", sourcePath(""));
  EXPECT_NE(headerLine(plain.out, "Compiled  ").find("run with INDUCTOR_PROVENANCE=1"), std::string::npos) << plain.out;
  EXPECT_NE(headerLine(run.out, "Steps     ").find("loop line of main()"), std::string::npos);
  auto j = runSightline("report --format json " + args("compiled_prov") + " --compiled-code '" + cache + "'",
                        sourcePath(""));
  ASSERT_EQ(j.code, 0) << j.out;
  json doc = json::parse(j.out);
  const auto& g = doc["generated_code"];
  EXPECT_EQ(g["mapped"], g["stacks"]);
  EXPECT_GT(g["backward"].get<int>(), 0);
  EXPECT_TRUE(g["provenance"].get<bool>());
  EXPECT_EQ(g["read_from"][0], cache);
}

TEST(CompiledReport, WithoutTheCodeSaysWhatToKeep) {
  // Run from a folder without a cache; the profile's own cache folder is not on this machine
  // unless the tests run in the device's checkout (then it is found, and that is right too).
  auto dir = std::filesystem::temp_directory_path() / ("sightline_nocache_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto run = runSightline("report " + args("compiled_run"), dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  if (std::filesystem::exists("/work/main/tests/data/compile/inductor_cache")) GTEST_SKIP() << "the cache is here";
  EXPECT_NE(compiled.find("on train_gpt.py:68: the compiled function's lines carry them"), std::string::npos)
      << compiled;
  EXPECT_NE(compiled.find("the run kept it in /work/main/tests/data/compile/inductor_cache; name that folder or a "
                          "copy with --compiled-code DIR"),
            std::string::npos)
      << compiled;
  // The run kept its cache inside its project: no advice to set TORCHINDUCTOR_CACHE_DIR.
  EXPECT_EQ(compiled.find("TORCHINDUCTOR_CACHE_DIR"), std::string::npos) << compiled;
}

TEST(CompiledReport, FindsACacheInsideTheWorkingFolder) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline_ws_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "runs");
  std::filesystem::copy(dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache", dir / "runs" / "cache",
                        std::filesystem::copy_options::recursive);
  auto run = runSightline("report " + args("compiled_graphs"), dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compiled = headerLine(run.out, "Compiled  ");
  EXPECT_NE(compiled.find("model lines from the generated code in"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("runs/cache"), std::string::npos) << compiled;
}

TEST(CompiledReport, APyTorchProfilerTracePutsCompiledCallsOnModelLines) {
  std::string trace = "--profile '" + testDataPath("compile/compiled_kineto.pt.trace.json.gz") + "' '" +
                      testDataPath("compile/train_gpt.py") + "'";
  auto with = runSightline(
      "report " + trace + " --compiled-code '" + dataTree("compile/inductor_cache.tar.xz") + "/inductor_cache'",
      sourcePath(""));
  ASSERT_EQ(with.code, 0) << with.out;
  std::string compiled = headerLine(with.out, "Compiled  ");
  EXPECT_NE(compiled.find("on train_gpt.py:41, train_gpt.py:55, train_gpt.py:54 (model lines from the generated "
                          "code in"),
            std::string::npos)
      << compiled;
  EXPECT_NE(compiled.find("each launch of a traced call placed by its kernel's name and order"), std::string::npos)
      << compiled;
  // The call into the compiled model carries its forward, `loss.backward()` its backward.
  EXPECT_NE(with.out.find("incl, self 0.00  ███        │  139                  loss = model(x, y)"), std::string::npos)
      << with.out;
  // Without the code (the wrapper modules lie where the trace names them, their cache entries
  // do not): the compiled function's line, and what to name.
  auto dir = std::filesystem::temp_directory_path() / ("sightline_wrappers_" + std::to_string(::getpid()));
  for (const auto& e : std::filesystem::recursive_directory_iterator(dataTree("compile/inductor_cache.tar.xz"))) {
    auto rel = std::filesystem::relative(e.path(), dataTree("compile/inductor_cache.tar.xz"));
    if (e.is_regular_file() && rel.string().find("fxgraph") == std::string::npos) {
      std::filesystem::create_directories((dir / rel).parent_path());
      std::filesystem::copy_file(e.path(), dir / rel);
    }
  }
  auto without = runSightline("report " + trace, dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(without.code, 0) << without.out;
  compiled = headerLine(without.out, "Compiled  ");
  // The wrappers are read (they were called missing, and the folder named as the remedy): they
  // name no line, and what would is said.
  EXPECT_NE(compiled.find("on train_gpt.py:68: the compiled function's lines carry them. Its generated modules were "
                          "found in " +
                          (dir / "inductor_cache").string() +
                          " as wrapper code only, which names no line of the model: its post-grad graph places them; "
                          "name with --compiled-code the cache's fxgraph/ entries"),
            std::string::npos)
      << compiled;
  // Never on the generated modules' own lines (they are not the user's code).
  EXPECT_EQ(without.out.find(".py:2"), std::string::npos) << without.out;
  EXPECT_EQ(without.out.find("c676plqtf7l75l3hrp32ywho5kk5agisagg5hun75kgq2jam3hl6"), std::string::npos);
}

// torch.compile's code kept as plain files (compile/debug: one run's PyTorch profiler trace, its
// TORCH_COMPILE_DEBUG folder, its cache's wrappers without fxgraph/, its TORCH_LOGS=output_code
// log). Each was ignored: `read_from` empty, the modules called missing, the folder named again.
TEST(CompiledReport, PlainGeneratedFilesAreRead) {
  std::string trace = "--profile '" + testDataPath("compile/debug/debug_kineto.pt.trace.json.gz") + "' '" +
                      testDataPath("compile/train_gpt.py") + "'";
  auto dir = std::filesystem::temp_directory_path() / ("sightline_plain_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "log");
  std::filesystem::copy_file(dataProfile("compile/debug/output_code.log.xz"), dir / "log" / "output_code.log");
  struct Case {
    std::string folder;
    bool lines;  // the post-grad graph is there
  };
  for (const Case& c : {Case{dataTree("compile/debug/compile_debug.tar.xz"), true},
                        Case{dataTree("compile/debug/wrappers.tar.xz"), false}, Case{(dir / "log").string(), false}}) {
    SCOPED_TRACE(c.folder);
    auto run = runSightline("report --format json " + trace + " --compiled-code '" + c.folder + "'", dir.string());
    ASSERT_EQ(run.code, 0) << run.out;
    json g = json::parse(run.out)["generated_code"];
    EXPECT_EQ(g["read_from"][0], c.folder) << g.dump();
    EXPECT_TRUE(g["missing_modules"].empty()) << g.dump();
    EXPECT_EQ(g["lineless_modules"].size(), c.lines ? 0u : 2u) << g.dump();
    EXPECT_EQ(g["mapped_calls"], c.lines ? 6 : 0) << g.dump();
    auto text = runSightline("report " + trace + " --compiled-code '" + c.folder + "'", dir.string());
    std::string compiled = headerLine(text.out, "Compiled  ");
    if (c.lines) {
      EXPECT_NE(compiled.find("on train_gpt.py:41, train_gpt.py:75, train_gpt.py:55 (model lines from the generated "
                              "code in " +
                              c.folder),
                std::string::npos)
          << compiled;
    } else {
      EXPECT_NE(compiled.find("as wrapper code only, which names no line of the model"), std::string::npos) << compiled;
      EXPECT_EQ(compiled.find("name that folder"), std::string::npos) << compiled;
    }
  }
  std::filesystem::remove_all(dir);
}

// A TORCH_TRACE folder holding another run's log beside the profiled run's (the GPT run's,
// pid 1039, two hours earlier, beside the breaks run's, pid 479): its compilation was counted as
// this run's ("forward (train_gpt.py:...)" in the summary). It is set aside, and said so.
TEST(CompiledReport, AnotherRunsTraceLogIsSetAside) {
  auto dir = std::filesystem::temp_directory_path() / ("sightline_two_logs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const char* tree : {"compile/breaks/trace.tar.xz", "compile/trace.tar.xz"})
    for (const auto& e : std::filesystem::directory_iterator(dataTree(tree) + "/trace"))
      std::filesystem::copy_file(e.path(), dir / e.path().filename());
  std::string script = testDataPath("compile/breaks/train_breaks.py");
  std::string args = "--profile '" + dataProfile("compile/breaks/breaks.sqlite.xz") + "' --compiled-code '" +
                     dataTree("compile/breaks/cache.tar.xz") + "/cache' --compiled-code '" + dir.string() + "' '" +
                     script + "'";
  auto run = runSightline("report " + args, sourcePath(""));
  auto j = runSightline("report --format json " + args, sourcePath(""));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run.code, 0) << run.out;
  std::string compile = headerLine(run.out, "Compile   ");
  EXPECT_NE(compile.find("forward (train_breaks.py:20): 10 compilations in 13.9 s"), std::string::npos) << compile;
  EXPECT_EQ(compile.find("train_gpt.py"), std::string::npos) << compile;
  EXPECT_NE(run.out.find("1 TORCH_TRACE log of another run, not counted (dedicated_log_torch_trace_jibf5pws.log: its "
                         "process (pid 1039) is not one of this profile's (479, 522))"),
            std::string::npos)
      << run.out;
  ASSERT_EQ(j.code, 0) << j.out;
  json doc = json::parse(j.out);
  ASSERT_EQ(doc["compile_logs"]["read"].size(), 1u) << doc["compile_logs"];
  EXPECT_NE(doc["compile_logs"]["read"][0].get<std::string>().find("csjfs0f6"), std::string::npos);
  ASSERT_EQ(doc["compile_logs"]["set_aside"].size(), 1u);
  EXPECT_NE(doc["compile_logs"]["set_aside"][0]["log"].get<std::string>().find("jibf5pws"), std::string::npos);
  for (const auto& f : doc["compiles"]) EXPECT_EQ(f.dump().find("train_gpt.py"), std::string::npos) << f.dump();
}

// A whole run that recompiles in its steps (compile/breaks): what compiling costs, the graph
// break and the recompiles, in the report's header and as `check` findings.
TEST(CompiledReport, CompileCostGraphBreaksAndRecompiles) {
  std::string script = testDataPath("compile/breaks/train_breaks.py");
  std::string code = " --compiled-code '" + dataTree("compile/breaks/cache.tar.xz") + "/cache' --compiled-code '" +
                     dataTree("compile/breaks/trace.tar.xz") + "/trace' '" + script + "'";
  std::string profile = "--profile '" + dataProfile("compile/breaks/breaks.sqlite.xz") + "'";
  auto run = runSightline("report " + profile + code, sourcePath(""));
  ASSERT_EQ(run.code, 0) << run.out;
  // Compiling is the program's own time, not the profiler's: the step without the profiler is at
  // least the GPU's work and the compiler's (the range's low end), and compiling is the first
  // cause as captured (338 ms/step).
  std::string unprofiled = headerLine(run.out, "Unprofiled ");
  EXPECT_NE(unprofiled.find("(the GPU's own work and torch.compile compiling per step)"), std::string::npos) << run.out;
  std::smatch compiling;
  ASSERT_TRUE(
      std::regex_search(run.out, compiling,
                        std::regex("\n(?:Waits     |          )as captured: torch.compile compiling ([0-9]+) ms/step "
                                   "\\(train_breaks.py:48 ")))
      << run.out;
  EXPECT_NEAR(std::stod(compiling[1]), 338, 50);
  EXPECT_NE(headerLine(run.out, "Try       ").find("stop forward (train_breaks.py:20) recompiling (8 recompiles"),
            std::string::npos)
      << run.out;
  std::string compile = headerLine(run.out, "Compile   ");
  EXPECT_NE(compile.find("forward (train_breaks.py:20): 10 compilations in 13.9 s, 2 graphs, graph break at line 22 "
                         "(Unsupported Tensor.item() call with capture_scalar_outputs=False; Dynamo's hint: Set "),
            std::string::npos)
      << compile;
  EXPECT_NE(compile.find("recompile limit (8) hit: runs uncompiled since"), std::string::npos) << compile;
  std::string oneoff = headerLine(run.out, "One-off   ");
  EXPECT_NE(oneoff.find("of it while torch.compile compiled"), std::string::npos) << oneoff;
  EXPECT_NE(oneoff.find(" compiling)"), std::string::npos) << oneoff;

  auto check = runSightline("check " + profile + code, sourcePath(""));
  EXPECT_NE(check.out.find("train_breaks.py:22:17: warning: torch.compile breaks the graph of `forward` here: "
                           "Unsupported Tensor.item() call"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("train_breaks.py:20:5: warning: torch.compile recompiled `forward` 8 times"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("while torch.compile compiled what this line calls"), std::string::npos) << check.out;
  // Dynamo's resume functions are not defs of the file: no mismatch between file and profile.
  EXPECT_EQ(check.out.find("profile-source-mismatch"), std::string::npos) << check.out;

  auto j = runSightline("report --format json " + profile + code, sourcePath(""));
  ASSERT_EQ(j.code, 0);
  auto doc = json::parse(j.out);
  ASSERT_EQ(doc["compiles"].size(), 1u);
  EXPECT_EQ(doc["compiles"][0]["recompiles"], 8);
  EXPECT_EQ(doc["compiles"][0]["graph_breaks"][0]["line"], 22);
  EXPECT_GT(doc["step_summary"]["waits"]["compile"]["ns"].get<int64_t>(), 0);
}

// Without TORCH_TRACE the profile's own frames still show the graph break: Dynamo's resume
// function for line 22 ran.
TEST(CompiledReport, GraphBreakFromTheProfileAlone) {
  std::string args = "--profile '" + dataProfile("compile/breaks/breaks.sqlite.xz") + "' '" +
                     testDataPath("compile/breaks/train_breaks.py") + "'";
  auto check = runSightline("check " + args, sourcePath(""));
  EXPECT_NE(check.out.find("train_breaks.py:22:17: warning: torch.compile breaks the graph of `forward` here (the "
                           "profile ran Dynamo's resume function for this line; a TORCH_TRACE=<dir> run records why)"),
            std::string::npos)
      << check.out;
  EXPECT_EQ(check.out.find("[recompiles]"), std::string::npos) << check.out;  // that needs the records
  auto report = runSightline("report " + args, sourcePath(""));
  EXPECT_NE(headerLine(report.out, "Compile   ")
                .find("forward (train_breaks.py): graph break at line 22 (Dynamo's resume function ran in the "
                      "profile); its reason and the compile cost are in a TORCH_TRACE folder"),
            std::string::npos)
      << report.out;
}

TEST(CompiledReport, AMissingFolderIsNotAnError) {
  auto run = runSightline("report " + args("compiled_run") + " --compiled-code /nonexistent/cache", sourcePath(""));
  EXPECT_EQ(run.code, 0) << run.out;
}

}  // namespace
}  // namespace sightline::testing
