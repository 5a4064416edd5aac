// Stacks through Inductor's generated code, rewritten onto the user's lines.
#include "analysis/attribution/compiled_frames.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

namespace sightline::attribution {

std::string generatedModuleName(std::string_view path) {
  if (!path.ends_with(".py")) return "";  // first: most names are kernels' and functions'
  size_t slash = path.find_last_of("/\\");
  std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (!file.ends_with(".py") || file.size() < 3 + 30 || file[0] != 'c') return "";
  std::string_view stem = file.substr(0, file.size() - 3);
  for (char ch : stem)
    if (!(std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)))) return "";
  return std::string(stem);
}

namespace {

// The folder holding the two-letter folder of a module (`<cache>/xx/c<hash>.py` -> `<cache>`).
std::string cacheDirOf(std::string_view path) {
  size_t a = path.find_last_of('/');
  if (a == std::string_view::npos) return "";
  size_t b = path.find_last_of('/', a - 1);
  if (b == std::string_view::npos || b == 0) return "";
  return std::string(path.substr(0, b));
}

const model::CompiledLaunch* launchAt(const model::CompiledModule& m, int32_t line) {
  auto it = std::upper_bound(m.launches.begin(), m.launches.end(), line,
                             [](int32_t l, const model::CompiledLaunch& x) { return l < x.line; });
  if (it == m.launches.begin()) return nullptr;
  --it;
  return it->stack.empty() ? nullptr : &*it;
}

bool hasLines(const model::CompiledModule& m) {
  return std::any_of(m.launches.begin(), m.launches.end(), [](const auto& l) { return !l.stack.empty(); });
}

// A module the profile ran that the code read lacks by name (or holds as a wrapper only, which
// names no line) (the code was generated again, or
// its cache copied and rebuilt elsewhere: the name hashes the source, which names paths) is the
// one module read whose launch lines are the lines the profile's stacks stopped at in it: all
// of them (at least 90%), and no other module as many.
void substituteModules(const model::Profile& profile, const model::CompiledCode* code,
                       std::unordered_map<std::string, const model::CompiledModule*>& modules, CompiledMapping& out) {
  if (!code || code->modules.empty()) return;
  std::map<std::string, std::set<int32_t>> lines_of;  // missing module -> the lines its frames were at
  std::set<std::string> ran;
  std::unordered_map<model::StringId, std::string> name_of;
  for (const auto& mark : profile.marks)
    for (uint32_t f = 0; f < mark.frame_count; ++f) {
      const model::Frame& frame = profile.frames[mark.first_frame + f];
      auto [it, added] = name_of.try_emplace(frame.file);
      if (added) it->second = generatedModuleName(profile.strings[frame.file]);
      if (it->second.empty()) continue;
      ran.insert(it->second);
      if (auto m = modules.find(it->second); m == modules.end() || !hasLines(*m->second))
        lines_of[it->second].insert(frame.line);
      break;
    }
  std::set<const model::CompiledModule*> taken;
  for (const auto& [name, lines] : lines_of) {
    const model::CompiledModule* best = nullptr;
    size_t best_hits = 0;
    bool tie = false;
    for (const auto& m : code->modules) {
      if (ran.count(m.name) || taken.count(&m) || !hasLines(m)) continue;
      size_t hits = 0;
      for (int32_t line : lines) {
        auto it = std::lower_bound(m.launches.begin(), m.launches.end(), line,
                                   [](const model::CompiledLaunch& x, int32_t l) { return x.line < l; });
        hits += it != m.launches.end() && it->line == line ? 1 : 0;
      }
      if (hits > best_hits) {
        best = &m, best_hits = hits, tie = false;
      } else if (hits == best_hits && best && hits > 0) {
        // The same code twice (one graph compiled in two places) is no tie.
        auto sameKernels = [](const model::CompiledModule& a, const model::CompiledModule& b) {
          return std::equal(a.launches.begin(), a.launches.end(), b.launches.begin(), b.launches.end(),
                            [](const auto& x, const auto& y) { return x.line == y.line && x.kernel == y.kernel; });
        };
        tie = tie || !sameKernels(*best, m);
      }
    }
    if (!best || tie || best_hits * 10 < lines.size() * 9) continue;
    modules[name] = best;
    taken.insert(best);
    out.substituted.push_back({name, best->name});
  }
}

}  // namespace

namespace {

// Maps the profile's stacks through the generated code, one stage per method (see
// mapCompiledFrames).
class FrameMapper {
 public:
  FrameMapper(model::Profile& profile, const model::CompiledCode* code) : profile_(profile), code_(code) {}

