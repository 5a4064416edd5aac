// nsys command lines for our profiled scripts: the one that opens a cudaProfilerApi window gets
// a capture range, the one that does not gets the whole run and a note.
#include "analysis/features/profile_commands.h"

#include <gtest/gtest.h>

#include "tests/support/test_paths.h"

namespace sightline::features {
namespace {

NsysCommands commandsFor(const std::string& relative, const std::string& name) {
  source::SourceFile file(testing::readFile(testing::testDataPath(relative)));
  return nsysCommandsFor(source::buildSourceIndex(file), name);
}

TEST(ProfileCommands, ScriptWithACaptureWindow) {
  auto c = commandsFor("h200/nsys/train_small.py", "train_small.py");
  EXPECT_TRUE(c.capture_range);
  ASSERT_EQ(c.commands.size(), 2u);
  EXPECT_EQ(c.commands[0],
            "nsys profile --trace=cuda,nvtx,osrt --pytorch=autograd-nvtx --python-backtrace=cuda --cudabacktrace=all "
            "--capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite=true -o train_small-profile "
            "python3 train_small.py");
  EXPECT_EQ(c.commands[1],
            "nsys export --type=sqlite --include-blobs=true --force-overwrite=true -o train_small-profile.sqlite "
            "train_small-profile.nsys-rep");
  EXPECT_TRUE(c.note.empty());
}

TEST(ProfileCommands, ScriptWithoutOneIsRecordedWholeAndQuoted) {
  auto c = commandsFor("h200/kineto/train_small.py", "my train.py");
  EXPECT_FALSE(c.capture_range);
  EXPECT_EQ(c.commands[0].find("--capture-range"), std::string::npos);
  EXPECT_NE(c.commands[0].find("-o 'my train-profile' python3 'my train.py'"), std::string::npos) << c.commands[0];
  EXPECT_NE(c.note.find("sightline capture -- python3 'my train.py'"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("\"Time steps N..M, then profile\" action"), std::string::npos) << c.note;
}

}  // namespace
}  // namespace sightline::features
