// torch.compile's code as plain files (inductor_plain.h).
#include "analysis/ingest/inductor_plain.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>

#include "analysis/ingest/inductor_reader.h"
#include "analysis/ingest/sha256.h"

namespace sightline::ingest {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAotId = "# AOT ID:";
constexpr std::string_view kOutputTag = "[__output_code] ";
constexpr std::string_view kOutputCode = "[__output_code] Output code: ";
constexpr std::string_view kWrittenTo = "[__output_code] Output code written to: ";
constexpr size_t kMaxBytes = size_t{1} << 30;

// Up to `limit` bytes of a file ("" when it cannot be read).
std::string readBytes(const fs::path& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string out(limit, '\0');
  in.read(out.data(), static_cast<std::streamsize>(limit));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::string readAll(const fs::path& path, bool& ok) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  ok = !ec && size <= kMaxBytes;
  return ok ? readBytes(path, static_cast<size_t>(size)) : std::string();
}

// A glog record's start: "V1126 23:57:32.584000 445 torch/..." (level, month and day, time).
bool isLogRecord(std::string_view l) {
  if (l.size() < 22 || std::string_view("VIWEF").find(l[0]) == std::string_view::npos) return false;
  for (size_t i = 1; i < 5; ++i)
    if (!std::isdigit(static_cast<unsigned char>(l[i]))) return false;
  return l[5] == ' ' && l[8] == ':' && l[11] == ':';
}

}  // namespace

std::string inductorModuleName(std::string_view source) {
  // Python's str.strip(), then "c" + base32(sha256(code)) in lower case, cut to 51 letters
  // (torch/_inductor/codecache.py: write() hashes the stripped code with code_hash()).
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!source.empty() && space(source.front())) source.remove_prefix(1);
  while (!source.empty() && space(source.back())) source.remove_suffix(1);
  auto digest = sha256(source);
  constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out = "c";
  uint32_t buffer = 0;
  int bits = 0;
  for (uint8_t byte : digest) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.size() < 52) {
      out += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

std::string plainModuleName(const fs::path& path) {
  std::string file = path.filename().string();
  if (file.size() < 3 + 30 || file[0] != 'c' || !file.ends_with(".py")) return "";
  std::string stem = file.substr(0, file.size() - 3);
  for (char ch : stem)
    if (!(std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)))) return "";
  return stem;
}

PlainCode plainCodeKind(const fs::path& path) {
  std::string file = path.filename().string();
  if (file == "output_code.py") return PlainCode::DebugWrapper;
  if (!plainModuleName(path).empty()) return PlainCode::Wrapper;
  if (file.ends_with(".log") || file.ends_with(".txt") || file.ends_with(".err")) return PlainCode::OutputLog;
  return PlainCode::None;
}

void parseOutputCodeLog(std::string_view text, const std::string& path, model::CompiledCode& out) {
  // torch's log formatter repeats the record's header ("V1126 23:57:32.584000 445
  // torch/_inductor/graph.py:2552] [0/0] [__output_code] ") on each line of the code; a handler
  // of one's own may print the code bare, up to the next record.
  auto lineAt = [&](size_t at) {
    size_t eol = text.find('\n', at);
    return text.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
  };
  size_t at = 0;
  while ((at = text.find(kOutputCode, at)) != std::string_view::npos) {
    // The record's header (a glog header is some 100 bytes: looked for in the 4 KiB before, so a
    // file of one long line stays linear).
    size_t window = at > 4096 ? at - 4096 : 0;
    size_t line_start = text.substr(window, at - window).rfind('\n');
    line_start = line_start == std::string_view::npos ? window : window + line_start + 1;
    std::string_view prefix = text.substr(line_start, at + kOutputTag.size() - line_start);
    size_t next = text.find('\n', at);
    if (next == std::string_view::npos) break;
    ++next;
    std::string code;
    bool prefixed = lineAt(next).starts_with(prefix);
    while (next < text.size()) {
      std::string_view line = lineAt(next);
      if (prefixed ? !line.starts_with(prefix) : isLogRecord(line)) break;
      if (prefixed) line.remove_prefix(prefix.size());
      if (prefixed && line.starts_with("Output code written to: ")) break;
      code.append(line).push_back('\n');
      next += lineAt(next).size() + 1;
    }
    at = std::min(next, text.size());
    if (!std::string_view(code).starts_with(kAotId)) continue;
    // Its name: the cache path a record after it says it was written to, else its code's hash.
    std::string name;
    // (searched in the next 4 KiB only: a log of many blocks without it stays linear)
    size_t written = text.substr(at, 4096).find(kWrittenTo);
    if (written != std::string_view::npos) {
      std::string_view to = lineAt(at + written + kWrittenTo.size());
      name = plainModuleName(fs::path(std::string(to)));
    }
    if (name.empty()) name = inductorModuleName(code);
    auto m = parseWrapper(name, code, "", {});
    m.path = path;
    out.modules.push_back(std::move(m));
  }
}

model::CompiledCode readPlainCode(const std::string& path, PlainCode kind, const std::set<std::string>& want) {
  model::CompiledCode part;
  fs::path p(path);
  switch (kind) {
    case PlainCode::None:
      break;
    case PlainCode::Wrapper: {
      std::string name = plainModuleName(p);
      if (!want.empty() && !want.count(name)) break;
      if (!readBytes(p, kAotId.size()).starts_with(kAotId)) break;  // a Triton kernel's file
      bool ok = false;
      std::string source = readAll(p, ok);
      if (!ok) break;
      auto m = parseWrapper(name, source, "", {});
      m.path = path;
      part.modules.push_back(std::move(m));
      break;
    }
    case PlainCode::DebugWrapper: {
      bool ok = false;
      std::string source = readAll(p, ok);
      if (!ok || !std::string_view(source).starts_with(kAotId)) break;
      bool graph_ok = false;
      std::string graph = readAll(p.parent_path() / "fx_graph_transformed.py", graph_ok);
      // The same code as the cache's wrapper: named as Inductor named that one.
      auto m = parseWrapper(inductorModuleName(source), source, graph_ok ? graph : "", {});
      m.path = path;
      part.modules.push_back(std::move(m));
      break;
    }
    case PlainCode::OutputLog: {
      if (readBytes(p, size_t{4} << 20).find(kOutputCode) == std::string::npos) break;
      bool ok = false;
      std::string text = readAll(p, ok);
      if (ok) parseOutputCodeLog(text, path, part);
      break;
    }
  }
  return part;
}

}  // namespace sightline::ingest