  CompiledMapping run() {
    readSites();
    substituteModules(profile_, code_, modules_, out_);
    out_.mark_site.assign(profile_.marks.size(), -1);
    out_.mark_outer.assign(profile_.marks.size(), 0);
    std::vector<Rewrite*> rewrite_of(profile_.marks.size(), nullptr);
    for (size_t mi = 0; mi < profile_.marks.size(); ++mi) {
      const auto& mark = profile_.marks[mi];
      auto key = std::pair(mark.first_frame, mark.frame_count);
      auto found = done_.find(key);
      if (found == done_.end()) found = done_.emplace(key, rewrite(mark)).first;
      rewrite_of[mi] = &found->second;
      const Rewrite& rw = found->second;
      if (rw.mapped && !rw.backward && !rw.graph.empty()) {
        ++callers_[rw.graph][{rw.first + rw.outer, rw.count - rw.outer}];
        forward_threads_[rw.graph].insert(model::threadKey(mark.pid, mark.tid));
      }
    }
    placeBackwardUnderCallers();
    for (size_t mi = 0; mi < profile_.marks.size(); ++mi) apply(mi, *rewrite_of[mi]);
    mapTracedCalls();
    out_.missing_modules.assign(missing_.begin(), missing_.end());
    out_.lineless_modules.assign(lineless_.begin(), lineless_.end());
    for (const auto& d : dirs_)
      if (!d.empty()) out_.generated_dirs.push_back(d);
    for (const auto& [at, other] : fused_) out_.fused[at].push_back(other);
    return std::move(out_);
  }

 private:
  struct Rewrite {
    uint32_t first = 0, count = 0;
    bool backward = false, mapped = false, generated = false;
    int32_t site = -1;
    uint32_t outer = 0;
    std::string graph;          // the AOT graph's number ("0" of "0_forward"), "" when not named
    uint32_t pid = 0, tid = 0;  // the first mark's thread
  };

  // Every launch of the modules read, as a site, module by module.
  void readSites() {
    if (!code_) return;
    for (uint32_t mi = 0; mi < code_->modules.size(); ++mi) {
      const auto& m = code_->modules[mi];
      modules_.emplace(m.name, &m);
      first_site_[&m] = static_cast<uint32_t>(out_.sites.size());
      for (const auto& l : m.launches) {
        CompiledMapping::Site site;
        site.module = mi;
        site.backward = m.backward;
        site.single = l.kernel.starts_with("triton_");
        site.kernel = l.kernel;
        for (const auto& f : l.stack) site.stack.push_back({profile_.strings.intern(f.file), f.line});
        if (!site.stack.empty()) site.at = site.stack.back();
        out_.sites.push_back(std::move(site));
      }
    }
  }

  const std::string& moduleOf(model::StringId file) {
    auto [it, added] = module_of_.emplace(file, std::string());
    if (added) it->second = generatedModuleName(profile_.strings[file]);
    return it->second;
  }

  // One stack, rewritten at its innermost frame in generated code: the inner frames (Inductor's
  // runtime), the launch's user frames innermost first, then the frames above the wrapper (the
  // compiled function, the loop).
  Rewrite rewrite(const model::PythonMark& mark) {
    Rewrite rw{mark.first_frame, mark.frame_count};
    rw.pid = mark.pid, rw.tid = mark.tid;
    for (uint32_t f = 0; f < mark.frame_count; ++f) {
      const model::Frame frame = profile_.frames[mark.first_frame + f];
      const std::string& name = moduleOf(frame.file);
      if (name.empty()) continue;
      rw.generated = true;
      dirs_.insert(cacheDirOf(profile_.strings[frame.file]));
      auto m = modules_.find(name);
      if (m == modules_.end()) {
        missing_.insert(name);
        return rw;
      }
      if (!hasLines(*m->second)) lineless_.insert(name);
      const model::CompiledLaunch* launch = launchAt(*m->second, frame.line);
      if (!launch) return rw;
      std::vector<model::Frame> frames(profile_.frames.begin() + mark.first_frame,
                                       profile_.frames.begin() + mark.first_frame + f);
      for (auto s = launch->stack.rbegin(); s != launch->stack.rend(); ++s)
        frames.push_back({profile_.strings.intern(s->function), profile_.strings.intern(s->file), s->line});
      frames.insert(frames.end(), profile_.frames.begin() + mark.first_frame + f + 1,
                    profile_.frames.begin() + mark.first_frame + mark.frame_count);
      store(rw, frames);
      rw.backward = m->second->backward;
      rw.mapped = true;
      rw.site = static_cast<int32_t>(first_site_[m->second] + (launch - m->second->launches.data()));
      rw.outer = f + static_cast<uint32_t>(launch->stack.size());
      rw.graph = m->second->graph.substr(0, m->second->graph.find('_'));
      if (m->second->provenance && launch->stack.size() > 1) out_.provenance = true;
      const auto& charged = launch->stack.back();
      LineKey at{profile_.strings.intern(charged.file), charged.line};
      for (const auto& other : launch->fused) fused_.insert({at, {profile_.strings.intern(other.file), other.line}});
      return rw;
    }
    return rw;
  }

