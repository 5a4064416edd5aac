// Control characters and stray bytes escaped for a terminal, whole or as a stream.
#include "server/platform/terminal_text.h"

#include <cerrno>
#include <cstdio>

namespace sightline::server {
namespace {

void escapeByte(unsigned value, std::string& out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", value & 0xffu);
  out += buf;
}

// The length of the valid UTF-8 sequence at `text[i]` (1 for a byte under 0x80), 0 when the
// bytes there are not one, or -1 when they could be the start of one that `text` cuts.
int sequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned lead = byte(i);
  if (lead < 0x80) return 1;
  int length = 0;
  unsigned low = 0x80, high = 0xbf;  // the range of the byte after the lead
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // no overlong forms
    if (lead == 0xed) high = 0x9f;  // no surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  for (int k = 1; k < length; ++k) {
    if (i + static_cast<size_t>(k) >= text.size()) return -1;
    unsigned b = byte(i + static_cast<size_t>(k));
    if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xbf)) return 0;
  }
  return length;
}

// Escapes `text` into `out`; returns how many bytes were taken. Unless `whole`, a sequence cut
// at the end is left for the next call.
size_t escapeInto(std::string_view text, std::string& out, bool whole) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    int length = sequenceLength(text, i);
    if (length < 0 && !whole) return i;
    if (length <= 0) {
      escapeByte(c, out);  // a stray byte: the next one starts afresh
      ++i;
    } else if (length == 1) {
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
        escapeByte(c, out);
      else
        out += static_cast<char>(c);
      ++i;
    } else {
      auto second = static_cast<unsigned char>(text[i + 1]);
      if (c == 0xc2 && second < 0xa0)
        escapeByte(second, out);  // a C1 control, U+0080..U+009F: its code point
      else
        out.append(text.substr(i, static_cast<size_t>(length)));
      i += static_cast<size_t>(length);
    }
  }
  return i;
}

}  // namespace

std::string terminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  escapeInto(text, out, true);
  return out;
}

void TerminalSafeStream::Buffer::take(std::string_view bytes) {
  if (pending_.empty()) {
    size_t used = escapeInto(bytes, out_, false);
    pending_.assign(bytes.substr(used));
    return;
  }
  pending_.append(bytes);
  size_t used = escapeInto(pending_, out_, false);
  pending_.erase(0, used);
}

bool TerminalSafeStream::Buffer::drain() {
  if (failed_) return false;
  if (!out_.empty()) {
    target_.write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }
  if (!target_) failed_ = true;
  return !failed_;
}

TerminalSafeStream::Buffer::int_type TerminalSafeStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  char byte = traits_type::to_char_type(c);
  return xsputn(&byte, 1) == 1 ? c : traits_type::eof();
}

std::streamsize TerminalSafeStream::Buffer::xsputn(const char* s, std::streamsize n) {
  if (failed_) return 0;
  take(std::string_view(s, static_cast<size_t>(n)));
  if (out_.size() >= (1u << 14) && !drain()) return 0;
  return n;
}

// What is held goes to the target; flushing the target is its owner's (std::cerr flushes each
// write itself; std::cout is flushed where its errno is read, and a flush here would leave it
// failed with the errno long gone).
int TerminalSafeStream::Buffer::sync() { return drain() ? 0 : -1; }

bool TerminalSafeStream::Buffer::finish() {
  if (!pending_.empty()) {
    escapeInto(pending_, out_, true);
    pending_.clear();
  }
  return sync() == 0;
}

TerminalSafeStream::TerminalSafeStream(std::ostream& target) : std::ostream(nullptr), buffer_(target) {
  rdbuf(&buffer_);
  if (target.flags() & std::ios::unitbuf) setf(std::ios::unitbuf);
}

TerminalSafeStream::~TerminalSafeStream() {
  int saved = errno;
  bool failed = !buffer_.finish();
  if (!failed) errno = saved;  // a failed write's errno is the one kept
}

bool TerminalSafeStream::finish() {
  bool ok = buffer_.finish();
  if (!ok) setstate(std::ios::badbit);
  return ok && good();
}

}  // namespace sightline::server
