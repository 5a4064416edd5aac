// Attribution engine. Everything is indexed once (per-thread marks and ranges, range
// parents, api calls by (pid, correlation)); each API call is resolved once and its line
// reused by every activity it launched.
#include "analysis/attribution/attribution.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <unordered_map>

namespace sightline::attribution {
namespace {

using model::Profile;

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The PyTorch profiler trims sys.path prefixes from file names, so installed packages and the
// standard library look relative ("torch/nn/functional.py", "typing.py"). Their first component.
bool isTrimmedLibraryPath(std::string_view path) {
  static const std::set<std::string_view> kLibraries = {"torch",
                                                        "torchvision",
                                                        "torchaudio",
                                                        "torchtext",
                                                        "numpy",
                                                        "transformers",
                                                        "accelerate",
                                                        "apex",
                                                        "triton",
                                                        "lightning",
                                                        "pytorch_lightning",
                                                        "tqdm",
                                                        "sympy",
                                                        "importlib",
                                                        "collections",
                                                        "concurrent",
                                                        "multiprocessing",
                                                        "json",
                                                        "logging",
                                                        "asyncio",
                                                        "unittest",
                                                        "email",
                                                        "http",
                                                        "encodings",
                                                        "ctypes",
                                                        "functorch",
                                                        "timm",
                                                        "datasets",
                                                        "huggingface_hub",
                                                        "safetensors",
                                                        "jinja2",
                                                        "typing.py",
                                                        "threading.py",
                                                        "contextlib.py",
                                                        "functools.py",
                                                        "abc.py",
                                                        "enum.py",
                                                        "os.py",
                                                        "posixpath.py",
                                                        "weakref.py",
                                                        "warnings.py",
                                                        "random.py",
                                                        "queue.py",
                                                        "copy.py",
                                                        "inspect.py",
                                                        "dataclasses.py",
                                                        "selectors.py",
                                                        "socket.py",
                                                        "tempfile.py",
                                                        "shutil.py",
                                                        "pickle.py",
                                                        "copyreg.py",
                                                        "re.py",
                                                        "types.py",
                                                        "traceback.py",
                                                        "linecache.py",
                                                        "tokenize.py",
                                                        "codecs.py",
                                                        "genericpath.py",
                                                        "operator.py",
                                                        "signal.py",
                                                        "subprocess.py",
                                                        "argparse.py",
                                                        "gettext.py",
                                                        "locale.py",
                                                        "pathlib.py",
                                                        "string.py",
                                                        "textwrap.py",
                                                        "numbers.py",
                                                        "bisect.py",
                                                        "heapq.py",
                                                        "itertools.py",
                                                        "math.py",
                                                        "time.py",
                                                        "datetime.py",
                                                        "uuid.py",
                                                        "hashlib.py",
                                                        "base64.py",
                                                        "struct.py",
                                                        "io.py",
                                                        "site.py",
                                                        "runpy.py",
                                                        "_weakrefset.py",
                                                        "_collections_abc.py",
                                                        "sre_compile.py",
                                                        "sre_parse.py",
                                                        "zipfile.py",
                                                        "tarfile.py",
                                                        "gzip.py",
                                                        "platform.py",
                                                        "sysconfig.py",
                                                        "statistics.py"};
  if (path.empty() || path[0] == '/') return false;
  return kLibraries.count(path.substr(0, path.find('/'))) > 0;
}

class Engine {
 public:
  Engine(const Profile& p, const Options& o) : p_(p), o_(o) {
    is_user_ = o.is_user_file ? o.is_user_file : isDefaultUserFile;
    for (size_t i = 0; i < o.nvtx_sites.size(); ++i) sites_by_text_.emplace(o.nvtx_sites[i].text, i);
  }

