// Which files are the user's: sightline capture's hook (its wrappers of backward() and of the
// DataLoader sit on the program's stacks) never is, whatever calls through it.
#include "analysis/attribution/user_files.h"

#include <gtest/gtest.h>

#include "analysis/attribution/attribution.h"

namespace sightline::attribution {
namespace {

TEST(UserFiles, TheCaptureHooksFolderIsNotTheUsers) {
  EXPECT_TRUE(isCaptureHookFile("/tmp/sightline-capture-Ab12Cd/hook/sitecustomize.py"));
  EXPECT_TRUE(isCaptureHookFile("/scratch/u/tmp/sightline-capture-000xyz/hook/sitecustomize.py"));
  EXPECT_FALSE(isDefaultUserFile("/tmp/sightline-capture-Ab12Cd/hook/sitecustomize.py"));
  // Folders that only look like it stay the user's: another length, a name that ends so, a file.
  for (const char* path : {"/home/u/sightline-capture-tests/train.py", "/home/u/my-sightline-capture-Ab12Cd/train.py",
                           "/home/u/sightline-capture-Ab12C/train.py", "/home/u/sightline-capture-Ab12Cd.py",
                           "/home/u/sightline-capture-Ab.2Cd/train.py", "sightline-capture-Ab12Cd"}) {
    EXPECT_FALSE(isCaptureHookFile(path)) << path;
    EXPECT_TRUE(isDefaultUserFile(path)) << path;
  }
  EXPECT_TRUE(isCaptureHookFile("sightline-capture-Ab12Cd/hook/sitecustomize.py")) << "a relative path";
}

// A kernel launched inside backward(), with the hook's wrapper between torch and the user's
// line: the line is the user's `loss.backward()`, never the hook's.
TEST(UserFiles, AKernelLaunchedThroughTheHookIsChargedToTheUsersLine) {
  model::Profile p;
  p.info.format = "nsys-sqlite";
  auto function = p.strings.intern("backward");
  p.frames = {{function, p.strings.intern("/usr/lib/python3/dist-packages/torch/_tensor.py"), 626},
              {function, p.strings.intern("/tmp/sightline-capture-Ab12Cd/hook/sitecustomize.py"), 140},
              {p.strings.intern("<module>"), p.strings.intern("/work/train.py"), 40}};
  model::ApiCall launch;
  launch.start_ns = 1000, launch.end_ns = 1100, launch.correlation = 7, launch.pid = 1, launch.tid = 1;
  launch.name = p.strings.intern("cudaLaunchKernel"), launch.launches = true;
  p.api_calls = {launch};
  model::GpuActivity kernel;
  kernel.start_ns = 2000, kernel.end_ns = 5000, kernel.correlation = 7, kernel.pid = 1;
  kernel.name = p.strings.intern("k");
  p.activities = {kernel};
  model::PythonMark mark;
  mark.time_ns = 1000, mark.pid = 1, mark.tid = 1, mark.first_frame = 0, mark.frame_count = 3;
  p.marks = {mark};
  Attribution a = attribute(p);
  std::map<std::string, int64_t> charged;
  for (const auto& [file, lines] : a.files)
    for (const auto& [line, cost] : lines) charged[p.strings[file] + ":" + std::to_string(line)] += cost.gpu_ns;
  EXPECT_EQ(charged, (std::map<std::string, int64_t>{{"/work/train.py:40", 3000}}));
}

}  // namespace
}  // namespace sightline::attribution
