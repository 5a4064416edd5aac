// The capture verb: options, the hook written to a private folder, the command run (inside
// `nsys profile` when that is the profiler), the report exported, the ranks' parts merged.
#include "server/cli/capture_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/features/profile_commands.h"
#include "server/capture/capture_files.h"
#include "server/capture/capture_steps.h"
#include "server/capture/foreground_child.h"
#include "server/capture/watchdog.h"
#include "server/cli/command_line.h"
#include "server/platform/child_process.h"
#include "server/platform/output_file.h"

extern char** environ;

namespace sightline::server {

extern const char* const kCaptureHookScript;  // server/capture/sitecustomize.py, embedded

namespace {

namespace fs = std::filesystem;
using capture::CaptureName;
using capture::CaptureWindow;

constexpr const char* kUsage =
    "usage: sightline capture [options] -- COMMAND...\n"
    "\n"
    "Runs COMMAND (python train.py ..., torchrun ... train.py ...) unmodified, with a hook that\n"
    "counts steps (optimizer steps; in a loop that steps no optimizer, backward() calls): after W\n"
    "warm-up steps it times K steps without any profiler (CUDA events, no synchronization added,\n"
    "the loop's wait for its DataLoader), then profiles M steps timed the same way, each marked\n"
    "ProfilerStep#N in the trace, on every rank.\n"
    "Writes NAME.steps.json (the measured steps) beside the profile: NAME.sqlite (nsys) or\n"
    "NAME.rankR.pt.trace.json.gz (PyTorch profiler). docs/capture.md explains it.\n"
    "\n"
    "options:\n"
    "  -o, --output NAME    where the files go (default: sightline-capture in this folder)\n"
    "  --profiler nsys|torch|none\n"
    "                       the profiler of the M steps (default: nsys when it is found, else\n"
    "                       torch); none only times\n"
    "  --warmup W           steps before the clock starts (default 5, at least 1)\n"
    "  --timed K            steps timed without a profiler (default 20)\n"
    "  --steps M            steps profiled (default 5)\n"
    "  --stop-after         end the run once the window is written (its exit code is then 0)\n"
    "  --nsys PATH          the nsys to use (default: PATH, then /opt/nvidia/nsight-systems*/bin)\n"
    "  --autograd-nvtx window|nsys\n"
    "                       under nsys, autograd's NVTX ranges (each op with its seq) are turned\n"
    "                       on by the hook for the profiled steps only (default), or by nsys\n"
    "                       --pytorch=autograd-nvtx for the whole run, timed steps included\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit code: the command's when it failed; else 0 when the steps file was written, 2 when\n"
    "sightline could not make it (no step seen, the run ended before the window, ...).\n";

struct CaptureArgs {
  CaptureWindow window;
  std::string output = "sightline-capture";
  std::string profiler = "auto";
  std::string nsys;
  bool stop_after = false;
  std::string autograd_nvtx = "window";  // who turns on autograd's NVTX ranges under nsys
  std::vector<std::string> command;
};

// A count option's value: a whole number in [low, 100000].
cli::CommandLine::ValueHandler countInto(int& into, int low, const std::string& name) {
  return [&into, low, name](const std::string& v) -> std::string {
    char* end = nullptr;
    long value = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || value < low || value > 100000)
      return name + " expects a whole number from " + std::to_string(low) + ", got \"" + v + "\"";
    into = static_cast<int>(value);
    return "";
  };
}

std::optional<int> parseCaptureArgs(const std::vector<std::string>& args, CaptureArgs& into, std::ostream& out,
                                    std::ostream& err) {
  // The command starts after "--", or at the first word that is not one of ours.
  static const std::set<std::string> with_value = {"-o",      "--output", "--profiler", "--warmup",
                                                   "--timed", "--steps",  "--nsys",     "--autograd-nvtx"};
  size_t split = args.size(), resume = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      split = i;
      resume = i + 1;
      break;
    }
    if (with_value.count(args[i])) {
      ++i;
      continue;
    }
    if (args[i].empty() || args[i][0] != '-') {
      split = resume = i;
      break;
    }
  }
  std::vector<std::string> ours(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(split));
  into.command.assign(args.begin() + static_cast<std::ptrdiff_t>(resume), args.end());
  cli::CommandLine command_line("capture", kUsage);
  command_line.option("--output", cli::valueInto(into.output))
      .option("-o", cli::valueInto(into.output))
      .option("--profiler", cli::choiceInto(into.profiler, {"nsys", "torch", "none"}, "profiler"))
      .option("--warmup", countInto(into.window.warmup, 1, "--warmup"))
      .option("--timed", countInto(into.window.timed, 1, "--timed"))
      .option("--steps", countInto(into.window.profiled, 1, "--steps"))
      .option("--nsys", cli::valueInto(into.nsys))
      .option("--autograd-nvtx", cli::choiceInto(into.autograd_nvtx, {"window", "nsys"}, "autograd-nvtx"))
      .flag("--stop-after", [&into] { into.stop_after = true; });
  if (auto code = command_line.parse(ours, out, err)) return code;
  if (into.command.empty()) {
    err << "sightline capture: name the command to run after --\n" << kUsage;
    return 2;
  }
  if (into.output.empty()) {
    err << "sightline capture: --output is empty\n";
    return 2;
  }
  return std::nullopt;
}

