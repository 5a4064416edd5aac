// A capture whose backward pass lost its GPU records, made from a real one: the resnet capture
// of `sightline capture` with the kernels of the autograd engine's thread deleted (an ImageNet
// capture lost all of that thread's on its own). For the tests of issue 55's lost records.
#pragma once

#include <string>

namespace sightline::testing {

// Writes `dir`/lost.sqlite and its steps file lost.steps.json; returns the export's path, or ""
// with a message in `error`.
std::string craftLostBackwardCapture(const std::string& dir, std::string& error);

}  // namespace sightline::testing
