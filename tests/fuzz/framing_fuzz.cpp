// Message framing: any bytes, fed in pieces whose sizes the input picks, give messages or
// framing errors, never a crash, and never hold more than what is still unread.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/lsp/framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte sets the piece size (1..256): framing must not depend on how bytes arrive.
  size_t piece = static_cast<size_t>(data[0]) + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  sightline::server::MessageFramer framer(size_t{64} << 10);
  for (size_t at = 0; at < bytes.size(); at += piece) {
    framer.feed(bytes.substr(at, piece));
    while (auto event = framer.next()) {
      if (event->kind == sightline::server::FrameEvent::Kind::Message && event->body.size() > (size_t{64} << 10))
        __builtin_trap();  // a body over the limit must have been dropped
    }
  }
  if (framer.pendingBytes() > bytes.size()) __builtin_trap();
  // A framed body reads back as itself.
  sightline::server::MessageFramer again;
  std::string body(bytes.substr(0, std::min<size_t>(bytes.size(), 512)));
  again.feed(sightline::server::frameMessage(body));
  auto event = again.next();
  if (!event || event->kind != sightline::server::FrameEvent::Kind::Message || event->body != body) __builtin_trap();
  return 0;
}