bool isExecutable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

// nsys on PATH, else the usual install folders (newest version first).
std::string findNsys() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && isExecutable(fs::path(dir) / "nsys")) return (fs::path(dir) / "nsys").string();
  }
  std::vector<fs::path> found;
  std::error_code ec;
  auto look = [&](const fs::path& root, const std::string& prefix, const fs::path& rest) {
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.rfind(prefix, 0) == 0 && isExecutable(it->path() / rest)) found.push_back(it->path() / rest);
    }
    ec.clear();
  };
  look("/opt/nvidia", "nsight-systems", "bin/nsys");
  look("/opt/nvidia/nsight-systems", "", "bin/nsys");
  look("/opt/nvidia/nsight-compute", "", "host/target-linux-x64/nsys");
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) { return a.string() > b.string(); });
  if (!found.empty()) return found.front().string();
  if (isExecutable("/usr/local/cuda/bin/nsys")) return "/usr/local/cuda/bin/nsys";
  return "";
}

// An nsys outside a full Nsight Systems install (Nsight Compute's copy) finds its importer,
// which turns a capture into a report, only on PATH: put the folder there for it and its export.
void putImporterOnPath(const std::string& nsys) {
  fs::path host = fs::path(nsys).parent_path().parent_path();
  std::error_code ec;
  for (fs::directory_iterator it(host, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("linux-desktop-", 0) == 0 && isExecutable(it->path() / "QdstrmImporter")) {
      const char* old = std::getenv("PATH");
      std::string path = it->path().string() + ":" + fs::path(nsys).parent_path().string();
      ::setenv("PATH", (old && *old ? path + ":" + old : path).c_str(), 1);
      return;
    }
  }
}

bool writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

// The profiler: nsys found (and checked) when it is asked for or there; 2 when it cannot be.
std::optional<int> chooseProfiler(CaptureArgs& parsed, std::string& nsys, std::ostream& err) {
  nsys = parsed.nsys;
  if (parsed.profiler == "auto" || parsed.profiler == "nsys") {
    if (nsys.empty()) nsys = findNsys();
    if (nsys.empty() && parsed.profiler == "nsys") {
      err << "sightline capture: nsys is not on PATH nor under /opt/nvidia (give it with --nsys PATH, or use "
             "--profiler torch)\n";
      return 2;
    }
    if (!nsys.empty() && !isExecutable(nsys)) {
      err << "sightline capture: " << nsys << " is not an executable\n";
      return 2;
    }
    parsed.profiler = nsys.empty() ? "torch" : "nsys";
  }
  parsed.window.profiler = parsed.profiler;
  if (parsed.window.profiler == "none") parsed.window.profiled = 0;
  if (parsed.window.profiler == "nsys") {
    nsys = fs::absolute(nsys).lexically_normal().string();
    putImporterOnPath(nsys);
  }
  return std::nullopt;
}

