// Text for a terminal: every control character and stray byte escaped, valid UTF-8 kept, whole
// and as a stream cut anywhere, and a failed target still a failure.
#include "server/platform/terminal_text.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace sightline::server {
namespace {

TEST(TerminalText, EscapesControlsAndStrayBytes) {
  // What a crafted GPU name once did: retitle the window (OSC 0), write the clipboard (OSC 52),
  // clear the screen (CSI 2J).
  EXPECT_EQ(terminalSafe("H100\x1b]0;pwned\x07"), "H100\\x1b]0;pwned\\x07");
  EXPECT_EQ(terminalSafe("\x1b]52;c;ZWNobw==\x1b\\"), "\\x1b]52;c;ZWNobw==\\x1b\\");
  EXPECT_EQ(terminalSafe("\x1b[2J\x1b[H"), "\\x1b[2J\\x1b[H");
  EXPECT_EQ(terminalSafe(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminalSafe("a\rb\x7f\x08"), "a\\x0db\\x7f\\x08");
  // C1 controls, as UTF-8 (U+009B: CSI) and as the bare 8-bit byte.
  EXPECT_EQ(terminalSafe("x\xc2\x9b"
                         "2Jy"),
            "x\\x9b2Jy");
  EXPECT_EQ(terminalSafe("x\x9b"
                         "2J"),
            "x\\x9b2J");
  // Stray bytes: a lone continuation, an overlong form, a surrogate, past U+10FFFF, a cut end.
  EXPECT_EQ(terminalSafe("\x80"), "\\x80");
  EXPECT_EQ(terminalSafe("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(terminalSafe("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(terminalSafe("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(terminalSafe("ok\xe2\x82"), "ok\\xe2\\x82");
  EXPECT_EQ(terminalSafe("\xff"
                         "a"),
            "\\xffa");
}

TEST(TerminalText, KeepsTextAndValidUtf8) {
  std::string text = "line 1\tµs → 12.5 ms, Δ −3 %, 日本語, 🚀, U+00A0:\xc2\xa0\nnext\n";
  EXPECT_EQ(terminalSafe(text), text);
  EXPECT_EQ(terminalSafe(""), "");
}

TEST(TerminalText, AStreamEscapesSequencesCutBetweenWrites) {
  std::string text = "gpu \xe2\x86\x92 \x1b[31mred\xc2\x9b \xf0\x9f\x9a\x80 end\xff\n";
  std::string expected = terminalSafe(text);
  // Every way of cutting the text in two writes gives the whole text's escape.
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    std::ostringstream out;
    {
      TerminalSafeStream safe(out);
      safe << text.substr(0, cut);
      safe.flush();
      safe << text.substr(cut);
    }
    EXPECT_EQ(out.str(), expected) << "cut at " << cut;
  }
  // Byte by byte, through put().
  std::ostringstream out;
  TerminalSafeStream safe(out);
  for (char c : text) safe.put(c);
  EXPECT_TRUE(safe.finish());
  EXPECT_EQ(out.str(), expected);
  // A sequence cut at the very end is stray bytes once the stream is done.
  std::ostringstream cut;
  { TerminalSafeStream(cut) << "ab\xe2\x86"; }
  EXPECT_EQ(cut.str(), "ab\\xe2\\x86");
}

TEST(TerminalText, FollowsTheTargetsUnitbuf) {
  std::ostringstream out;
  out.setf(std::ios::unitbuf);
  TerminalSafeStream safe(out);
  safe << "one\x07\n";
  EXPECT_EQ(out.str(), "one\\x07\n") << "written at once, as std::cerr writes";
}

TEST(TerminalText, AFailedTargetIsAFailureWithItsErrno) {
  std::ofstream full("/dev/full");
  ASSERT_TRUE(full.is_open());
  TerminalSafeStream safe(full);
  errno = 0;
  safe << std::string(1 << 17, 'x') << "\x1b";
  safe.flush();
  EXPECT_FALSE(safe.good());
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_FALSE(safe.finish());
  EXPECT_FALSE(full.good()) << "the target keeps its failed state";
}

}  // namespace
}  // namespace sightline::server
