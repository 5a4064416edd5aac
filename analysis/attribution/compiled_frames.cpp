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

}  // namespace

CompiledMapping mapCompiledFrames(model::Profile& profile, const model::CompiledCode* code) {
  CompiledMapping out;
  std::unordered_map<std::string, const model::CompiledModule*> modules;
  std::unordered_map<const model::CompiledModule*, uint32_t> first_site;
  if (code) {
    for (uint32_t mi = 0; mi < code->modules.size(); ++mi) {
      const auto& m = code->modules[mi];
      modules.emplace(m.name, &m);
      first_site[&m] = static_cast<uint32_t>(out.sites.size());
      for (const auto& l : m.launches) {
        CompiledMapping::Site site;
        site.module = mi;
        site.backward = m.backward;
        site.single = l.kernel.starts_with("triton_");
        site.kernel = l.kernel;
        for (const auto& f : l.stack) site.stack.push_back({profile.strings.intern(f.file), f.line});
        if (!site.stack.empty()) site.at = site.stack.back();
        out.sites.push_back(std::move(site));
      }
    }
  }
  out.mark_site.assign(profile.marks.size(), -1);
  out.mark_outer.assign(profile.marks.size(), 0);
  std::unordered_map<model::StringId, std::string> module_of;  // file string -> module name ("": not generated)
  auto moduleOf = [&](model::StringId file) -> const std::string& {
    auto [it, added] = module_of.emplace(file, std::string());
    if (added) it->second = generatedModuleName(profile.strings[file]);
    return it->second;
  };
  std::set<std::string> missing, dirs;
  struct Rewrite {
    uint32_t first = 0, count = 0;
    bool backward = false, mapped = false, generated = false;
    int32_t site = -1;
    uint32_t outer = 0;
  };
  std::map<std::pair<uint32_t, uint32_t>, Rewrite> done;  // original stack -> its rewrite
  std::set<std::pair<LineKey, LineKey>> fused;
  for (size_t mi = 0; mi < profile.marks.size(); ++mi) {
    auto& mark = profile.marks[mi];
    auto key = std::pair(mark.first_frame, mark.frame_count);
    auto found = done.find(key);
    if (found == done.end()) {
      Rewrite rw{mark.first_frame, mark.frame_count};
      for (uint32_t f = 0; f < mark.frame_count; ++f) {
        const model::Frame frame = profile.frames[mark.first_frame + f];
        const std::string& name = moduleOf(frame.file);
        if (name.empty()) continue;
        rw.generated = true;
        dirs.insert(cacheDirOf(profile.strings[frame.file]));
        auto m = modules.find(name);
        if (m == modules.end()) {
          missing.insert(name);
          break;
        }
        const model::CompiledLaunch* launch = launchAt(*m->second, frame.line);
        if (!launch) break;
        // Inner frames (Inductor's runtime), the launch's user frames innermost first, then
        // the frames above the wrapper (the compiled function, the loop).
        std::vector<model::Frame> frames(profile.frames.begin() + mark.first_frame,
                                         profile.frames.begin() + mark.first_frame + f);
        for (auto s = launch->stack.rbegin(); s != launch->stack.rend(); ++s)
          frames.push_back({profile.strings.intern(s->function), profile.strings.intern(s->file), s->line});
        frames.insert(frames.end(), profile.frames.begin() + mark.first_frame + f + 1,
                      profile.frames.begin() + mark.first_frame + mark.frame_count);
        rw.first = static_cast<uint32_t>(profile.frames.size());
        rw.count = static_cast<uint32_t>(frames.size());
        profile.frames.insert(profile.frames.end(), frames.begin(), frames.end());
        rw.backward = m->second->backward;
        rw.mapped = true;
        rw.site = static_cast<int32_t>(first_site[m->second] + (launch - m->second->launches.data()));
        rw.outer = f + static_cast<uint32_t>(launch->stack.size());
        if (m->second->provenance && launch->stack.size() > 1) out.provenance = true;
        const auto& charged = launch->stack.back();
        LineKey at{profile.strings.intern(charged.file), charged.line};
        for (const auto& other : launch->fused) fused.insert({at, {profile.strings.intern(other.file), other.line}});
        break;
      }
      found = done.emplace(key, rw).first;
    }
    const Rewrite& rw = found->second;
    if (!rw.generated) continue;
    ++out.generated_marks;
    if (!rw.mapped) continue;
    ++out.mapped_marks;
    if (rw.backward) ++out.backward_marks;
    mark.first_frame = rw.first;
    mark.frame_count = rw.count;
    mark.backward = rw.backward;
    mark.compiled = true;
    out.mark_site[mi] = rw.site;
    out.mark_outer[mi] = rw.outer;
  }
  for (uint32_t ci = 0; ci < profile.calls.size(); ++ci) {
    const auto& call = profile.calls[ci];
    if (call.kind != model::CallKind::Function) continue;
    const std::string& name = moduleOf(call.file);
    if (name.empty()) continue;
    ++out.generated_calls;
    dirs.insert(cacheDirOf(profile.strings[call.file]));
    auto m = modules.find(name);
    if (m == modules.end()) {
      missing.insert(name);
      continue;
    }
    if (profile.strings[call.function] != "call" || m->second->launches.empty()) continue;
    ++out.mapped_calls;
    auto first = static_cast<int32_t>(first_site[m->second]);
    out.traced.push_back({ci, first, first + static_cast<int32_t>(m->second->launches.size())});
    if (m->second->provenance) out.provenance = true;
  }
  out.missing_modules.assign(missing.begin(), missing.end());
  for (const auto& d : dirs)
    if (!d.empty()) out.generated_dirs.push_back(d);
  for (const auto& [at, other] : fused) out.fused[at].push_back(other);
  return out;
}

}  // namespace sightline::attribution
