// Protocol: any JSON (depth-limited as the server reads it) through JSON-RPC classification
// and the typed `fromJson` of every request and notification the server reads. Errors are
// values; nothing may throw or crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/json_in.h"
#include "protocol/jsonrpc.h"
#include "protocol/lsp_types.h"
#include "protocol/server_messages.h"

namespace {

using nlohmann::json;
namespace p = sightline::protocol;

template <class... T>
void parseAll(const json& value) {
  (static_cast<void>(p::parse<T>(value, "params")), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  if (p::jsonNestingDepth(body) > p::kMaxJsonDepth) return 0;
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return 0;
  try {
    auto message = p::classifyMessage(value);
    if (auto* m = std::get_if<p::Message>(&message)) value = m->params;
  } catch (const std::exception&) {
    // classifyMessage may throw on a shape it does not foresee; the dispatcher answers those.
  }
  parseAll<p::InitializeParams, p::DidOpenTextDocumentParams, p::DidChangeTextDocumentParams, p::TextDocumentParams,
           p::CodeActionParams, p::ExecuteCommandParams, p::HoverParams, p::InlayHintParams,
           p::DidChangeConfigurationParams, p::DidChangeWatchedFilesParams, p::WorkDoneProgressCancelParams,
           p::CancelParams>(value);
  return 0;
}
