// NVTX range sites from the source index.
#include "analysis/attribution/nvtx_sites.h"

#include <array>

namespace sightline::attribution {
namespace {

// Callees that open a range named by their first argument (resolved through imports).
constexpr std::array<std::string_view, 7> kRangeOpeners = {
    "torch.cuda.nvtx.range",
    "torch.cuda.nvtx.range_push",
    "torch.cuda.nvtx.range_start",
    "nvtx.annotate",
    "nvtx.push_range",
    "torch.autograd.profiler.record_function",
    "torch.profiler.record_function",
};

bool opensRange(const std::string& resolved) {
  for (auto name : kRangeOpeners)
    if (resolved == name) return true;
  return false;
}

}  // namespace

std::optional<std::string> stringLiteralValue(std::string_view text) {
  size_t i = 0;
  bool raw = false;
  while (i < text.size() && std::string_view("rRuUbB").find(text[i]) != std::string_view::npos) {
    raw = raw || text[i] == 'r' || text[i] == 'R';
    ++i;
  }
  if (i > 2 || i >= text.size() || (text[i] != '"' && text[i] != '\'')) return std::nullopt;
  char q = text[i];
  size_t quote = text.compare(i, 3, std::string(3, q)) == 0 ? 3 : 1;
  if (text.size() < i + 2 * quote || text.compare(text.size() - quote, quote, std::string(quote, q)) != 0)
    return std::nullopt;
  std::string_view body = text.substr(i + quote, text.size() - i - 2 * quote);
  std::string out;
  for (size_t k = 0; k < body.size(); ++k) {
    if (body[k] == q && quote == 1) return std::nullopt;  // 'a' 'b': two literals
    if (body[k] != '\\' || raw || k + 1 == body.size()) {
      out += body[k];
      continue;
    }
    char e = body[++k];
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case '\\':
      case '\'':
      case '"':
        out += e;
        break;
      default:
        out += '\\';
        out += e;
    }
  }
  return out;
}

std::vector<NvtxSite> findNvtxSites(const source::SourceFile& file, const source::SourceIndex& index,
                                    model::StringId profile_file) {
  std::vector<NvtxSite> sites;
  for (const auto& call : index.calls) {
    if (!opensRange(call.resolved)) continue;
    const source::Argument* name = nullptr;
    for (const auto& arg : call.args) {
      if (arg.keyword.empty() && !arg.is_splat) {
        name = &arg;
        break;
      }
      if (arg.keyword == "msg" || arg.keyword == "message" || arg.keyword == "name") name = &arg;
    }
    if (!name) continue;
    auto text = stringLiteralValue(name->value_text);
    if (!text || text->empty()) continue;
    NvtxSite site;
    site.text = *text;
    site.file = profile_file;
    site.line = static_cast<int32_t>(file.lines().pointAt(call.range.begin).line + 1);
    site.per_step =
        index.inTrainingLoop(call.loop) ||
        (call.function >= 0 && index.functions[static_cast<size_t>(call.function)].reached_from_training_loop);
    sites.push_back(std::move(site));
  }
  return sites;
}

}  // namespace sightline::attribution
