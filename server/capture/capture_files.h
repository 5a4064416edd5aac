// Where `sightline capture` puts things (docs/capture.md): NAME from -o, checked before the
// command runs (a folder that takes files, no name nsys would rewrite, no output over one of the
// command's own files), the private folder under $TMPDIR, and the PyTorch profiler's traces
// moved beside the steps file once the run is over. Not the steps file's contents
// (capture_steps.h) nor the command's process (foreground_child.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sightline::server::capture {

// NAME: the files are NAME.steps.json, NAME.nsys-rep, NAME.sqlite, NAME.rankR.pt.trace.json.gz.
struct CaptureName {
  std::string path;   // absolute, without the suffixes we add
  std::string shown;  // as the user wrote it (relative where they gave it so), for messages
  // NAME with `suffix` appended: absolute, and as shown.
  std::string file(const std::string& suffix) const { return path + suffix; }
  std::string shownFile(const std::string& suffix) const { return shown + suffix; }
};

// -o as given into NAME: the suffixes we add are taken off; a folder (".", "dir/", an existing
// folder) gets NAME sightline-capture in it; under nsys a `%` is refused (nsys expands %p,
// %q{VAR}, %h ... in its output name, and the report would not be where sightline looks). The
// folder must exist and take a new file (tried with a file made and removed). nullopt with
// `error` saying why.
std::optional<CaptureName> resolveCaptureName(const std::string& given, bool nsys, std::string& error);

// The command's own files: each word (and each value after `=` in `--option=value`) that names
// an existing file. A capture's outputs may be none of them.
std::vector<std::string> commandFiles(const std::vector<std::string>& command);

// "" when NAME's files that the run writes (the steps file; under nsys the report and its export)
// may be written: none is one of `inputs` (also through a link), a folder or a special file.
std::string checkCaptureOutputs(const CaptureName& name, const std::string& profiler,
                                const std::vector<std::string>& inputs);

// The capture's private folder (0700): the hook, the ranks' parts, the traces until they are
// moved, the logs. Made under $TMPDIR when that is an absolute or relative folder (made absolute)
// with no ':' in it (a ':' would split PYTHONPATH, and the hook would not run), else under /tmp;
// `note` then says why. Removed with what it holds when this goes.
class PrivateFolder {
 public:
  explicit PrivateFolder(std::string& note);
  ~PrivateFolder();
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const std::string& path() const { return path_; }  // "" when none could be made

 private:
  std::string path_;
};

// The trace `file_name` of the private folder `from` moved to `to_folder` (renamed, or copied
// through a checked output file and removed): never over one of `inputs`. "" when done, else why not.
std::string moveTrace(const std::string& from, const std::string& file_name, const std::string& to_folder,
                      const std::vector<std::string>& inputs);

}  // namespace sightline::server::capture