// The command's environment: ours, the hook first on PYTHONPATH, the window in variables.
std::vector<std::string> commandEnvironment(const CaptureArgs& parsed, const std::string& hook_dir,
                                            const std::string& marker, const std::string& trace_prefix) {
  const CaptureWindow& window = parsed.window;
  std::vector<std::string> env;
  std::string python_path = hook_dir;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("SIGHTLINE_CAPTURE_", 0) == 0) continue;  // a capture inside a capture: ours wins
    if (entry.rfind("PYTHONPATH=", 0) == 0) {
      if (entry.size() > 11) python_path += ":" + entry.substr(11);
      continue;
    }
    env.push_back(entry);
  }
  env.push_back("PYTHONPATH=" + python_path);
  env.push_back(marker);
  env.push_back("SIGHTLINE_CAPTURE_WARMUP=" + std::to_string(window.warmup));
  env.push_back("SIGHTLINE_CAPTURE_TIMED=" + std::to_string(window.timed));
  env.push_back("SIGHTLINE_CAPTURE_STEPS=" + std::to_string(window.profiled));
  env.push_back("SIGHTLINE_CAPTURE_PROFILER=" + window.profiler);
  // The traces go to the private folder first: NAME's files are written only after the run.
  env.push_back("SIGHTLINE_CAPTURE_TRACE=" + trace_prefix);
  env.push_back(std::string("SIGHTLINE_CAPTURE_STOP_AFTER=") + (parsed.stop_after ? "1" : "0"));
  bool window_nvtx = window.profiler == "nsys" && parsed.autograd_nvtx == "window";
  env.push_back(std::string("SIGHTLINE_CAPTURE_AUTOGRAD_NVTX=") + (window_nvtx ? "1" : "0"));
  return env;
}

std::vector<std::string> commandArgv(const CaptureArgs& parsed, const std::string& nsys, const CaptureName& name) {
  std::vector<std::string> argv;
  if (parsed.window.profiler == "nsys") {
    argv = {nsys, "profile", "--trace=cuda,nvtx,osrt"};
    if (parsed.autograd_nvtx == "nsys") argv.emplace_back("--pytorch=autograd-nvtx");
    // Graph nodes traced one by one: each replayed kernel keeps the line that made it (a
    // graph-level trace puts a whole replay on the compiled call's line).
    for (const char* flag : {"--python-backtrace=cuda", "--cudabacktrace=all", "--cuda-graph-trace=node",
                             "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--force-overwrite=true"})
      argv.emplace_back(flag);
    argv.push_back("--output=" + name.path);
  }
  argv.insert(argv.end(), parsed.command.begin(), parsed.command.end());
  return argv;
}

std::vector<std::string> exportArgv(const std::string& nsys, const std::string& sqlite, const std::string& report) {
  return {nsys,  "export", "--type=sqlite", "--include-blobs=true", "--force-overwrite=true", "--output=" + sqlite,
          report};
}

// Under nsys, NAME.nsys-rep exported to NAME.sqlite: the profile to list beside the steps, and
// 0, or the code to end with when the export was stopped (128 + the signal) or failed (2); then
// the steps file names the report, and `later` is the command that exports it.
struct Exported {
  std::string profile;
  int code = 0;
  std::string later;
};

Exported exportReport(const CaptureName& name, const std::string& nsys, const std::string& folder,
                      const std::vector<std::string>& inputs, std::ostream& err) {
  std::string report = name.file(".nsys-rep"), sqlite = name.file(".sqlite");
  Exported out;
  out.profile = fs::path(sqlite).filename().string();
  err << "sightline capture: exporting " << name.shownFile(".nsys-rep") << " to SQLite\n";
  err.flush();
  ChildLimits limits;
  limits.timeout_s = 3600;
  // A signal during the export stops it (the window is kept all the same).
  int interrupts = capture::InterruptGuard::interrupts();
  limits.cancelled = [interrupts] { return capture::InterruptGuard::interrupts() > interrupts; };
  std::string log = (fs::path(folder) / "export.log").string();
  // Checked again now: the run may have made a link of the name meanwhile.
  std::string why = checkOutputPath(sqlite, inputs);
  ChildResult exported;
  if (why.empty()) exported = runChild(exportArgv(nsys, sqlite, report), log, limits);
  std::error_code ec;
  if (why.empty() && exported.started && exported.exit_code == 0 && fs::exists(sqlite, ec)) return out;
  out.profile = fs::path(report).filename().string();
  for (const auto& word : exportArgv(nsys, name.shownFile(".sqlite"), name.shownFile(".nsys-rep")))
    out.later += (out.later.empty() ? "" : " ") + features::shellWord(word);
  if (exported.cancelled) {
    out.code = 128 + std::max(1, capture::InterruptGuard::lastSignal());
    err << "sightline capture: the export was stopped\n";
    return out;
  }
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  out.code = 2;
  err << "sightline capture: nsys export failed ("
      << (!why.empty()             ? why
          : exported.error.empty() ? "no file"
                                   : exported.error)
      << ")\n"
      << text.substr(0, 4000);
  if (!text.empty() && text.back() != '\n') err << "\n";
  return out;
}