  void store(Rewrite& rw, const std::vector<model::Frame>& frames) {
    rw.first = static_cast<uint32_t>(profile_.frames.size());
    rw.count = static_cast<uint32_t>(frames.size());
    profile_.frames.insert(profile_.frames.end(), frames.begin(), frames.end());
  }

  // A backward graph runs beneath the line that ran its forward (`logits, loss = model(x)`), as
  // eager backward kernels do through their forward ops: on the autograd engine's thread, whose
  // stack holds no user line, the forward's callers go above it (the one that called it most).
  void placeBackwardUnderCallers() {
    for (auto& [key, rw] : done_) {
      if (!rw.mapped || !rw.backward) continue;
      auto c = callers_.find(rw.graph);
      if (c == callers_.end()) continue;
      auto best = std::max_element(c->second.begin(), c->second.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      auto [above_first, above_count] = best->first;
      // On the forward's own thread (no engine thread: the CPU), its stack has the callers already.
      bool shared = forward_threads_[rw.graph].count(model::threadKey(rw.pid, rw.tid)) > 0;
      if (shared || above_count == 0) continue;
      std::vector<model::Frame> frames(profile_.frames.begin() + rw.first,
                                       profile_.frames.begin() + rw.first + rw.count);
      frames.insert(frames.end(), profile_.frames.begin() + above_first,
                    profile_.frames.begin() + above_first + above_count);
      store(rw, frames);
    }
  }

  void apply(size_t mi, const Rewrite& rw) {
    if (!rw.generated) return;
    ++out_.generated_marks;
    if (!rw.mapped) return;
    ++out_.mapped_marks;
    if (rw.backward) ++out_.backward_marks;
    auto& mark = profile_.marks[mi];
    mark.first_frame = rw.first;
    mark.frame_count = rw.count;
    mark.backward = rw.backward;
    mark.compiled = true;
    out_.mark_site[mi] = rw.site;
    out_.mark_outer[mi] = rw.outer;
  }

  // Traced calls of a wrapper's `call()` (PyTorch profiler traces): its sites, for LineResolver.
  void mapTracedCalls() {
    for (uint32_t ci = 0; ci < profile_.calls.size(); ++ci) {
      const auto& call = profile_.calls[ci];
      if (call.kind != model::CallKind::Function) continue;
      const std::string& name = moduleOf(call.file);
      if (name.empty()) continue;
      ++out_.generated_calls;
      dirs_.insert(cacheDirOf(profile_.strings[call.file]));
      auto m = modules_.find(name);
      if (m == modules_.end()) {
        missing_.insert(name);
        continue;
      }
      if (!hasLines(*m->second)) {
        lineless_.insert(name);
        continue;
      }
      if (profile_.strings[call.function] != "call" || m->second->launches.empty()) continue;
      ++out_.mapped_calls;
      auto first = static_cast<int32_t>(first_site_[m->second]);
      out_.traced.push_back({ci, first, first + static_cast<int32_t>(m->second->launches.size())});
      if (m->second->provenance) out_.provenance = true;
    }
  }

  model::Profile& profile_;
  const model::CompiledCode* code_;
  CompiledMapping out_;
  std::unordered_map<std::string, const model::CompiledModule*> modules_;
  std::unordered_map<const model::CompiledModule*, uint32_t> first_site_;
  std::unordered_map<model::StringId, std::string> module_of_;  // file -> module name ("": not generated)
  std::set<std::string> missing_, lineless_, dirs_;
  std::map<std::pair<uint32_t, uint32_t>, Rewrite> done_;  // original stack -> its rewrite
  // Per AOT graph, how often each forward stack called it (the frames above its wrapper), and
  // the threads its forward ran on.
  std::map<std::string, std::map<std::pair<uint32_t, uint32_t>, uint64_t>> callers_;
  std::map<std::string, std::set<uint64_t>> forward_threads_;
  std::set<std::pair<LineKey, LineKey>> fused_;
};

}  // namespace

CompiledMapping mapCompiledFrames(model::Profile& profile, const model::CompiledCode* code) {
  return FrameMapper(profile, code).run();
}

}  // namespace sightline::attribution
