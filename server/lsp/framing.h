// Content-Length framing of LSP messages, as a pure byte parser (no IO). It resynchronizes
// after garbage: any header block without a usable Content-Length is reported and skipped.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sightline::server {

struct FrameEvent {
  enum class Kind { Message, Error };
  Kind kind = Kind::Message;
  std::string body;  // the message body, or what was wrong with the framing
};

class MessageFramer {
 public:
  static constexpr size_t kDefaultMaxMessageBytes = size_t{256} << 20;
  static constexpr size_t kMaxHeaderBytes = size_t{64} << 10;

  explicit MessageFramer(size_t max_message_bytes = kDefaultMaxMessageBytes) : max_message_bytes_(max_message_bytes) {}

  void feed(std::string_view bytes);
  // The next complete message or framing error, or nullopt until more bytes arrive.
  std::optional<FrameEvent> next();
  // Bytes received but not yet part of a returned event (an unfinished message at EOF).
  size_t pendingBytes() const { return buffer_.size() - start_; }

 private:
  void compact();

  std::string buffer_;
  size_t start_ = 0;        // first unconsumed byte of buffer_
  size_t body_length_ = 0;  // when reading a body
  bool in_body_ = false;
  size_t skip_remaining_ = 0;  // bytes of an oversized body still to drop
  size_t max_message_bytes_;
};

// "Content-Length: N\r\n\r\n" + body.
std::string frameMessage(std::string_view body);

}  // namespace sightline::server
