// nsys command lines for a script.
#include "analysis/features/profile_commands.h"

namespace sightline::features {

std::string shellWord(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

namespace {

bool opensCaptureWindow(const source::SourceIndex& index) {
  for (const auto& call : index.calls)
    if (call.resolved == "torch.cuda.profiler.start" || call.resolved == "torch.cuda.cudart" ||
        call.method == "cudaProfilerStart")
      return true;
  return false;
}

}  // namespace

NsysCommands nsysCommandsFor(const source::SourceIndex& index, const std::string& file_name,
                             const std::string& python) {
  NsysCommands out;
  std::string stem = file_name;
  if (auto dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  out.report = stem + "-profile";
  out.capture_range = opensCaptureWindow(index);
  // The options the Python backtraces and autograd ranges need (see docs/architecture.md).
  std::string profile =
      "nsys profile --trace=cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda --cudabacktrace=all";
  if (out.capture_range) profile += " --capture-range=cudaProfilerApi --capture-range-end=stop";
  profile += " --force-overwrite=true -o " + shellWord(out.report) + " " + python + " " + shellWord(file_name);
  out.commands.push_back(profile);
  out.commands.push_back("nsys export --type=sqlite --include-blobs=true --force-overwrite=true -o " +
                         shellWord(out.report + ".sqlite") + " " + shellWord(out.report + ".nsys-rep"));
  if (!out.capture_range)
    out.note =
        "The script opens no capture window, so the whole run is recorded. For a short profile, run `sightline "
        "capture -- " +
        python + " " + shellWord(file_name) +
        "` (it times steps without the profiler, then profiles a few, with no edit), or use the \"Time "
        "steps N..M, then profile\" action in the training loop and profile again.";
  return out;
}

}  // namespace sightline::features