  Attribution run() {
    indexMarks();
    indexRanges();
    indexSiteRanges();
    indexCalls();
    Attribution out;
    out.activity_lines.resize(p_.activities.size());
    // (process, correlation) -> API call, as a sorted vector: millions of entries.
    std::vector<std::pair<uint64_t, uint32_t>> api_by_corr;
    api_by_corr.reserve(p_.api_calls.size());
    for (uint32_t i = 0; i < p_.api_calls.size(); ++i)
      if (p_.api_calls[i].correlation > 0)
        api_by_corr.emplace_back(model::correlationKey(p_.api_calls[i].pid, p_.api_calls[i].correlation), i);
    std::sort(api_by_corr.begin(), api_by_corr.end());
    api_lines_.assign(p_.api_calls.size(), LineRef{});
    api_done_.assign(p_.api_calls.size(), false);
    api_ops_.assign(p_.api_calls.size(), -1);

    for (size_t a = 0; a < p_.activities.size(); ++a) {
      const auto& act = p_.activities[a];
      int64_t ns = act.duration();
      out.total_gpu_ns += ns;
      auto key = act.correlation > 0 ? model::correlationKey(act.pid, act.correlation) : 0;
      auto it = std::lower_bound(api_by_corr.begin(), api_by_corr.end(), std::make_pair(key, uint32_t{0}));
      if (key == 0 || it == api_by_corr.end() || it->first != key) {
        out.unattributed_gpu_ns += ns;
        continue;
      }
      LineRef ref = lineOfCall(it->second);
      out.activity_lines[a] = ref;
      if (ref.file == 0) {
        out.unattributed_gpu_ns += ns;
        continue;
      }
      out.attributed_gpu_ns += ns;
      out.by_method[static_cast<size_t>(ref.method)] += ns;
      LineCost& cost = out.files[ref.file][ref.line];
      cost.gpu_ns += ns;
      (ref.backward ? cost.backward_ns : cost.forward_ns) += ns;
      cost.by_method[static_cast<size_t>(ref.method)] += ns;
      auto& stat = cost.by_name[act.name];
      ++stat.count;
      stat.ns += ns;
      switch (act.kind) {
        case model::ActivityKind::Kernel:
        case model::ActivityKind::Graph:
          ++cost.kernels;
          break;
        case model::ActivityKind::Memcpy:
          cost.memcpy_bytes += act.bytes;
          cost.memcpy_ns += ns;
          cost.memcpy_bytes_by_kind[static_cast<size_t>(act.copy)] += act.bytes;
          if (act.src == model::MemoryKind::Pageable || act.dst == model::MemoryKind::Pageable)
            cost.pageable_bytes += act.bytes;
          if (p_.api_calls[it->second].sync == model::SyncKind::BlockingMemcpy &&
              (act.copy != model::CopyKind::HostToDevice || act.bytes >= 64 * 1024)) {
            cost.sync_memcpy_bytes += act.bytes;
            cost.sync_memcpy_ns += ns;
            ++cost.sync_memcpys;
          }
          break;
        case model::ActivityKind::Memset:
          ++cost.memsets;
          cost.memset_ns += ns;
          break;
      }
      if (!ref.backward) {
        if (api_ops_[it->second] < 0) api_ops_[it->second] = static_cast<int64_t>(forwardOpOf(it->second));
        if (api_ops_[it->second] != 0) ++cost.autograd_ops[static_cast<model::StringId>(api_ops_[it->second])];
      }
    }
    // Host-side costs: launches and synchronizations, on the line of the call.
    for (size_t i = 0; i < p_.api_calls.size(); ++i) {
      const auto& call = p_.api_calls[i];
      if (!call.launches && call.sync == model::SyncKind::None) continue;
      LineRef ref = lineOfCall(i);
      if (ref.file == 0) continue;
      LineCost& cost = out.files[ref.file][ref.line];
      if (call.launches) ++cost.launches;
      if (call.sync != model::SyncKind::None) {
        cost.sync_ns += call.end_ns - call.start_ns;
        ++cost.syncs;
        ++cost.sync_apis[call.name];
      }
    }
    detectSteps(out);
    findIdleGaps(out, api_by_corr);
    return out;
  }

  // Gaps between GPU work on a device, charged to the host line that keeps the GPU waiting: the
  // line running at the gap's middle (at its very start the host is usually still returning
  // from the sync that drained the GPU). Python calls running then (traces of Python calls),
  // else a sample inside the gap, else backtraces bracketing its middle, else the line of the
  // call that launched the work ending the gap.
  void findIdleGaps(Attribution& out, const std::vector<std::pair<uint64_t, uint32_t>>& api_by_corr) {
    if (o_.idle_gap_ns <= 0 || p_.activities.empty()) return;
    std::map<uint32_t, std::vector<uint32_t>> by_device;  // activities are sorted by start
    for (uint32_t a = 0; a < p_.activities.size(); ++a) by_device[p_.activities[a].device].push_back(a);
    for (const auto& [device, list] : by_device) {
      int64_t busy_until = p_.activities[list.front()].end_ns;
      for (size_t i = 1; i < list.size(); ++i) {
        const auto& next = p_.activities[list[i]];
        if (next.start_ns - busy_until >= o_.idle_gap_ns) {
          IdleGap gap{busy_until, next.start_ns, device, {}};
          auto key = next.correlation > 0 ? model::correlationKey(next.pid, next.correlation) : 0;
          auto it = std::lower_bound(api_by_corr.begin(), api_by_corr.end(), std::make_pair(key, uint32_t{0}));
          if (key != 0 && it != api_by_corr.end() && it->first == key) gap.line = hostLineAt(it->second, gap);
          if (gap.line.file != 0) {
            LineCost& cost = out.files[gap.line.file][gap.line.line];
            cost.idle_ns += gap.end_ns - gap.start_ns;
            ++cost.idle_gaps;
          }
          out.idle_gaps.push_back(gap);
        }
        busy_until = std::max(busy_until, next.end_ns);
      }
    }
  }

