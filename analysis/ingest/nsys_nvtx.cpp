// One pass over NVTX events: ranges, Python marks, ranks, the capture's events.
#include "analysis/ingest/nsys_nvtx.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace sightline::ingest::nsys {
namespace {

constexpr int64_t kNvtxMark = 34;

// PyTorch's autograd range text, "aten::mm, seq = 12, op_id = 40, sizes = [...], ...": the op
// name and the fields attribution uses. The range keeps the op name alone (the rest is unique
// per call and would fill the string table).
struct AutogradText {
  std::string_view op;
  int32_t seq = -1, op_id = -1;  // -1: absent
  bool shapes = false;           // input shapes follow (autograd-shapes-nvtx)
};

// One walk over the fields (`key = value` after each ", "), up to the shapes, whose lists hold
// commas of their own; false when the text has no seq or op_id (not an autograd range).
bool parseAutogradText(std::string_view text, AutogradText& out) {
  auto comma = text.find(", ");
  if (comma == std::string_view::npos) return false;
  out.op = text.substr(0, comma);
  auto number = [&](size_t at) -> int32_t {
    int64_t v = 0;
    bool any = false;
    for (size_t i = at; i < text.size() && text[i] >= '0' && text[i] <= '9' && v <= INT32_MAX; ++i) {
      v = v * 10 + (text[i] - '0');
      any = true;
    }
    return any && v <= INT32_MAX ? static_cast<int32_t>(v) : -1;
  };
  auto field = [&](size_t at, std::string_view key) { return text.compare(at, key.size(), key) == 0; };
  bool fields = false;
  for (size_t at = comma + 2; at < text.size();) {
    if (field(at, "seq = ")) {
      out.seq = number(at + 6), fields = true;
    } else if (field(at, "op_id = ")) {
      out.op_id = number(at + 8), fields = true;
    } else if (field(at, "sizes = ")) {
      out.shapes = true;
      break;
    }
    auto next = text.find(", ", at);
    if (next == std::string_view::npos) break;
    at = next + 2;
  }
  return fields;
}

}  // namespace

uint64_t readUnsigned(std::string_view blob, size_t offset, uint32_t size) {
  uint64_t v = 0;
  std::memcpy(&v, blob.data() + offset, size);  // little-endian targets only, as nsys itself
  return v;
}

void NvtxPass::run(const std::string& sql, const std::string& missing) {
  forEachRow(sql, missing, "NVTX events", false, [&](Statement& s) { row(s); });
}

void NvtxPass::row(Statement& s) {
  int64_t type = s.int64(2);
  int64_t g = s.int64(3);
  // Rows come in long runs of one process and domain: the last one's found once.
  if (int64_t pid = pidOf(g), id = s.int64(6); pid != domain_pid_ || id != domain_id_) {
    auto it = c_.domains.find({pid, id});
    if (it == c_.domains.end()) it = c_.domains.find({-1, id});
    domain_ = it == c_.domains.end() ? NvtxDomain{} : it->second;
    domain_pid_ = pid, domain_id_ = id;
  }
  const NvtxDomain domain = domain_;
  if (type == kNvtxMark) return mark(s, g, domain);
  if (s.isNull(1)) return;  // an unfinished range
  model::NvtxRange r;
  r.start_ns = s.int64(0);
  r.end_ns = std::max(r.start_ns, s.int64(1));
  r.pid = static_cast<uint32_t>(pidOf(g));
  r.tid = static_cast<uint32_t>(tidOf(g));
  r.domain = domain.name;
  if (!c_.rank_fields.empty()) readRankPayload(s.blob(7), s.int64(6), r.pid);
  std::string_view text = s.text(4);
  if (text.empty()) text = p_.strings[str(s, 5)];
  AutogradText parsed;
  if (parseAutogradText(text, parsed)) {
    autograd = true;  // --pytorch=autograd-nvtx: a seq only on ops that record for backward
    p_.capture.add(r.pid, r.start_ns, model::CaptureEvent::AutogradRange);
    if (parsed.shapes) p_.capture.add(r.pid, r.start_ns, model::CaptureEvent::ShapesRange);
    // Autograd ranges without a seq are kept only around a kept API call of their thread.
    if (parsed.seq < 0 && !enclosesCall(r)) return;
    r.op = r.text = p_.strings.intern(parsed.op);
    r.seq = parsed.seq;
    r.op_id = parsed.op_id;
  } else {
    r.text = p_.strings.intern(text);
  }
  p_.ranges.push_back(r);
}

void NvtxPass::mark(Statement& s, int64_t g, const NvtxDomain& domain) {
  if (domain.python == NvtxDomain::Other) return;
  ++python_marks;
  if (domain.python == NvtxDomain::Backtrace)
    p_.capture.add(static_cast<uint32_t>(pidOf(g)), s.int64(0), model::CaptureEvent::PythonBacktrace);
  std::string_view blob = s.blob(7);
  if (blob.empty()) {
    ++marks_without_blob;
    return;
  }
  auto layout = c_.layouts.find(domain.python == NvtxDomain::Sampling ? kSamplingDomain : kBacktraceDomain);
  uint64_t process_key = static_cast<uint64_t>(pidOf(g)) << 1 | (domain.python == NvtxDomain::Sampling ? 1 : 0);
  if (layout == c_.layouts.end() || !decodeMark(blob, layout->second, process_key, raw_)) {
    ++undecodable;
    return;
  }
  model::PythonMark m;
  m.time_ns = s.int64(0);
  m.pid = static_cast<uint32_t>(pidOf(g));
  m.tid = static_cast<uint32_t>(tidOf(g));
  m.kind = domain.python == NvtxDomain::Sampling ? model::MarkKind::Sample : model::MarkKind::Backtrace;
  std::tie(m.first_frame, m.frame_count) = internStack(raw_);
  p_.marks.push_back(m);
}

