// Python snippets with expectations in comment lines (STYLE.md):
//     x = x.to(device)
// #       ^^^^^^^^^^^^ missing-non-blocking
// The carets mark byte columns of the nearest code line above; the word after them is the
// expected diagnostic code. A `$0` in the code marks a cursor (removed from the text).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "analysis/source/line_index.h"

namespace sightline::testing {

struct Expectation {
  uint32_t line = 0;  // 0-based line in `text`
  uint32_t begin_column = 0;
  uint32_t end_column = 0;  // exclusive
  std::string code;
  bool operator<(const Expectation& o) const;
  bool operator==(const Expectation& o) const;
};

struct AnnotatedSource {
  std::string text;  // with `$0` removed, annotation lines kept (they are comments)
  std::vector<Expectation> expected;
  int cursor = -1;  // byte offset of `$0`, -1 when absent
};

// For gtest messages.
void PrintTo(const Expectation& e, std::ostream* os);

AnnotatedSource parseAnnotatedSource(const std::string& annotated);
std::string describe(const std::vector<Expectation>& list);

}  // namespace sightline::testing
