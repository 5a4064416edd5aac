// MessageFramer: header blocks end at "\r\n\r\n"; a Content-Length line is found anywhere in
// the block (case-insensitive), so junk left before a header by a bad length is skipped.
#include "server/lsp/framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace sightline::server {
namespace {

std::optional<size_t> findContentLength(std::string_view header, bool& malformed) {
  static constexpr std::string_view kName = "content-length:";
  std::string lower(header);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  auto at = lower.rfind(kName);
  if (at == std::string::npos) return std::nullopt;
  std::string_view rest = header.substr(at + kName.size());
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  size_t value = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (ec != std::errc() || ptr == rest.data()) {
    malformed = true;
    return std::nullopt;
  }
  std::string_view tail(ptr, static_cast<size_t>(rest.data() + rest.size() - ptr));
  auto eol = tail.find("\r\n");
  std::string_view line_tail = tail.substr(0, eol);
  if (line_tail.find_first_not_of(" \t") != std::string_view::npos) {
    malformed = true;
    return std::nullopt;
  }
  return value;
}

}  // namespace

void MessageFramer::feed(std::string_view bytes) {
  if (skip_remaining_ > 0) {
    size_t drop = std::min(skip_remaining_, bytes.size());
    skip_remaining_ -= drop;
    bytes.remove_prefix(drop);
  }
  buffer_.append(bytes);
}

void MessageFramer::compact() {
  if (start_ > 0 && (start_ > (size_t{1} << 20) || start_ == buffer_.size())) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
}

std::optional<FrameEvent> MessageFramer::next() {
  for (;;) {
    if (in_body_) {
      if (buffer_.size() - start_ < body_length_) return std::nullopt;
      FrameEvent event{FrameEvent::Kind::Message, buffer_.substr(start_, body_length_)};
      start_ += body_length_;
      in_body_ = false;
      compact();
      return event;
    }
    std::string_view pending(buffer_.data() + start_, buffer_.size() - start_);
    auto end = pending.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (pending.size() <= kMaxHeaderBytes) return std::nullopt;
      // No header terminator in a long run of bytes: drop them, keeping a possible header start.
      size_t keep = std::min<size_t>(pending.size(), 64);
      start_ = buffer_.size() - keep;
      compact();
      return FrameEvent{FrameEvent::Kind::Error, "discarded bytes that hold no message header"};
    }
    std::string_view header = pending.substr(0, end);
    start_ += end + 4;
    bool malformed = false;
    auto length = findContentLength(header, malformed);
    if (!length) {
      compact();
      return FrameEvent{FrameEvent::Kind::Error,
                        malformed ? "malformed Content-Length header" : "header block without Content-Length"};
    }
    if (*length > max_message_bytes_) {
      size_t available = std::min(*length, buffer_.size() - start_);
      start_ += available;
      skip_remaining_ = *length - available;
      compact();
      return FrameEvent{FrameEvent::Kind::Error, "message of " + std::to_string(*length) +
                                                     " bytes exceeds the limit of " +
                                                     std::to_string(max_message_bytes_) + " bytes"};
    }
    body_length_ = *length;
    in_body_ = true;
  }
}

std::string frameMessage(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace sightline::server
