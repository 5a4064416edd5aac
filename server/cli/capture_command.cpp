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
#include "server/capture/capture_steps.h"
#include "server/capture/foreground_child.h"
#include "server/cli/command_line.h"
#include "server/platform/child_process.h"
#include "server/platform/output_file.h"

extern char** environ;

namespace sightline::server {

extern const char* const kCaptureHookScript;  // server/capture/sitecustomize.py, embedded

namespace {

namespace fs = std::filesystem;
using capture::CaptureWindow;

constexpr const char* kUsage =
    "usage: sightline capture [options] -- COMMAND...\n"
    "\n"
    "Runs COMMAND (python train.py ..., torchrun ... train.py ...) unmodified, with a hook that\n"
    "counts optimizer steps: after W warm-up steps it times K steps without any profiler (CUDA\n"
    "events, no synchronization added), then profiles M steps timed the same way, on every rank.\n"
    "Writes NAME.steps.json (the measured steps) beside the profile: NAME.sqlite (nsys) or\n"
    "NAME.rankR.pt.trace.json.gz (PyTorch profiler). docs/capture.md explains it.\n"
    "\n"
    "options:\n"
    "  -o, --output NAME    where the files go (default: sightline-capture in this folder)\n"
    "  --profiler nsys|torch|none\n"
    "                       the profiler of the M steps (default: nsys when it is found, else\n"
    "                       torch); none only times\n"
    "  --warmup W           optimizer steps before the clock starts (default 5, at least 1)\n"
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
    "sightline could not make it (no optimizer step seen, the run ended before the window, ...).\n";

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

// The capture's private folder (0700): the hook, the ranks' parts, the logs. Removed at the end.
class PrivateFolder {
 public:
  PrivateFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sightline-capture-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data())) path_ = buffer.data();
  }
  ~PrivateFolder() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool writeText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

// The files the user named, as paths relative to where they asked.
std::string besideOutput(const std::string& output_as_given, const std::string& file_name) {
  fs::path given(output_as_given);
  return (given.parent_path() / file_name).string();
}

}  // namespace

int runCaptureCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CaptureArgs parsed;
  if (auto code = parseCaptureArgs(args, parsed, out, err)) return *code;
  CaptureWindow& window = parsed.window;

  // The profiler.
  std::string nsys = parsed.nsys;
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
  window.profiler = parsed.profiler;
  if (window.profiler == "none") window.profiled = 0;
  if (window.profiler == "nsys") {
    nsys = fs::absolute(nsys).lexically_normal().string();
    putImporterOnPath(nsys);
  }

  // Where the files go: NAME without the suffixes we add, made absolute for the ranks.
  std::string output_given = parsed.output;
  for (const char* suffix : {".steps.json", ".nsys-rep", ".sqlite"}) {
    std::string s = suffix;
    if (output_given.size() > s.size() && output_given.compare(output_given.size() - s.size(), s.size(), s) == 0)
      output_given.resize(output_given.size() - s.size());
  }
  std::error_code ec;
  fs::path name = fs::absolute(output_given, ec).lexically_normal();
  std::string steps_path = name.string() + ".steps.json";
  if (std::string problem = checkOutputPath(steps_path, {}); !problem.empty()) {
    err << "sightline capture: " << problem << "\n";
    return 2;
  }

  PrivateFolder folder;
  if (folder.path().empty()) {
    err << "sightline capture: cannot make a private folder under $TMPDIR or /tmp\n";
    return 2;
  }
  fs::path hook_dir = fs::path(folder.path()) / "hook", parts_dir = fs::path(folder.path()) / "parts";
  fs::create_directory(hook_dir, ec);
  fs::create_directory(parts_dir, ec);
  if (ec || !writeText(hook_dir / "sitecustomize.py", kCaptureHookScript)) {
    err << "sightline capture: cannot write the hook into " << folder.path() << "\n";
    return 2;
  }

  // The command's environment: ours, the hook first on PYTHONPATH, the window in variables.
  std::string marker = "SIGHTLINE_CAPTURE_DIR=" + parts_dir.string();
  std::vector<std::string> env;
  std::string python_path = hook_dir.string();
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
  env.push_back("SIGHTLINE_CAPTURE_TRACE=" + name.string());
  env.push_back(std::string("SIGHTLINE_CAPTURE_STOP_AFTER=") + (parsed.stop_after ? "1" : "0"));
  bool window_nvtx = window.profiler == "nsys" && parsed.autograd_nvtx == "window";
  env.push_back(std::string("SIGHTLINE_CAPTURE_AUTOGRAD_NVTX=") + (window_nvtx ? "1" : "0"));

  std::vector<std::string> argv;
  if (window.profiler == "nsys") {
    argv = {nsys, "profile", "--trace=cuda,nvtx,osrt"};
    if (parsed.autograd_nvtx == "nsys") argv.emplace_back("--pytorch=autograd-nvtx");
    for (const char* flag : {"--python-backtrace=cuda", "--cudabacktrace=all", "--capture-range=cudaProfilerApi",
                             "--capture-range-end=stop", "--force-overwrite=true"})
      argv.emplace_back(flag);
    argv.push_back("--output=" + name.string());
  }
  argv.insert(argv.end(), parsed.command.begin(), parsed.command.end());

  err << "sightline capture: " << window.warmup << " warm-up steps, " << window.timed << " timed";
  if (window.profiled > 0) err << ", " << window.profiled << " profiled with " << window.profiler;
  if (window.profiler == "nsys") err << " (" << nsys << ")";
  err << (parsed.stop_after ? "; the run stops after them" : "") << "\n";
  err.flush();

  capture::InterruptGuard guard;
  capture::ForegroundResult run = capture::runForeground(argv, env, marker);
  if (!run.started) {
    err << "sightline capture: " << run.error << "\n";
    return 2;
  }
  int command_code = run.exit_code;
  int interrupts = capture::InterruptGuard::interrupts();

  capture::CaptureParts parts = capture::readCaptureParts(parts_dir.string(), window);
  for (const auto& w : parts.warnings) err << "sightline capture: " << w << "\n";
  if (parts.warnings_left_out > 0)
    err << "sightline capture: ... and " << parts.warnings_left_out << " more warnings of the parts\n";
  auto failed = [&](int own) { return command_code != 0 ? command_code : own; };
  if (interrupts > 0 && parts.ranks.empty()) {
    // Stopped by the user before any window was complete: nothing to write, no advice.
    err << "sightline capture: interrupted before the window was complete; nothing written\n";
    return command_code != 0 ? command_code : 130;
  }
  if (command_code != 0)
    err << "sightline capture: the command ended with exit code " << command_code
        << (run.signal ? " (signal " + std::to_string(run.signal) + ")" : std::string()) << "\n";
  if (parts.ranks.empty()) {
    std::string why = capture::explainMissingWindow(window, parts.statuses);
    err << "sightline capture: no steps file written: " << why << "\n";
    return failed(2);
  }
  // Every rank that stepped should have written its part.
  for (const auto& s : parts.statuses)
    if (s.steps > 0 && !s.written)
      err << "sightline capture: pid " << s.pid << (s.rank >= 0 ? " (rank " + std::to_string(s.rank) + ")" : "")
          << " made " << s.steps << " steps and wrote no window" << (s.error.empty() ? std::string() : ": " + s.error)
          << "\n";

  // The profile(s).
  std::vector<std::string> profiles;
  std::string base = name.filename().string();
  if (window.profiler == "nsys") {
    std::string report = name.string() + ".nsys-rep", sqlite = name.string() + ".sqlite";
    if (!fs::exists(report, ec)) {
      err << "sightline capture: nsys wrote no report " << report << "\n";
      return failed(2);
    }
    err << "sightline capture: exporting " << besideOutput(parsed.output, base + ".nsys-rep") << " to SQLite\n";
    err.flush();
    ChildLimits limits;
    limits.timeout_s = 3600;
    // Another Ctrl-C stops the export too.
    limits.cancelled = [interrupts] { return capture::InterruptGuard::interrupts() > interrupts; };
    std::string log = (fs::path(folder.path()) / "export.log").string();
    ChildResult exported = runChild({nsys, "export", "--type=sqlite", "--include-blobs=true", "--force-overwrite=true",
                                     "--output=" + sqlite, report},
                                    log, limits);
    if (!exported.started || exported.exit_code != 0 || !fs::exists(sqlite, ec)) {
      std::ifstream in(log);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      err << "sightline capture: nsys export failed (" << (exported.error.empty() ? "no file" : exported.error) << ")\n"
          << text.substr(0, 4000);
      return failed(2);
    }
    profiles.push_back(base + ".sqlite");
  } else if (window.profiler == "torch") {
    for (const auto& r : parts.ranks) {
      if (r.trace.empty() || !fs::exists(name.parent_path() / r.trace, ec)) {
        err << "sightline capture: rank " << r.rank << " wrote no trace\n";
        continue;
      }
      profiles.push_back(r.trace);
    }
  }

  auto doc = capture::stepsDocument(window, parsed.command, profiles, parts.ranks);
  std::string error;
  if (!writeOutputFile(steps_path, capture::formatStepsDocument(doc), {}, error)) {
    err << "sightline capture: " << error << "\n";
    return failed(2);
  }
  capture::writeRanksSummary(window, parts.ranks, err);
  std::string written = besideOutput(parsed.output, base + ".steps.json");
  for (const auto& p : profiles) written += ", " + besideOutput(parsed.output, p);
  err << "sightline capture: wrote " << written << "\n";
  if (!profiles.empty()) {
    std::string script;
    for (const auto& word : parsed.command)
      if (word.size() > 3 && word.compare(word.size() - 3, 3, ".py") == 0) {
        script = word;
        break;
      }
    err << "  sightline report";
    for (const auto& p : profiles) err << " --profile " << features::shellWord(besideOutput(parsed.output, p));
    err << (script.empty() ? std::string(" --format json") : " " + features::shellWord(script)) << "\n";
  }
  return command_code;
}

}  // namespace sightline::server
