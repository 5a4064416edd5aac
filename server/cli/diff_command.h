// `sightline diff BASE NEW`: the regression gate (analysis/features/regression.h) over two runs,
// each a rank summary (`report --format summary`), a folder of them, or a profile.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sightline::server {

// Exit codes: 0 within the thresholds (or none given), 1 a threshold exceeded with confidence,
// 2 bad input, 4 runs that cannot be compared.
inline constexpr int kDiffIncomparable = 4;

int runDiffCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sightline::server