  // The host line during `gap`, on the thread of API call `api` (which ends it).
  LineRef hostLineAt(uint32_t api, const IdleGap& gap) {
    const auto& c = p_.api_calls[api];
    int64_t middle = gap.start_ns + (gap.end_ns - gap.start_ns) / 2;
    if (!p_.calls.empty()) {
      LineRef ref = lineAtPython(c.pid, c.tid, middle);
      if (ref.file != 0) return ref;
    }
    auto it = marks_.find(model::threadKey(c.pid, c.tid));
    if (it != marks_.end()) {
      const auto& samples = it->second.samples;
      auto pos = std::lower_bound(samples.begin(), samples.end(), gap.start_ns,
                                  [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
      for (; pos != samples.end() && p_.marks[*pos].time_ns < gap.end_ns; ++pos)
        if (mark_lines_[*pos].file != 0) return mark_lines_[*pos];
      LineRef ref = bracketed(it->second.backtraces, middle);
      if (ref.file != 0) return ref;
    }
    return lineOfCall(api);
  }

 private:
  struct ThreadMarks {
    std::vector<uint32_t> backtraces;  // indices into p_.marks, by time
    std::vector<uint32_t> samples;
  };
  struct ThreadRanges {
    std::vector<uint32_t> ranges;  // indices into p_.ranges, by start
  };

  void indexMarks() {
    mark_lines_.resize(p_.marks.size());
    for (uint32_t i = 0; i < p_.marks.size(); ++i) {
      const auto& m = p_.marks[i];
      auto& t = marks_[model::threadKey(m.pid, m.tid)];
      (m.kind == model::MarkKind::Sample ? t.samples : t.backtraces).push_back(i);
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& frame = p_.frames[m.first_frame + f];
        if (frame.line > 0 && is_user_(p_.strings[frame.file])) {
          mark_lines_[i] = {frame.file, frame.line, Method::Stack, false};
          break;
        }
      }
    }
  }

  void indexRanges() {
    parent_.assign(p_.ranges.size(), -1);
    std::vector<int> open;
    uint64_t current = ~0ull;
    for (uint32_t i = 0; i < p_.ranges.size(); ++i) {
      const auto& r = p_.ranges[i];
      uint64_t key = model::threadKey(r.pid, r.tid);
      if (key != current) {
        open.clear();
        current = key;
      }
      while (!open.empty() && p_.ranges[static_cast<size_t>(open.back())].end_ns < r.end_ns) open.pop_back();
      parent_[i] = open.empty() ? -1 : open.back();
      open.push_back(static_cast<int>(i));
      ranges_[key].ranges.push_back(i);
      if (r.seq >= 0 && !isBackwardOp(r)) forward_by_seq_.push_back(i);
    }
    std::sort(forward_by_seq_.begin(), forward_by_seq_.end(), [&](uint32_t a, uint32_t b) {
      const auto &x = p_.ranges[a], &y = p_.ranges[b];
      return std::tie(x.pid, x.seq, x.start_ns) < std::tie(y.pid, y.seq, y.start_ns);
    });
  }

  // The forward op that created autograd node `seq`. Ops record `seq = ` the counter's value
  // when they start and only node-creating ops advance it, so several ops show the same seq; the
  // creator is the last of them to start before the backward op runs.
  int forwardRangeFor(const model::NvtxRange& backward) const {
    // The last forward range of (pid, seq) that starts before the backward op.
    auto pos =
        std::upper_bound(forward_by_seq_.begin(), forward_by_seq_.end(), backward, [&](const auto& b, uint32_t idx) {
          const auto& r = p_.ranges[idx];
          return std::tie(b.pid, b.seq, b.start_ns) < std::tie(r.pid, r.seq, r.start_ns);
        });
    if (pos == forward_by_seq_.begin()) return -1;
    const auto& found = p_.ranges[*(pos - 1)];
    if (found.pid != backward.pid || found.seq != backward.seq) return -1;
    return static_cast<int>(*(pos - 1));
  }

  // The first `XBackward0, seq = N` range inside an evaluate_function range, or -1.
  int backwardChildOf(int range) const {
    const auto& e = p_.ranges[static_cast<size_t>(range)];
    for (size_t j = static_cast<size_t>(range) + 1; j < p_.ranges.size(); ++j) {
      const auto& r = p_.ranges[j];
      if (r.pid != e.pid || r.tid != e.tid || r.start_ns > e.end_ns) break;
      if (r.seq >= 0 && isBackwardOp(r)) return static_cast<int>(j);
    }
    return -1;
  }

  bool isBackwardOp(const model::NvtxRange& r) const { return r.op != 0 && contains(p_.strings[r.op], "Backward"); }

  // The innermost range on (pid, tid) containing time t, or -1.
  int innermostRange(uint32_t pid, uint32_t tid, int64_t t) const {
    auto it = ranges_.find(model::threadKey(pid, tid));
    if (it == ranges_.end()) return -1;
    const auto& list = it->second.ranges;
    auto pos = std::upper_bound(list.begin(), list.end(), t,
                                [&](int64_t time, uint32_t idx) { return time < p_.ranges[idx].start_ns; });
    if (pos == list.begin()) return -1;
    int j = static_cast<int>(*(pos - 1));
    while (j >= 0 && p_.ranges[static_cast<size_t>(j)].end_ns < t) j = parent_[static_cast<size_t>(j)];
    return j;
  }

  int outermostAutograd(int range) const {
    int found = -1;
    for (int j = range; j >= 0; j = parent_[static_cast<size_t>(j)])
      if (p_.ranges[static_cast<size_t>(j)].op != 0) found = j;
    return found;
  }

  model::StringId forwardOpOf(size_t api) const {
    const auto& c = p_.api_calls[api];
    int outer = outermostAutograd(innermostRange(c.pid, c.tid, c.start_ns));
    if (outer < 0) return 0;
    const auto& r = p_.ranges[static_cast<size_t>(outer)];
    return isBackwardOp(r) ? 0 : r.op;
  }

  // The first backtrace mark on the thread within [start, end] that resolves to a user line.
  LineRef stackLineWithin(uint32_t pid, uint32_t tid, int64_t start, int64_t end) const {
    auto it = marks_.find(model::threadKey(pid, tid));
    if (it == marks_.end()) return {};
    const auto& list = it->second.backtraces;
    auto pos = std::lower_bound(list.begin(), list.end(), start,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    for (; pos != list.end() && p_.marks[*pos].time_ns <= end; ++pos)
      if (mark_lines_[*pos].file != 0) return mark_lines_[*pos];
    return {};
  }

  // Nearest resolvable marks before and after t agree: that line.
  LineRef bracketed(const std::vector<uint32_t>& list, int64_t t) const {
    auto pos = std::lower_bound(list.begin(), list.end(), t,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    LineRef before{}, after{};
    for (auto b = pos; b != list.begin();) {
      --b;
      if (mark_lines_[*b].file != 0) {
        before = mark_lines_[*b];
        break;
      }
    }
    for (auto a = pos; a != list.end(); ++a) {
      if (mark_lines_[*a].file != 0) {
        after = mark_lines_[*a];
        break;
      }
    }
    if (before.file != 0 && before.file == after.file && before.line == after.line) return before;
    return {};
  }

  // The nearest sample on the thread, preferring the one just before t.
  LineRef nearestSample(const std::vector<uint32_t>& list, int64_t t) const {
    constexpr int64_t kWindowNs = 20'000'000;
    auto pos = std::lower_bound(list.begin(), list.end(), t,
                                [&](uint32_t idx, int64_t time) { return p_.marks[idx].time_ns < time; });
    for (auto b = pos; b != list.begin();) {
      --b;
      if (t - p_.marks[*b].time_ns > kWindowNs) break;
      if (mark_lines_[*b].file != 0) return mark_lines_[*b];
    }
    for (auto a = pos; a != list.end() && p_.marks[*a].time_ns - t <= kWindowNs; ++a)
      if (mark_lines_[*a].file != 0) return mark_lines_[*a];
    return {};
  }

  // The user line of a forward autograd range: a backtrace inside its outermost autograd
  // ancestor, else the backtraces bracketing it.
  LineRef lineOfForwardRange(int range) {
    int outer = outermostAutograd(range);
    if (outer < 0) outer = range;
    auto cached = range_lines_.find(outer);
    if (cached != range_lines_.end()) return cached->second;
    const auto& r = p_.ranges[static_cast<size_t>(outer)];
    LineRef ref = stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
    if (ref.file == 0) {
      auto it = marks_.find(model::threadKey(r.pid, r.tid));
      if (it != marks_.end()) {
        ref = bracketed(it->second.backtraces, r.start_ns);
        if (ref.file == 0) ref = nearestSample(it->second.samples, r.start_ns);
      }
    }
    range_lines_[outer] = ref;
    return ref;
  }

  // The forward op range of the backward op around range `inner` (its `XBackward0, seq = N`,
  // or the seq child of an `evaluate_function:` wrapper), or -1 when `inner` is not backward work.
  int forwardOpOfBackward(int inner) const {
    for (int j = inner; j >= 0; j = parent_[static_cast<size_t>(j)]) {
      int seq_range = j;
      if (p_.ranges[static_cast<size_t>(j)].seq < 0) {
        if (!p_.strings[p_.ranges[static_cast<size_t>(j)].text].starts_with("autograd::engine::evaluate_function: "))
          continue;
        seq_range = backwardChildOf(j);
        if (seq_range < 0) continue;
      }
      const auto& r = p_.ranges[static_cast<size_t>(seq_range)];
      if (!isBackwardOp(r)) return -1;
      return forwardRangeFor(r);
    }
    return -1;
  }

  // --- Python calls (Kineto python_function) ---

  void indexCalls() {
    if (p_.calls.empty()) return;
    const auto& calls = p_.calls;
    call_tparent_.assign(calls.size(), -1);
    std::vector<int32_t> open;
    uint64_t current = ~0ull;
    for (uint32_t i = 0; i < calls.size(); ++i) {
      const auto& c = calls[i];
      uint64_t key = model::threadKey(c.pid, c.tid);
      if (key != current) {
        if (current != ~0ull) call_threads_[current].second = i;
        call_threads_[key] = {i, i};
        open.clear();
        current = key;
      }
      while (!open.empty() && calls[static_cast<size_t>(open.back())].end_ns < c.end_ns) open.pop_back();
      call_tparent_[i] = open.empty() ? -1 : open.back();
      open.push_back(static_cast<int32_t>(i));
    }
    call_threads_[current].second = static_cast<uint32_t>(calls.size());
    // Children by parent, in time order (calls are sorted by start within a thread; a child on
    // another thread than its parent is rare and sorted in by start below).
    child_offsets_.assign(calls.size() + 1, 0);
    for (const auto& c : calls)
      if (c.parent >= 0) ++child_offsets_[static_cast<size_t>(c.parent) + 1];
    for (size_t i = 0; i < calls.size(); ++i) child_offsets_[i + 1] += child_offsets_[i];
    child_list_.resize(child_offsets_.back());
    std::vector<uint32_t> fill(child_offsets_.begin(), child_offsets_.end() - 1);
    for (uint32_t i = 0; i < calls.size(); ++i)
      if (calls[i].parent >= 0) child_list_[fill[static_cast<size_t>(calls[i].parent)]++] = i;
    for (size_t i = 0; i < calls.size(); ++i)
      std::sort(child_list_.begin() + child_offsets_[i], child_list_.begin() + child_offsets_[i + 1],
                [&](uint32_t a, uint32_t b) { return calls[a].start_ns < calls[b].start_ns; });
  }

  // The innermost Python call on (pid, tid) running at t (2 ns tolerance), or -1.
  int innermostCall(uint32_t pid, uint32_t tid, int64_t t) const {
    constexpr int64_t kToleranceNs = 2;
    auto it = call_threads_.find(model::threadKey(pid, tid));
    if (it == call_threads_.end()) return -1;
    auto first = p_.calls.begin() + it->second.first, last = p_.calls.begin() + it->second.second;
    auto pos = std::upper_bound(first, last, t + kToleranceNs,
                                [](int64_t time, const model::PythonCall& c) { return time < c.start_ns; });
    if (pos == first) return -1;
    int j = static_cast<int>(pos - p_.calls.begin()) - 1;
    while (j >= 0 && p_.calls[static_cast<size_t>(j)].end_ns + kToleranceNs < t)
      j = call_tparent_[static_cast<size_t>(j)];
    return j;
  }

  // Python running at t on another thread of the process (thread 0 holds frames of threads
  // that existed before tracing began: never nested under).
  int callOnOtherThread(uint32_t pid, uint32_t tid, int64_t t) const {
    int best = -1;
    for (const auto& [key, span] : call_threads_) {
      const auto& c = p_.calls[span.first];
      if (c.pid != pid || c.tid == tid || c.tid == 0) continue;
      int j = innermostCall(c.pid, c.tid, t);
      if (j >= 0 &&
          (best < 0 || p_.calls[static_cast<size_t>(j)].start_ns > p_.calls[static_cast<size_t>(best)].start_ns))
        best = j;
    }
    return best;
  }

  bool userFile(model::StringId file) {
    if (file >= user_files_.size()) user_files_.resize(p_.strings.size(), -1);
    int8_t& known = user_files_[file];
    if (known < 0) {
      const std::string& path = p_.strings[file];
      if (o_.is_user_file)
        known = o_.is_user_file(path) ? 1 : 0;
      else if (o_.call_sites)
        known = o_.call_sites(path) ? 1 : 0;
      else
        known = isDefaultUserFile(path) && !isTrimmedLibraryPath(path) && !contains(path, "torchinductor") ? 1 : 0;
    }
    return known == 1;
  }

  struct Invocation {
    const CallSiteTable* table = nullptr;
    int function = -1;
    std::vector<std::pair<uint32_t, Placement>> placements;  // by child call index
  };

  const Invocation& invocationOf(int frame) {
    auto found = invocations_.find(frame);
    if (found != invocations_.end()) return found->second;
    Invocation& inv = invocations_[frame];
    const auto& f = p_.calls[static_cast<size_t>(frame)];
    if (!o_.call_sites) return inv;
    inv.table = o_.call_sites(p_.strings[f.file]);
    if (!inv.table) return inv;
    inv.function = inv.table->functionFor(p_.strings[f.function], f.line);
    if (inv.function < 0) return inv;
    const SiteFunction& fn = inv.table->functions[static_cast<size_t>(inv.function)];
    std::vector<TracedChild> children;
    std::vector<uint32_t> ids;
    for (uint32_t k = child_offsets_[static_cast<size_t>(frame)]; k < child_offsets_[static_cast<size_t>(frame) + 1];
         ++k) {
      uint32_t id = child_list_[k];
      const auto& c = p_.calls[id];
      TracedChild child;
      child.kind = c.kind;
      child.name = p_.strings[c.function];
      // Names one and two calls down: a decorator's `wrapper` hides `step`, `inner` hides `zero_grad`.
      for (uint32_t g = child_offsets_[id]; g < child_offsets_[id + 1] && child.alt_names.size() < 24; ++g) {
        uint32_t gid = child_list_[g];
        child.alt_names.push_back(p_.strings[p_.calls[gid].function]);
        for (uint32_t h = child_offsets_[gid]; h < child_offsets_[gid + 1] && child.alt_names.size() < 24; ++h)
          child.alt_names.push_back(p_.strings[p_.calls[child_list_[h]].function]);
      }
      children.push_back(std::move(child));
      ids.push_back(id);
    }
    int32_t running = f.line != fn.def_line && f.line > fn.def_line && f.line != fn.first_line ? f.line : 0;
    if (inv.function == 0 && f.line > 1) running = f.line;
    auto placed = alignChildren(fn, children, running);
    for (size_t i = 0; i < ids.size(); ++i) inv.placements.emplace_back(ids[i], placed[i]);
    std::sort(inv.placements.begin(), inv.placements.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return inv;
  }

  // The line of the Python code running at t on (pid, tid): the innermost user frame, and the
  // call in its body that leads to t.
  LineRef lineAtPython(uint32_t pid, uint32_t tid, int64_t t) {
    int leaf = innermostCall(pid, tid, t);
    if (leaf < 0) leaf = callOnOtherThread(pid, tid, t);
    if (leaf < 0) return {};
    int child = -1, frame = leaf;
    while (frame >= 0) {
      const auto& f = p_.calls[static_cast<size_t>(frame)];
      if (f.kind == model::CallKind::Function && userFile(f.file)) break;
      child = frame;
      frame = f.parent;
    }
    if (frame < 0) return {};
    const auto& f = p_.calls[static_cast<size_t>(frame)];
    const Invocation& inv = invocationOf(frame);
    int32_t def_line = f.line;
    if (inv.table && inv.function > 0) def_line = inv.table->functions[static_cast<size_t>(inv.function)].def_line;
    LineRef fallback{f.file, def_line, Method::Function, false};
    if (child < 0 || !enabled(Method::Aligned)) return enabled(Method::Function) ? fallback : LineRef{};
    auto pos = std::lower_bound(inv.placements.begin(), inv.placements.end(), static_cast<uint32_t>(child),
                                [](const auto& entry, uint32_t id) { return entry.first < id; });
    if (pos != inv.placements.end() && pos->first == static_cast<uint32_t>(child) && pos->second.line > 0)
      return {f.file, pos->second.line, Method::Aligned, false};
    return enabled(Method::Function) ? fallback : LineRef{};
  }

  // A launch's line from Python calls: backward work at its forward op, the rest where it ran.
  LineRef lineFromCalls(const model::ApiCall& c) {
    int inner = innermostRange(c.pid, c.tid, c.start_ns);
    int fwd = forwardOpOfBackward(inner);
    if (fwd >= 0) {
      const auto& r = p_.ranges[static_cast<size_t>(fwd)];
      LineRef ref = lineAtPython(r.pid, r.tid, r.start_ns);
      ref.backward = true;
      if (ref.file != 0) return ref;
    }
    LineRef ref = lineAtPython(c.pid, c.tid, c.start_ns);
    ref.backward = inBackwardOp(inner);
    return ref;
  }

  bool enabled(Method m) const { return (o_.methods >> static_cast<unsigned>(m)) & 1u; }

  LineRef lineOfCall(size_t api) {
    if (api_done_[api]) return api_lines_[api];
    api_done_[api] = true;
    const auto& c = p_.api_calls[api];
    LineRef ref;
    if (!p_.calls.empty()) {
      ref = lineFromCalls(c);
      if (ref.file != 0) return api_lines_[api] = ref;
    }
    if (enabled(Method::Stack)) {
      ref = stackLineWithin(c.pid, c.tid, c.start_ns, c.end_ns);
      if (ref.file != 0) return api_lines_[api] = ref;
    }

    int inner = innermostRange(c.pid, c.tid, c.start_ns);
    // Backward: the innermost autograd range with a seq on this thread is an XBackward op (or
    // work the engine runs inside `evaluate_function: XBackward0` after it closed).
    int fwd = enabled(Method::Backward) ? forwardOpOfBackward(inner) : -1;
    if (fwd >= 0) {
      ref = lineOfForwardRange(fwd);
      if (ref.file != 0) {
        ref.method = Method::Backward;
        ref.backward = true;
        return api_lines_[api] = ref;
      }
    }
    // Op: the outermost forward autograd range around the call has a backtraced call.
    int outer = outermostAutograd(inner);
    if (enabled(Method::Op) && outer >= 0 && !isBackwardOp(p_.ranges[static_cast<size_t>(outer)])) {
      const auto& r = p_.ranges[static_cast<size_t>(outer)];
      ref = stackLineWithin(r.pid, r.tid, r.start_ns, r.end_ns);
      if (ref.file != 0) {
        ref.method = Method::Op;
        return api_lines_[api] = ref;
      }
    }
    auto it = marks_.find(model::threadKey(c.pid, c.tid));
    if (it != marks_.end()) {
      ref = enabled(Method::Inferred) ? bracketed(it->second.backtraces, c.start_ns) : LineRef{};
      if (ref.file != 0) {
        ref.method = Method::Inferred;
        return api_lines_[api] = ref;
      }
      ref = enabled(Method::Sample) ? nearestSample(it->second.samples, c.start_ns) : LineRef{};
      if (ref.file != 0) {
        ref.method = Method::Sample;
        return api_lines_[api] = ref;
      }
    }
    // Nvtx: the innermost user range that a source site opens around the call: on its own
    // thread, else on another thread of the process (`loss.backward()` pushes its range on the
    // main thread while the autograd engine's thread launches the kernels).
    if (enabled(Method::Nvtx) && !sites_by_text_.empty()) {
      int site = siteRangeAround(c.pid, c.tid, c.start_ns);
      if (site < 0) site = siteRangeAround(c.pid, ~0u, c.start_ns);
      if (site >= 0) {
        const auto& r = p_.ranges[static_cast<size_t>(site)];
        const NvtxSite& s = o_.nvtx_sites[sites_by_text_.at(p_.strings[r.text])];
        return api_lines_[api] = LineRef{s.file, s.line, Method::Nvtx, inBackwardOp(inner)};
      }
    }
    return api_lines_[api] = LineRef{};
  }

  // The latest-starting site range of the process containing t (on thread `tid`, or on any
  // thread when tid is ~0u), or -1.
  int siteRangeAround(uint32_t pid, uint32_t tid, int64_t t) const {
    auto it = site_ranges_.find(pid);
    if (it == site_ranges_.end()) return -1;
    const auto& [list, max_end] = it->second;
    auto pos = std::upper_bound(list.begin(), list.end(), t,
                                [&](int64_t time, uint32_t idx) { return time < p_.ranges[idx].start_ns; });
    for (size_t i = static_cast<size_t>(pos - list.begin()); i-- > 0 && max_end[i] >= t;) {
      const auto& r = p_.ranges[list[i]];
      if (r.end_ns >= t && (tid == ~0u || r.tid == tid)) return static_cast<int>(list[i]);
    }
    return -1;
  }

  // Per process: the user ranges whose text a site opens, by start, with the running maximum
  // of their ends (so a backwards scan stops once nothing earlier can still be open).
  void indexSiteRanges() {
    if (sites_by_text_.empty()) return;
    for (uint32_t i = 0; i < p_.ranges.size(); ++i) {
      const auto& r = p_.ranges[i];
      if (r.op == 0 && sites_by_text_.count(p_.strings[r.text])) site_ranges_[r.pid].first.push_back(i);
    }
    for (auto& [pid, entry] : site_ranges_) {
      auto& [list, max_end] = entry;
      std::sort(list.begin(), list.end(),
                [&](uint32_t a, uint32_t b) { return p_.ranges[a].start_ns < p_.ranges[b].start_ns; });
      int64_t running = INT64_MIN;
      for (uint32_t idx : list) max_end.push_back(running = std::max(running, p_.ranges[idx].end_ns));
    }
  }

  // Whether the call runs inside an autograd backward op (so its GPU time is backward time).
  bool inBackwardOp(int range) const {
    for (int j = range; j >= 0; j = parent_[static_cast<size_t>(j)]) {
      const auto& r = p_.ranges[static_cast<size_t>(j)];
      if (isBackwardOp(r) || p_.strings[r.text].starts_with("autograd::engine::evaluate_function: ")) return true;
    }
    return false;
  }

  // Ranges of one text on the thread where it occurs most.
  size_t rangeCount(const std::string& text) const {
    std::unordered_map<uint64_t, size_t> per_thread;
    size_t best = 0;
    for (const auto& r : p_.ranges)
      if (r.op == 0 && p_.strings[r.text] == text) best = std::max(best, ++per_thread[model::threadKey(r.pid, r.tid)]);
    return best;
  }

  // Iterations: PyTorch's ProfilerStep#N ranges, else wrap-arounds of the loop frame's line.
  void detectSteps(Attribution& out) const {
    std::set<model::StringId> step_ranges;
    for (const auto& r : p_.ranges)
      if (p_.strings[r.text].rfind("ProfilerStep#", 0) == 0) step_ranges.insert(r.text);
    if (!step_ranges.empty()) {
      out.steps = static_cast<int>(step_ranges.size());
      out.steps_source = "ProfilerStep ranges";
      return;
    }
    // User ranges opened once per step: of the per-step sites, the text seen the fewest times
    // (twice or more), so ranges inside a gradient-accumulation loop do not count micro-steps.
    std::string fewest;
    size_t fewest_count = 0;
    std::set<std::string> seen;
    for (const auto& site : o_.nvtx_sites) {
      if (!site.per_step || !seen.insert(site.text).second) continue;
      size_t n = rangeCount(site.text);
      if (n >= 2 && (fewest_count == 0 || n < fewest_count)) fewest = site.text, fewest_count = n;
    }
    if (fewest_count > 0) {
      out.steps = static_cast<int>(fewest_count);
      out.steps_source = "NVTX range \"" + fewest + "\" opened once per step";
      return;
    }
    // The thread with the most backtraces runs the loop. Its loop frame is the outermost user
    // frame whose line changes between marks; every time that line jumps back, a step began.
    uint64_t best = 0;
    size_t best_count = 0;
    for (const auto& [key, t] : marks_)
      if (t.backtraces.size() > best_count) best = key, best_count = t.backtraces.size();
    if (best_count < 2) return;
    const auto& list = marks_.at(best).backtraces;
    std::map<std::pair<model::StringId, model::StringId>, std::set<int32_t>> lines_by_frame;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& fr = p_.frames[m.first_frame + f];
        if (is_user_(p_.strings[fr.file])) lines_by_frame[{fr.file, fr.function}].insert(fr.line);
      }
    }
    // Outermost varying frame: the one seen in the most marks with more than one line.
    std::pair<model::StringId, model::StringId> loop{0, 0};
    size_t loop_depth = 0;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = m.frame_count; f-- > 0;) {
        const auto& fr = p_.frames[m.first_frame + f];
        auto key = std::make_pair(fr.file, fr.function);
        if (!is_user_(p_.strings[fr.file]) || lines_by_frame[key].size() < 2) continue;
        size_t depth = m.frame_count - f;
        if (loop.first == 0 || depth < loop_depth) loop = key, loop_depth = depth;
        break;
      }
    }
    if (loop.first == 0) return;
    int wraps = 0;
    int32_t last = -1;
    for (uint32_t idx : list) {
      const auto& m = p_.marks[idx];
      for (uint32_t f = 0; f < m.frame_count; ++f) {
        const auto& fr = p_.frames[m.first_frame + f];
        if (fr.file != loop.first || fr.function != loop.second) continue;
        if (last >= 0 && fr.line < last) ++wraps;
        last = fr.line;
        break;
      }
    }
    out.steps = wraps + 1;
    out.steps_source = "loop line of " + p_.strings[loop.second] + "() in Python backtraces";
  }

