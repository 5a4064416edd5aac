// An editor's session on one document: the input's tail is the text, its head a run of
// didChange events with positions anywhere (up to 2^32 - 1, past the line, inside a
// character) in any position encoding, inserting text with "\n", "\r\n", lone "\r" and
// multi-byte characters. After each: the lines are the text's lines as LSP counts them, the
// incremental tree is the tree a fresh parse gives, and findings lie within the text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/source/line_index.h"
#include "analysis/source/source_file.h"
#include "server/workspace/document_store.h"

namespace {

using sightline::server::PositionEncoding;

uint32_t coordinate(uint8_t b) {
  if (b == 0xff) return UINT32_MAX;
  if (b == 0xfe) return UINT32_MAX / 2 + 1;
  return b % 24;
}

const char* const kInserts[] = {"",         "\n",
                                "\r",       "\r\n",
                                "x",        "for a in b:\n    a.item()\n",
                                "é",        "😀",
                                "\r\r\n\n", "    loss.backward()\r",
                                "\"\"\"",   "#",
                                ")",        "def f():\r  return 1\r"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kOp = 6;
  size_t ops = size > 0 ? std::min<size_t>(data[0] % 8, (size - 1) / kOp) : 0;
  size_t head = 1 + ops * kOp;
  if (size < head) return 0;
  std::string text(reinterpret_cast<const char*>(data + head), size - head);
  sightline::server::DocumentStore store;
  auto& doc = store.open("file:///f.py", 1, text);
  sightline::features::RuleConfig config;
  for (size_t i = 0; i < ops; ++i) {
    const uint8_t* op = data + 1 + i * kOp;
    sightline::protocol::TextDocumentContentChangeEvent change;
    change.range =
        sightline::protocol::Range{{coordinate(op[0]), coordinate(op[1])}, {coordinate(op[2]), coordinate(op[3])}};
    change.text = kInserts[op[4] % (sizeof kInserts / sizeof kInserts[0])];
    doc.applyChanges(static_cast<int64_t>(i) + 2, {change},
                     op[5] % 2 ? PositionEncoding::Utf8 : PositionEncoding::Utf16);
    const auto& now = doc.file();
    if (now.lines().lineCount() != sightline::source::countLineEnds(now.text()) + 1) __builtin_trap();
    sightline::source::SourceFile fresh(now.text());
    if (fresh.syntaxTreeString() != now.syntaxTreeString()) __builtin_trap();
    for (const auto& f : doc.findings(config, 1))
      if (f.range.begin > f.range.end || f.range.end > now.text().size()) __builtin_trap();
  }
  return 0;
}
