// Call-site tables from the source index, and the alignment of traced children with them.
#include "analysis/attribution/call_sites.h"

#include <algorithm>
#include <map>
#include <set>

namespace sightline::attribution {
namespace {

// Methods that return the module they are called on: `Net().to(device)` still holds a Net.
bool keepsModule(const std::string& method) {
  static const std::set<std::string> kSame = {"to",       "cuda",  "cpu",  "half",           "float",       "double",
                                              "bfloat16", "train", "eval", "requires_grad_", "share_memory"};
  return kSame.count(method) > 0;
}

// Dunder hooks the interpreter calls on attribute access, hashing and checks: no call in the
// source stands for them, and they launch nothing.
bool isHook(std::string_view name) {
  static const std::set<std::string_view> kHooks = {
      "__getattr__", "__setattr__",       "__getattribute__",  "__delattr__", "__hash__",
      "__eq__",      "__instancecheck__", "__subclasscheck__", "__get__",     "__set__",
      "__bool__",    "__len__",           "__contains__",      "__repr__",    "__format__"};
  return kHooks.count(name) > 0;
}

bool isDunder(std::string_view name) { return name.size() > 4 && name.starts_with("__") && name.ends_with("__"); }

struct Ordered {
  uint32_t order = 0;  // evaluation order key: the end of the call
  SiteCall call;
};

}  // namespace

CallSiteTable buildCallSites(const source::SourceFile& file, const source::SourceIndex& index) {
  auto lineOf = [&](uint32_t offset) { return static_cast<int32_t>(file.lines().pointAt(offset).line) + 1; };
  CallSiteTable table;
  SiteFunction module;
  module.name = "<module>";
  module.first_line = 1;
  module.last_line = static_cast<int32_t>(file.lines().lineCount());
  table.functions.push_back(module);
  std::set<std::string> defined;
  for (const auto& f : index.functions) {
    SiteFunction sf;
    sf.name = f.name;
    sf.def_line = static_cast<int32_t>(f.def_line) + 1;
    sf.last_line = static_cast<int32_t>(f.end_line) + 1;
    // Decorators sit on the lines just above the def; a traced frame names the first of them.
    sf.first_line = sf.def_line;
    const std::string& text = file.text();
    for (int32_t l = sf.def_line - 1; l >= 1; --l) {
      uint32_t start = file.lines().lineStart(static_cast<uint32_t>(l - 1));
      size_t k = start;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      if (k >= text.size() || text[k] != '@') break;
      sf.first_line = l;
    }
    table.functions.push_back(sf);
    defined.insert(f.name);
  }
  // What names and attributes hold an nn.Module of a known class: `self.conv = nn.Conv2d(..)`,
  // `model = Net().to(device)`.
  std::map<std::string, std::vector<std::string>> module_of;
  std::set<std::string> assigned;
  // `for block in self.blocks: x = block(x)`: the loop's targets hold modules as much as names do.
  for (const auto& loop : index.loops) assigned.insert(loop.targets.begin(), loop.targets.end());
  for (const auto& a : index.assignments) {
    for (const auto& t : a.targets) assigned.insert(t);
    if (a.value_call < 0) continue;
    int call = a.value_call;
    while (call >= 0 && keepsModule(index.calls[static_cast<size_t>(call)].method))
      call = index.calls[static_cast<size_t>(call)].receiver_call;
    if (call < 0) continue;
    // The class as imported: `DDP(model)` is DistributedDataParallel in the profile.
    const auto& made = index.calls[static_cast<size_t>(call)];
    std::string cls = made.resolved.empty() ? made.method : made.resolved.substr(made.resolved.rfind('.') + 1);
    if (cls.empty() || !std::isupper(static_cast<unsigned char>(cls[0]))) continue;
    for (const auto& t : a.targets) {
      auto& classes = module_of[t];
      if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
    }
  }
  std::vector<std::vector<Ordered>> calls(table.functions.size());
  for (const auto& c : index.calls) {
    Ordered o;
    o.order = c.range.end;
    o.call.line = lineOf(c.range.begin);
    o.call.name = c.method;
    auto m = module_of.find(c.callee_text);
    if (m != module_of.end()) o.call.module_classes = m->second;
    bool plain = c.callee_text.find_first_of("()[]") == std::string::npos;
    o.call.object_call = plain && !defined.count(c.method) &&
                         ((c.callee_text.starts_with("self.") && c.callee_text.find('.', 5) == std::string::npos) ||
                          assigned.count(c.callee_text) > 0);
    calls[static_cast<size_t>(c.function) + 1].push_back(std::move(o));
  }
  // `for x in loader:` calls the iterator's __next__ before each pass over the body.
  for (const auto& loop : index.loops) {
    if (loop.kind != source::LoopKind::For) continue;
    Ordered o;
    o.order = loop.header.end;
    o.call.line = lineOf(loop.header.begin);
    o.call.name = "__next__";
    calls[static_cast<size_t>(loop.function) + 1].push_back(std::move(o));
  }
  for (size_t f = 0; f < calls.size(); ++f) {
    std::stable_sort(calls[f].begin(), calls[f].end(),
                     [](const Ordered& a, const Ordered& b) { return a.order < b.order; });
    for (auto& o : calls[f]) table.functions[f].calls.push_back(std::move(o.call));
  }
  return table;
}

int CallSiteTable::functionFor(std::string_view name, int32_t line) const {
  if (name == "<module>") return 0;
  for (size_t i = 1; i < functions.size(); ++i)
    if (functions[i].name == name && functions[i].first_line <= line && line <= functions[i].def_line)
      return static_cast<int>(i);
  int best = -1;
  for (size_t i = 1; i < functions.size(); ++i) {
    const auto& f = functions[i];
    if (f.name == name && f.def_line < line && line <= f.last_line &&
        (best < 0 || f.def_line > functions[static_cast<size_t>(best)].def_line))
      best = static_cast<int>(i);
  }
  return best;
}

std::vector<Placement> alignChildren(const SiteFunction& function, const std::vector<TracedChild>& children,
                                     int32_t running_line) {
  const auto& calls = function.calls;
  std::vector<Placement> out(children.size());
  std::vector<int> match(children.size(), -1);
  std::vector<bool> ignored(children.size(), false);
  auto named = [&](const SiteCall& call, std::string_view name) {
    if (name.empty()) return false;
    if (name == "__next__" || name == "__iter__") return call.name == "__next__";
    return call.name == name;
  };
  auto strong = [&](const SiteCall& call, const TracedChild& child) {
    switch (child.kind) {
      case model::CallKind::Module:
        return std::find(call.module_classes.begin(), call.module_classes.end(), child.name) !=
               call.module_classes.end();
      case model::CallKind::Function:
      case model::CallKind::Builtin:
        return named(call, child.name);
    }
    return false;
  };
  auto viaCallee = [&](const SiteCall& call, const TracedChild& child) {
    for (auto alt : child.alt_names)
      if (!isDunder(alt) && named(call, alt)) return true;
    return false;
  };
  auto weak = [&](const SiteCall& call, const TracedChild& child) {
    return child.kind == model::CallKind::Module && call.module_classes.empty() && call.object_call;
  };
  int cursor = -1;
  if (running_line > 0)
    for (size_t j = 0; j < calls.size(); ++j)
      if (calls[j].line >= running_line) {
        cursor = static_cast<int>(j) - 1;
        break;
      }
  // The next call after the cursor that `pred` accepts, wrapping around (loops repeat).
  auto next = [&](auto&& pred, const TracedChild& child) {
    int n = static_cast<int>(calls.size());
    for (int k = 1; k <= n; ++k) {
      int j = (cursor + k) % n;
      if (j < 0) j += n;
      if (pred(calls[static_cast<size_t>(j)], child)) return j;
    }
    return -1;
  };
  for (size_t i = 0; i < children.size(); ++i) {
    const auto& child = children[i];
    if (child.is_op) continue;
    if (child.kind == model::CallKind::Function && isHook(child.name)) {
      ignored[i] = true;
      continue;
    }
    int j = next(strong, child);
    if (j < 0) j = next(viaCallee, child);
    if (j < 0) j = next(weak, child);
    if (j < 0) continue;
    match[i] = cursor = j;
    out[i] = {calls[static_cast<size_t>(j)].line, true};
  }
  // Unnamed children between two matches take the calls between them, when the counts agree.
  int last = -1;
  for (size_t i = 0; i < children.size(); ++i) {
    if (match[i] < 0) continue;
    if (last >= 0) {
      std::vector<size_t> gap;
      for (size_t k = static_cast<size_t>(last) + 1; k < i; ++k)
        if (match[k] < 0 && !ignored[k] && !children[k].is_op) gap.push_back(k);
      int from = match[static_cast<size_t>(last)], to = match[i];
      if (!gap.empty() && to > from && static_cast<size_t>(to - from - 1) == gap.size())
        for (size_t g = 0; g < gap.size(); ++g) out[gap[g]] = {calls[static_cast<size_t>(from) + 1 + g].line, true};
    }
    last = static_cast<int>(i);
  }
  return out;
}

}  // namespace sightline::attribution