  const Profile& p_;
  const Options& o_;
  std::unordered_map<std::string_view, size_t> sites_by_text_;  // first site per range text
  std::unordered_map<uint32_t, std::pair<std::vector<uint32_t>, std::vector<int64_t>>> site_ranges_;
  std::function<bool(std::string_view)> is_user_;
  std::unordered_map<uint64_t, ThreadMarks> marks_;
  std::unordered_map<uint64_t, ThreadRanges> ranges_;
  std::vector<LineRef> mark_lines_;
  std::vector<int> parent_;
  std::vector<uint32_t> forward_by_seq_;  // forward ranges with a seq, by (pid, seq, start)
  std::unordered_map<int, LineRef> range_lines_;
  std::vector<LineRef> api_lines_;
  std::vector<bool> api_done_;
  std::vector<int64_t> api_ops_;       // forward op name per API call, -1 until computed
  std::vector<int32_t> call_tparent_;  // the enclosing Python call on the same thread, by time
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> call_threads_;  // thread -> [first, last) of calls
  std::vector<uint32_t> child_offsets_, child_list_;                          // children by parent, in time order
  std::vector<int8_t> user_files_;                                            // by file string: -1 unknown
  std::unordered_map<int, Invocation> invocations_;
};

}  // namespace

const char* methodName(Method m) {
  switch (m) {
    case Method::Stack:
      return "stack";
    case Method::Op:
      return "op";
    case Method::Backward:
      return "backward";
    case Method::Inferred:
      return "inferred";
    case Method::Sample:
      return "sample";
    case Method::Nvtx:
      return "nvtx";
    case Method::Aligned:
      return "aligned";
    case Method::Function:
      return "function";
  }
  return "?";
}

void addCost(LineCost& into, const LineCost& from) {
  into.gpu_ns += from.gpu_ns;
  into.forward_ns += from.forward_ns;
  into.backward_ns += from.backward_ns;
  for (size_t m = 0; m < kMethodCount; ++m) into.by_method[m] += from.by_method[m];
  into.kernels += from.kernels;
  into.launches += from.launches;
  for (const auto& [name, stat] : from.by_name) {
    into.by_name[name].count += stat.count;
    into.by_name[name].ns += stat.ns;
  }
  into.memcpy_bytes += from.memcpy_bytes;
  into.pageable_bytes += from.pageable_bytes;
  into.memcpy_ns += from.memcpy_ns;
  for (size_t k = 0; k < into.memcpy_bytes_by_kind.size(); ++k)
    into.memcpy_bytes_by_kind[k] += from.memcpy_bytes_by_kind[k];
  into.memset_ns += from.memset_ns;
  into.memsets += from.memsets;
  into.sync_memcpy_bytes += from.sync_memcpy_bytes;
  into.sync_memcpy_ns += from.sync_memcpy_ns;
  into.sync_memcpys += from.sync_memcpys;
  into.idle_ns += from.idle_ns;
  into.idle_gaps += from.idle_gaps;
  into.sync_ns += from.sync_ns;
  into.syncs += from.syncs;
  for (const auto& [name, n] : from.sync_apis) into.sync_apis[name] += n;
  for (const auto& [name, n] : from.autograd_ops) into.autograd_ops[name] += n;
}

bool isDefaultUserFile(std::string_view path) {
  if (path.empty() || path[0] == '<') return false;
  if (contains(path, "site-packages") || contains(path, "dist-packages") || contains(path, "<frozen")) return false;
  // The standard library: .../lib/python3.X/<module>.py (site-packages excluded above).
  auto lib = path.find("/lib/python");
  if (lib != std::string_view::npos) return false;
  return true;
}

Attribution attribute(const Profile& profile, const Options& options) { return Engine(profile, options).run(); }

}  // namespace sightline::attribution
