// Text for a terminal from someone else's strings (a profile's GPU and file names, a summary's
// host and warnings, Python function names, nsys's own log): control characters written as
// visible escapes, so that none retitles the window, writes the clipboard or clears the screen.
// Escaped: C0 controls other than newline and tab, DEL, C1 controls (U+0080..U+009F) and every
// byte that is not part of valid UTF-8, each as `\x1b` (its byte or code point in hex). Valid
// UTF-8 otherwise passes as it is. Not for JSON, HTML or Markdown: their writers escape their own.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace sightline::server {

// `text` with its control characters and stray bytes escaped (the whole text: a sequence cut
// at its end is stray bytes).
std::string terminalSafe(std::string_view text);

// A stream that writes to `target` what it is given, escaped as terminalSafe does, sequence by
// sequence across writes (a character split between two writes passes whole). It follows the
// target's unitbuf (std::cerr's: each output operation written at once, so its lines keep their
// order with a child's). Its flush writes what it holds to the target and leaves flushing the
// target to the target's owner. A write the target refuses fails this stream too; the target
// keeps its failed state and errno is left as the failed write set it (a full disk stays an
// error with its reason). What it holds is written, a cut sequence escaped, when it goes or on
// finish().
class TerminalSafeStream : public std::ostream {
 public:
  explicit TerminalSafeStream(std::ostream& target);
  ~TerminalSafeStream() override;
  TerminalSafeStream(const TerminalSafeStream&) = delete;
  TerminalSafeStream& operator=(const TerminalSafeStream&) = delete;
  // Writes out what is held (a cut sequence escaped); false when the target failed.
  bool finish();

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& target) : target_(target) {}
    bool finish();

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    // Escapes `bytes` after what is pending into out_; keeps a cut sequence at the end pending.
    void take(std::string_view bytes);
    bool drain();
    std::ostream& target_;
    std::string pending_;  // the start of a UTF-8 sequence its next bytes may complete
    std::string out_;      // escaped, not yet written to the target
    bool failed_ = false;
  };
  Buffer buffer_;
};

}  // namespace sightline::server
