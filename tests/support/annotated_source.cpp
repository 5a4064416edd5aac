// Annotation parsing for data-driven feature tests.
#include "tests/support/annotated_source.h"

#include <sstream>
#include <tuple>

namespace sightline::testing {

bool Expectation::operator<(const Expectation& o) const {
  return std::tie(line, begin_column, end_column, code) < std::tie(o.line, o.begin_column, o.end_column, o.code);
}
bool Expectation::operator==(const Expectation& o) const {
  return std::tie(line, begin_column, end_column, code) == std::tie(o.line, o.begin_column, o.end_column, o.code);
}

AnnotatedSource parseAnnotatedSource(const std::string& annotated) {
  AnnotatedSource out;
  std::string text = annotated;
  if (auto at = text.find("$0"); at != std::string::npos) {
    out.cursor = static_cast<int>(at);
    text.erase(at, 2);
  }
  out.text = text;
  std::istringstream lines(text);
  std::string line;
  uint32_t number = 0;
  int last_code_line = -1;
  while (std::getline(lines, line)) {
    auto first = line.find_first_not_of(" \t");
    bool annotation = false;
    if (first != std::string::npos && line[first] == '#') {
      auto caret = line.find('^', first);
      auto other = line.find_first_not_of(" \t", first + 1);
      if (caret != std::string::npos && other == caret && last_code_line >= 0) {
        annotation = true;
        auto end = line.find_first_not_of('^', caret);
        std::string code = line.substr(end);
        code.erase(0, code.find_first_not_of(' '));
        code.erase(code.find_last_not_of(" \r") + 1);
        out.expected.push_back(
            {static_cast<uint32_t>(last_code_line), static_cast<uint32_t>(caret), static_cast<uint32_t>(end), code});
      }
    }
    if (!annotation) last_code_line = static_cast<int>(number);
    ++number;
  }
  return out;
}

void PrintTo(const Expectation& e, std::ostream* os) {
  *os << "line " << e.line + 1 << " cols " << e.begin_column << "-" << e.end_column << " " << e.code;
}

std::string describe(const std::vector<Expectation>& list) {
  std::ostringstream s;
  for (const auto& e : list)
    s << "  line " << e.line + 1 << " cols " << e.begin_column << "-" << e.end_column << " " << e.code << "\n";
  return s.str();
}

}  // namespace sightline::testing
