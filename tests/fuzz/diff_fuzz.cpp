// `sightline diff` on any pair of summaries: the input is two documents split at the first NUL
// byte (base, then new), each as a summary file would hold it. Every format is rendered; never an
// abort, an exit code but 0, 1, 2 and 4, or a JSON document that does not parse; and no text a
// summary gave reaches the output with a line break or an escape sequence of its own.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "server/cli/diff_command.h"

namespace {

void write(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An empty folder to run in: SARIF looks for the files a summary names under it.
  static const bool moved = [] {
    std::string here = "/tmp/sightline_diff_fuzz_" + std::to_string(::getpid()) + "_cwd";
    std::filesystem::create_directories(here);
    return ::chdir(here.c_str()) == 0;
  }();
  (void)moved;
  static const std::string base = "/tmp/sightline_diff_fuzz_" + std::to_string(::getpid()) + "_base.json";
  static const std::string next = "/tmp/sightline_diff_fuzz_" + std::to_string(::getpid()) + "_new.json";
  const char* bytes = reinterpret_cast<const char*>(data);
  size_t split = 0;
  while (split < size && bytes[split] != '\0') ++split;
  write(base, bytes, split);
  if (split < size)
    write(next, bytes + split + 1, size - split - 1);
  else
    write(next, bytes, split);
  for (const char* format : {"text", "json", "markdown", "sarif", "html"}) {
    std::ostringstream out, err;
    int code = sightline::server::runDiffCommand(
        {"--fail-on", "step:+5%,line:+1ms,memory:+10%", "--lines", "0", "--format", format, base, next}, out, err);
    if (code != 0 && code != 1 && code != 2 && code != 4) __builtin_trap();
    if ((code == 0 || code == 1) && std::string(format) == "json" &&
        nlohmann::json::parse(out.str(), nullptr, false).is_discarded())
      __builtin_trap();
    if (std::string(format) == "text" && out.str().find('\x1b') != std::string::npos) __builtin_trap();
  }
  return 0;
}