// Each rank's PyTorch profiler trace, moved from the private folder beside the steps file.
std::vector<std::string> moveTraces(const CaptureName& name, const std::string& traces_folder,
                                    const std::vector<capture::RankPart>& ranks, const std::vector<std::string>& inputs,
                                    std::ostream& err) {
  std::vector<std::string> profiles;
  std::string folder = fs::path(name.path).parent_path().string();
  for (const auto& r : ranks) {
    std::string why = r.trace.empty() ? "wrote no trace" : capture::moveTrace(traces_folder, r.trace, folder, inputs);
    if (!why.empty()) {
      err << "sightline capture: rank " << r.rank << " " << (r.trace.empty() ? why : "trace: " + why) << "\n";
      continue;
    }
    profiles.push_back(r.trace);
  }
  return profiles;
}

// The files beside the steps file, as the user named them.
std::string shownBeside(const CaptureName& name, const std::string& file_name) {
  return (fs::path(name.shown).parent_path() / file_name).string();
}

void printWritten(const CaptureArgs& parsed, const CaptureName& name, const std::vector<std::string>& profiles,
                  std::ostream& err) {
  std::string written = name.shownFile(".steps.json");
  for (const auto& p : profiles) written += ", " + shownBeside(name, p);
  err << "sightline capture: wrote " << written << "\n";
  if (profiles.empty()) return;
  std::string script;
  for (const auto& word : parsed.command)
    if (word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0) {
      script = word;
      break;
    }
  err << "  sightline report";
  for (const auto& p : profiles) err << " --profile " << features::shellWord(shownBeside(name, p));
  err << (script.empty() ? std::string(" --format json") : " " + features::shellWord(script)) << "\n";
}

void printPartWarnings(const capture::CaptureParts& parts, std::ostream& err) {
  for (const auto& w : parts.warnings) err << "sightline capture: " << w << "\n";
  if (parts.warnings_left_out > 0)
    err << "sightline capture: ... and " << parts.warnings_left_out << " more warnings of the parts\n";
}

// Where the run happens: the private folder with the hook in it, the parts' and traces' folders.
struct RunFolders {
  std::string hook, parts, traces;
};

std::optional<RunFolders> prepareFolders(const std::string& root, std::ostream& err) {
  RunFolders f{(fs::path(root) / "hook").string(), (fs::path(root) / "parts").string(),
               (fs::path(root) / "traces").string()};
  std::error_code ec;
  for (const auto& dir : {f.hook, f.parts, f.traces})
    if (!ec) fs::create_directory(dir, ec);
  if (ec || !writeText(fs::path(f.hook) / "sitecustomize.py", kCaptureHookScript)) {
    err << "sightline capture: cannot write the hook into " << root << "\n";
    return std::nullopt;
  }
  return f;
}