bool NvtxPass::enclosesCall(const model::NvtxRange& r) const {
  auto key = std::make_pair(model::threadKey(r.pid, r.tid), r.start_ns);
  auto it = std::lower_bound(c_.call_starts.begin(), c_.call_starts.end(), key);
  return it != c_.call_starts.end() && it->first == key.first && it->second <= r.end_ns;
}

void NvtxPass::readRankPayload(std::string_view blob, int64_t domain, uint32_t pid) {
  if (blob.size() < 32) return;
  auto it = c_.rank_fields.find({domain, static_cast<int64_t>(readUnsigned(blob, 8, 8))});
  if (it == c_.rank_fields.end()) return;
  uint64_t size = readUnsigned(blob, 16, 8), offset = readUnsigned(blob, 24, 8);
  if (offset > blob.size() || size > blob.size() - offset) return;
  std::string_view payload = blob.substr(offset, size);
  auto field = [&](int64_t at, uint32_t bytes) -> int32_t {
    if (at < 0 || static_cast<uint64_t>(at) + bytes > payload.size()) return -1;
    auto v = static_cast<int64_t>(readUnsigned(payload, static_cast<size_t>(at), bytes));
    return v >= 0 && v < INT32_MAX ? static_cast<int32_t>(v) : -1;
  };
  int32_t rank = field(it->second.rank_offset, it->second.rank_size);
  if (rank >= 0 && !ranks.count(pid)) ranks[pid] = {rank, field(it->second.size_offset, it->second.size_size)};
}

std::pair<uint32_t, uint32_t> NvtxPass::internStack(const std::vector<RawFrame>& raw) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& f : raw)
    for (uint64_t v : {f.function_id, f.file_id, static_cast<uint64_t>(static_cast<uint32_t>(f.line))})
      h = (h ^ v) * 1099511628211ull;
  auto matches = [&](uint32_t first) {
    for (size_t i = 0; i < raw.size(); ++i) {
      const auto& a = raw_frames_[first + i];
      if (a.function_id != raw[i].function_id || a.file_id != raw[i].file_id || a.line != raw[i].line) return false;
    }
    return true;
  };
  auto [lo, hi] = stacks_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (it->second.second == raw.size() && matches(it->second.first)) return it->second;
  std::pair<uint32_t, uint32_t> stack{static_cast<uint32_t>(p_.frames.size()), static_cast<uint32_t>(raw.size())};
  for (const auto& f : raw) {
    p_.frames.push_back({functionName(f.function_id), functionName(f.file_id), f.line});
    raw_frames_.push_back(f);
  }
  stacks_.emplace(h, stack);
  return stack;
}

model::StringId NvtxPass::functionName(uint64_t id) {
  model::StringId raw = stringFor(id);
  const std::string& text = p_.strings[raw];
  if (text.find('&') == std::string::npos) return raw;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    auto try_entity = [&](const char* entity, char c) {
      size_t n = std::strlen(entity);
      if (text.compare(i, n, entity) != 0) return false;
      out += c;
      i += n - 1;
      return true;
    };
    if (!try_entity("&lt;", '<') && !try_entity("&gt;", '>') && !try_entity("&amp;", '&') &&
        !try_entity("&quot;", '"') && !try_entity("&apos;", '\''))
      out += text[i];
  }
  return p_.strings.intern(out);
}

model::StringId NvtxPass::stringFor(uint64_t id) {
  auto it = strings_.find(static_cast<int64_t>(id));
  return it == strings_.end() ? p_.strings.intern("<string " + std::to_string(id) + ">") : it->second;
}

bool NvtxPass::decodeMark(std::string_view blob, const std::vector<PayloadLayout>& layouts, uint64_t process_key,
                          std::vector<RawFrame>& raw) {
  auto chosen = layout_of_process_.find(process_key);
  if (chosen != layout_of_process_.end()) return decodeBacktracePayload(blob, layouts[chosen->second], raw);
  int fallback = -1;
  for (size_t i = 0; i < layouts.size(); ++i) {
    if (!decodeBacktracePayload(blob, layouts[i], raw)) continue;
    bool named = std::all_of(raw.begin(), raw.end(), [&](const RawFrame& f) {
      return strings_.count(static_cast<int64_t>(f.file_id)) && strings_.count(static_cast<int64_t>(f.function_id));
    });
    if (named && !raw.empty()) {
      layout_of_process_[process_key] = i;
      return true;
    }
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback >= 0 && decodeBacktracePayload(blob, layouts[static_cast<size_t>(fallback)], raw);
}

}  // namespace sightline::ingest::nsys