// What the run measured, after it: the parts read, the profile exported or the traces moved,
// the steps file written. The code to exit with.
int finishCapture(const CaptureArgs& parsed, const CaptureName& name, const std::string& nsys,
                  const std::string& private_folder, const RunFolders& folders, const capture::ForegroundResult& run,
                  const std::vector<std::string>& inputs, capture::Watchdog& watchdog, std::ostream& err) {
  const CaptureWindow& window = parsed.window;
  int command_code = run.exit_code;
  capture::CaptureParts parts = capture::readCaptureParts(folders.parts, window);
  printPartWarnings(parts, err);
  auto failed = [&](int own) { return command_code != 0 ? command_code : own; };
  if (capture::InterruptGuard::interrupts() > 0 && parts.ranks.empty()) {
    // Stopped by the user before any window was complete: nothing to write, no advice.
    err << "sightline capture: interrupted before the window was complete; nothing written\n";
    return command_code != 0 ? command_code : 130;
  }
  if (command_code != 0)
    err << "sightline capture: the command ended with exit code " << command_code
        << (run.signal ? " (signal " + std::to_string(run.signal) + ")" : std::string()) << "\n";
  if (parts.ranks.empty()) {
    err << "sightline capture: no steps file written: " << capture::explainMissingWindow(window, parts.statuses)
        << "\n";
    return failed(2);
  }
  // Every rank that stepped should have written its part.
  for (const auto& s : parts.statuses)
    if (s.steps > 0 && !s.written)
      err << "sightline capture: pid " << s.pid << (s.rank >= 0 ? " (rank " + std::to_string(s.rank) + ")" : "")
          << " made " << s.steps << " steps and wrote no window" << (s.error.empty() ? std::string() : ": " + s.error)
          << "\n";
  std::vector<std::string> profiles;
  Exported exported;
  std::error_code ec;
  if (window.profiler == "nsys") {
    if (!fs::exists(name.file(".nsys-rep"), ec)) {
      err << "sightline capture: nsys wrote no report " << name.shownFile(".nsys-rep") << "\n";
      return failed(2);
    }
    exported = exportReport(name, nsys, private_folder, inputs, err);
    profiles.push_back(exported.profile);
  } else if (window.profiler == "torch") {
    profiles = moveTraces(name, folders.traces, parts.ranks, inputs, err);
  }
  auto doc = capture::stepsDocument(window, parsed.command, profiles, parts.ranks);
  std::string error;
  if (!writeOutputFile(name.file(".steps.json"), capture::formatStepsDocument(doc), inputs, error)) {
    err << "sightline capture: " << error << "\n";
    return failed(2);
  }
  watchdog.stepsWritten();
  capture::writeRanksSummary(window, parts.ranks, err);
  printWritten(parsed, name, profiles, err);
  if (!exported.later.empty()) {
    err << "sightline capture: " << name.shownFile(".steps.json") << " names the report; export it later with:\n  "
        << exported.later << "\n";
    return failed(exported.code);
  }
  return command_code;
}

}  // namespace

int runCaptureCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CaptureArgs parsed;
  if (auto code = parseCaptureArgs(args, parsed, out, err)) return *code;
  std::string nsys;
  if (auto code = chooseProfiler(parsed, nsys, err)) return *code;
  const CaptureWindow& window = parsed.window;

  // Where the files go, checked before anything runs: a run of hours must not end in an error.
  std::string error;
  auto name = capture::resolveCaptureName(parsed.output, window.profiler == "nsys", error);
  if (!name) {
    err << "sightline capture: " << error << "\n";
    return 2;
  }
  // The command's own files are its inputs: no output of ours goes over one (or through a link).
  std::vector<std::string> inputs = capture::commandFiles(parsed.command);
  if (std::string why = capture::checkCaptureOutputs(*name, window.profiler, inputs); !why.empty()) {
    err << "sightline capture: " << why << "\n";
    return 2;
  }

  std::string note;
  capture::PrivateFolder folder(note);
  if (!note.empty()) err << "sightline capture: " << note << "\n";
  if (folder.path().empty()) {
    err << "sightline capture: cannot make a private folder under $TMPDIR or /tmp\n";
    return 2;
  }
  auto folders = prepareFolders(folder.path(), err);
  if (!folders) return 2;
  std::string marker = "SIGHTLINE_CAPTURE_DIR=" + folders->parts;
  std::string base = fs::path(name->path).filename().string();
  auto env = commandEnvironment(parsed, folders->hook, marker, (fs::path(folders->traces) / base).string());

  err << "sightline capture: " << window.warmup << " warm-up steps, " << window.timed << " timed";
  if (window.profiled > 0) err << ", " << window.profiled << " profiled with " << window.profiler;
  if (window.profiler == "nsys") err << " (" << nsys << ")";
  err << (parsed.stop_after ? "; the run stops after them" : "") << "\n";
  err.flush();

  // Should sightline itself be killed, the watchdog ends the command and keeps the window.
  capture::WatchdogPlan plan{folder.path(), folders->parts, folders->traces, marker,
                             window,        parsed.command, *name,           inputs};
  auto watchdog = capture::Watchdog::start(plan, error);
  if (!watchdog) {
    err << "sightline capture: " << error << "\n";
    return 2;
  }
  capture::InterruptGuard guard;
  capture::ForegroundResult run = capture::runForeground(commandArgv(parsed, nsys, *name), env, marker,
                                                         [&](pid_t group) { watchdog->commandStarted(group); });
  watchdog->commandEnded();
  if (!run.started) {
    err << "sightline capture: " << run.error << "\n";
    return 2;
  }
  return finishCapture(parsed, *name, nsys, folder.path(), *folders, run, inputs, *watchdog, err);
}

}  // namespace sightline::server
