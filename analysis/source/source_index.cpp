// SourceIndex queries, PyTorch name knowledge, and the training-loop analysis that runs after
// the walk (it needs the whole file: a loop is a training loop if a function it calls trains).
#include "analysis/source/source_index.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "analysis/source/source_index_rules.h"

namespace sightline::source {
namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string lastSegment(const std::string& dotted) {
  auto dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

bool isCapitalized(const std::string& name) { return !name.empty() && name[0] >= 'A' && name[0] <= 'Z'; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

bool isTorchModuleClass(const std::string& resolved) {
  if (startsWith(resolved, "torch.nn.functional.") || startsWith(resolved, "torch.nn.init.") ||
      startsWith(resolved, "torch.nn.utils."))
    return false;
  if (startsWith(resolved, "torch.nn.") && isCapitalized(lastSegment(resolved))) return true;
  if (startsWith(resolved, "nn.") && isCapitalized(lastSegment(resolved))) return true;
  return resolved == "Module";
}

ValueKind kindOfResolvedCallee(const std::string& r) {
  std::string last = lastSegment(r);
  if (last == "DataLoader") return ValueKind::DataLoader;
  if (startsWith(r, "torch.optim.") && !startsWith(r, "torch.optim.lr_scheduler") && isCapitalized(last))
    return ValueKind::Optimizer;
  if (r == "torch.device") return ValueKind::Device;
  if (isTorchModuleClass(r)) return ValueKind::Module;
  if (startsWith(r, "torchvision.models.") || r == "torch.compile" || r == "torch.jit.script") return ValueKind::Module;
  if (startsWith(r, "torch.nn.functional.")) return ValueKind::Tensor;
  if (!startsWith(r, "torch.")) return ValueKind::Unknown;
  static const char* const kNotTensor[] = {"torch.nn.",
                                           "torch.optim",
                                           "torch.utils.",
                                           "torch.cuda.",
                                           "torch.profiler.",
                                           "torch.backends.",
                                           "torch.distributed.",
                                           "torch.autograd.profiler",
                                           "torch.amp.",
                                           "torch.autocast",
                                           "torch.no_grad",
                                           "torch.inference_mode",
                                           "torch.enable_grad",
                                           "torch.set_",
                                           "torch.manual_seed",
                                           "torch.load",
                                           "torch.save",
                                           "torch.jit.",
                                           "torch.is_",
                                           "torch.get_",
                                           "torch.Generator",
                                           "torch.Size",
                                           "torch.dtype",
                                           "torch.multiprocessing.",
                                           "torch.compiler.",
                                           "torch._dynamo.",
                                           "torch.use_deterministic"};
  for (const char* prefix : kNotTensor)
    if (startsWith(r, prefix)) return ValueKind::Unknown;
  return ValueKind::Tensor;
}

ValueKind kindOfTypeAnnotation(const std::string& r) {
  std::string last = lastSegment(r);
  if (last == "DataLoader") return ValueKind::DataLoader;
  if (r == "torch.Tensor" || last == "Tensor") return ValueKind::Tensor;
  if (r == "torch.nn.Module" || r == "nn.Module") return ValueKind::Module;
  if (startsWith(r, "torch.optim.")) return ValueKind::Optimizer;
  return ValueKind::Unknown;
}

bool returnsModule(const std::string& m) {
  static const std::set<std::string> kSelf = {"to",       "cuda",  "cpu",         "train",    "eval",
                                              "half",     "float", "double",      "bfloat16", "requires_grad_",
                                              "to_empty", "apply", "share_memory"};
  return kSelf.count(m) > 0;
}

bool tensorMethodReturnsTensor(const std::string& m) {
  static const std::set<std::string> kNot = {
      "item",          "tolist",        "numpy",          "size",           "dim",
      "numel",         "nelement",      "element_size",   "data_ptr",       "backward",
      "is_contiguous", "get_device",    "stride",         "storage_offset", "is_floating_point",
      "is_complex",    "register_hook", "untyped_storage"};
  return kNot.count(m) == 0;
}

void SourceIndex::addImport(ImportBinding binding) {
  import_by_name_[binding.local_name] = imports.size();
  imports.push_back(std::move(binding));
}

std::string SourceIndex::resolve(const std::string& dotted) const {
  auto dot = dotted.find('.');
  auto it = import_by_name_.find(dot == std::string::npos ? dotted : dotted.substr(0, dot));
  if (it == import_by_name_.end()) return dotted;
  const std::string& qualified = imports[it->second].qualified_name;
  return dot == std::string::npos ? qualified : qualified + dotted.substr(dot);
}

std::string SourceIndex::localNameFor(const std::string& qualified) const {
  for (const auto& imp : imports)
    if (imp.qualified_name == qualified) return imp.local_name;
  return {};
}

ValueKind SourceIndex::kindOf(const std::string& expression, int function) const {
  if (startsWith(expression, "self.") && function >= 0 && static_cast<size_t>(function) < functions.size()) {
    // Methods of nested functions look at the class of their outermost method.
    int f = function;
    while (f >= 0 && functions[static_cast<size_t>(f)].class_index < 0)
      f = functions[static_cast<size_t>(f)].parent_function;
    if (f >= 0) {
      const auto& attrs = class_attribute_values[static_cast<size_t>(functions[static_cast<size_t>(f)].class_index)];
      auto it = attrs.find(expression);
      if (it != attrs.end() && it->second != ValueKind::Unknown) return it->second;
    }
  } else {
    for (int f = function;; f = functions[static_cast<size_t>(f)].parent_function) {
      size_t scope = static_cast<size_t>(f + 1);
      if (scope < scope_values.size()) {
        auto it = scope_values[scope].find(expression);
        if (it != scope_values[scope].end() && it->second != ValueKind::Unknown) return it->second;
      }
      if (f < 0) break;
    }
  }
  // Names that say what they hold, when nothing in the file says otherwise. Capitalized
  // names are classes, not instances.
  if (isCapitalized(lastSegment(expression))) return ValueKind::Unknown;
  std::string name = lower(lastSegment(expression));
  if (name == "model" || name == "net" || name == "module" || name.find("model") != std::string::npos)
    return ValueKind::Module;
  if (name.find("criterion") != std::string::npos || name.rfind("loss_f", 0) == 0)
    return ValueKind::Module;  // loss functions: calling them gives a tensor
  if (name.find("loader") != std::string::npos) return ValueKind::DataLoader;
  if (name == "opt" || name.find("optimizer") != std::string::npos || name == "optim") return ValueKind::Optimizer;
  return ValueKind::Unknown;
}

bool SourceIndex::inTrainingLoop(int loop) const {
  for (int l = loop; l >= 0; l = loops[static_cast<size_t>(l)].parent_loop)
    if (loops[static_cast<size_t>(l)].is_training) return true;
  return false;
}

bool SourceIndex::inTrainingContext(int loop, int function) const {
  if (inTrainingLoop(loop)) return true;
  return function >= 0 && functions[static_cast<size_t>(function)].reached_from_training_loop;
}

bool SourceIndex::inEvaluation(int loop, int function, ByteRange range) const {
  // A loop over a DataLoader counts as training; one that runs no training call itself and sits
  // under no_grad is an evaluation all the same (the ImageNet example's run_validate).
  bool trains_itself = false;
  for (int l = loop; l >= 0; l = loops[static_cast<size_t>(l)].parent_loop)
    trains_itself = trains_itself || loops[static_cast<size_t>(l)].trains_itself;
  if (trains_itself) return false;
  bool loader_only = inTrainingLoop(loop);
  auto no_grad = [](const std::string& name) {
    return name.find("no_grad") != std::string::npos || name.find("inference_mode") != std::string::npos;
  };
  for (const auto& w : withs) {
    if (!w.body.encloses(range)) continue;
    for (int c : w.item_calls)
      if (no_grad(calls[static_cast<size_t>(c)].resolved)) return true;
  }
  for (int f = function; f >= 0; f = functions[static_cast<size_t>(f)].parent_function) {
    const auto& fn = functions[static_cast<size_t>(f)];
    if (fn.trains) return false;
    if (std::any_of(fn.decorators.begin(), fn.decorators.end(), no_grad)) return true;
    if (loader_only) continue;  // a name or model.eval() does not outweigh the loader
    std::string name = lower(fn.name);
    for (const char* word : {"eval", "valid", "estimate", "test"})
      if (name.find(word) != std::string::npos) return true;
    for (const auto& c : calls)
      if (c.function == f && c.method == "eval" && c.args.empty() && !c.receiver_text.empty()) return true;
  }
  return false;
}

int SourceIndex::blockAt(uint32_t offset) const {
  int best = 0;
  for (size_t b = 1; b < blocks.size(); ++b) {
    const auto& r = blocks[b].range;
    if (r.begin <= offset && offset <= r.end &&
        (r.end - r.begin) <=
            (blocks[static_cast<size_t>(best)].range.end - blocks[static_cast<size_t>(best)].range.begin))
      best = static_cast<int>(b);
  }
  return best;
}

int SourceIndex::functionAt(uint32_t offset) const {
  int best = -1;
  for (size_t f = 0; f < functions.size(); ++f) {
    if (functions[f].range.begin <= offset && offset < functions[f].range.end) best = static_cast<int>(f);
  }
  return best;  // functions are recorded outer first, so the last match is the innermost
}

namespace {

// The same-file function a call runs: `foo(...)` -> a function named foo visible from the
// caller; `self.m(...)` -> method m of the caller's class. -1 when not known.
int calledFunction(const SourceIndex& index, const std::unordered_multimap<std::string, int>& by_name,
                   const CallInfo& call) {
  bool plain = call.receiver_text.empty();
  if (!plain && !(call.receiver_text == "self" && call.function >= 0)) return -1;
  int cls = plain ? -1 : index.functions[static_cast<size_t>(call.function)].class_index;
  if (!plain && cls < 0) return -1;
  int found = -1;
  auto [begin, end] = by_name.equal_range(plain ? call.callee_text : call.method);
  for (auto it = begin; it != end; ++it) {
    const auto& fn = index.functions[static_cast<size_t>(it->second)];
    if (plain && fn.class_index < 0 && (fn.parent_function < 0 || fn.parent_function == call.function))
      found = std::max(found, it->second);
    if (!plain && fn.class_index == cls) found = std::max(found, it->second);
  }
  return found;
}

bool isTrainingCall(const SourceIndex& index, const CallInfo& call) {
  if (call.receiver_text.empty()) return false;
  if (call.method == "backward") return true;
  if (call.method != "step") return false;
  if (lower(call.receiver_text).find("scaler") != std::string::npos) return true;
  return index.kindOf(call.receiver_text, call.function) == ValueKind::Optimizer;
}

void analyzeTraining(SourceIndex& index) {
  std::unordered_multimap<std::string, int> by_name;
  for (size_t f = 0; f < index.functions.size(); ++f) by_name.emplace(index.functions[f].name, static_cast<int>(f));
  std::vector<int> targets(index.calls.size(), -1);
  for (size_t c = 0; c < index.calls.size(); ++c) targets[c] = calledFunction(index, by_name, index.calls[c]);

  // A function trains if it, or a function it calls in this file, calls backward/step.
  for (size_t c = 0; c < index.calls.size(); ++c) {
    const auto& call = index.calls[c];
    if (call.function >= 0 && isTrainingCall(index, call))
      index.functions[static_cast<size_t>(call.function)].trains = true;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < index.calls.size(); ++c) {
      const auto& call = index.calls[c];
      if (call.function < 0 || targets[c] < 0) continue;
      auto& caller = index.functions[static_cast<size_t>(call.function)];
      if (!caller.trains && index.functions[static_cast<size_t>(targets[c])].trains) {
        caller.trains = true;
        changed = true;
      }
    }
  }

  for (auto& loop : index.loops) loop.is_training = loop.iterates_dataloader;
  for (size_t c = 0; c < index.calls.size(); ++c) {
    const auto& call = index.calls[c];
    if (call.loop < 0) continue;
    if (!isTrainingCall(index, call) && !(targets[c] >= 0 && index.functions[static_cast<size_t>(targets[c])].trains))
      continue;
    // The call trains: so do its loop and every loop around it.
    for (int l = call.loop; l >= 0; l = index.loops[static_cast<size_t>(l)].parent_loop) {
      auto& loop = index.loops[static_cast<size_t>(l)];
      if (loop.body.encloses(call.range) || loop.range.encloses(call.range))
        loop.is_training = loop.trains_itself = true;
    }
  }

  // Functions a training loop calls, and the functions those call, run in the loop too.
  for (size_t c = 0; c < index.calls.size(); ++c) {
    if (targets[c] >= 0 && index.inTrainingLoop(index.calls[c].loop))
      index.functions[static_cast<size_t>(targets[c])].reached_from_training_loop = true;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t c = 0; c < index.calls.size(); ++c) {
      const auto& call = index.calls[c];
      if (call.function < 0 || targets[c] < 0) continue;
      auto& callee = index.functions[static_cast<size_t>(targets[c])];
      if (index.functions[static_cast<size_t>(call.function)].reached_from_training_loop &&
          !callee.reached_from_training_loop) {
        callee.reached_from_training_loop = true;
        changed = true;
      }
    }
  }
}

}  // namespace

namespace {

// Parameters that receive tensors at some call site of this file: `step(model, opt, x)`.
void deriveTensorParameters(WalkKnowledge& learned, const std::vector<FunctionInfo>& functions) {
  if (learned.tensor_arguments.empty()) return;
  // `f(...)` calls plain functions named f, `self.m(...)` methods named m.
  std::unordered_multimap<std::string_view, const FunctionInfo*> plain, methods;
  for (const auto& fn : functions) (fn.class_index >= 0 ? methods : plain).emplace(fn.name, &fn);
  for (const auto& [callee, positions] : learned.tensor_arguments) {
    bool method_call = callee.rfind("self.", 0) == 0;
    auto [begin, end] =
        method_call ? methods.equal_range(std::string_view(callee).substr(5)) : plain.equal_range(callee);
    size_t offset = method_call ? 1 : 0;
    for (auto it = begin; it != end; ++it) {
      const FunctionInfo& fn = *it->second;
      for (size_t position : positions)
        if (position + offset < fn.parameters.size())
          learned.tensor_parameters[fn.qualified_name].insert(fn.parameters[position + offset]);
    }
  }
}

}  // namespace

void recordSizes(const SourceIndex& index, ChunkMark& mark) {
  mark.imports = index.imports.size();
  mark.classes = index.classes.size();
  mark.functions = index.functions.size();
  mark.loops = index.loops.size();
  mark.calls = index.calls.size();
  mark.assignments = index.assignments.size();
  mark.withs = index.withs.size();
  mark.statements = index.statements.size();
  mark.blocks = index.blocks.size();
  mark.value_uses = index.value_uses.size();
  mark.comments = index.comments.size();
  mark.multiline_strings = index.multiline_strings.size();
  mark.module_statements = index.blocks.empty() ? 0 : index.blocks[0].statements.size();
}

void WalkKnowledge::merge(const WalkKnowledge& other) {
  tensor_functions.insert(other.tensor_functions.begin(), other.tensor_functions.end());
  for (const auto& [callee, positions] : other.tensor_arguments)
    tensor_arguments[callee].insert(positions.begin(), positions.end());
  for (const auto& [function, names] : other.tensor_parameters)
    tensor_parameters[function].insert(names.begin(), names.end());
}

namespace {

// What the walk learned in all chunks, with the tensor parameters that follows from it.
std::shared_ptr<const WalkKnowledge> learnedOf(const SourceIndex& index) {
  auto out = std::make_shared<WalkKnowledge>();
  for (const auto& mark : index.chunk_marks)
    if (mark.learned) out->merge(*mark.learned);
  deriveTensorParameters(*out, index.functions);
  return out;
}

// Moves an entry of the previous index to its place in the new one: byte offsets and lines by
// how much the edited chunk grew, indices by how many entries it gained of each kind.
struct Shift {
  int64_t bytes = 0, lines = 0;
  int64_t classes = 0, functions = 0, loops = 0, calls = 0, statements = 0, blocks = 0;

  void range(ByteRange& r) const {
    r.begin = static_cast<uint32_t>(r.begin + bytes);
    r.end = static_cast<uint32_t>(r.end + bytes);
  }
  void line(uint32_t& l) const { l = static_cast<uint32_t>(l + lines); }
  static void index(int& i, int64_t by) {
    if (i >= 0) i = static_cast<int>(i + by);
  }

  void operator()(ByteRange& r) const { range(r); }
  void operator()(ImportBinding& b) const { range(b.range); }
  void operator()(ClassInfo& c) const { range(c.range); }
  void operator()(FunctionInfo& f) const {
    range(f.range);
    range(f.body);
    line(f.def_line);
    line(f.end_line);
    index(f.class_index, classes);
    index(f.parent_function, functions);
    f.trains = f.reached_from_training_loop = false;  // analyzeTraining sets them again
  }
  void operator()(LoopInfo& l) const {
    range(l.range);
    range(l.header);
    range(l.body);
    index(l.parent_loop, loops);
    index(l.function, functions);
  }
  void operator()(CallInfo& c) const {
    range(c.range);
    range(c.callee);
    range(c.arguments);
    for (auto& a : c.args) {
      range(a.range);
      range(a.value);
    }
    index(c.receiver_call, calls);
    index(c.function, functions);
    index(c.loop, loops);
    index(c.statement, statements);
  }
  void operator()(AssignmentInfo& a) const {
    range(a.range);
    range(a.value);
    index(a.value_call, calls);
    index(a.function, functions);
    index(a.loop, loops);
    index(a.statement, statements);
  }
  void operator()(WithInfo& w) const {
    range(w.range);
    range(w.body);
    for (int& call : w.item_calls) index(call, calls);
    index(w.function, functions);
    index(w.statement, statements);
  }
  void operator()(StatementInfo& st) const {
    range(st.range);
    line(st.first_line);
    line(st.last_line);
    if (st.block > 0) index(st.block, blocks);  // block 0, the module, stays
  }
  void operator()(BlockInfo& b) const {
    range(b.range);
    index(b.owner_statement, statements);
    for (int& st : b.statements) index(st, statements);
  }
  void operator()(ValueUse& u) const {
    range(u.range);
    index(u.function, functions);
    index(u.loop, loops);
  }
  // Entries that hold no offsets or indices (scopes, class attributes) move as they are.
  template <class T>
  void operator()(T&) const {}

  // `tail`'s entries, moved into place at the end of `into`.
  template <class T>
  void append(std::vector<T>& into, std::vector<T>& tail) const {
    for (auto& entry : tail) {
      (*this)(entry);
      into.push_back(std::move(entry));
    }
  }
};

// The one chunk an edit changed, when the index of the edited file can be built from
// `previous` by walking only that chunk: the previous walk's knowledge had settled (what it
// learned is what it started from) and the file has the same chunks but one.
std::optional<size_t> changedChunk(const SourceFile& file, const SourceIndex& previous) {
  const auto& marks = previous.chunk_marks;
  if (!previous.seed || !previous.knowledge || !(*previous.seed == *previous.knowledge)) return std::nullopt;
  if (marks.size() != file.treeCount() || marks.empty()) return std::nullopt;
  std::optional<size_t> changed;
  for (size_t i = 0; i < marks.size(); ++i) {
    if (marks[i].chunk_id == file.chunkId(i)) continue;
    if (changed) return std::nullopt;  // more than one chunk changed
    changed = i;
  }
  return changed.value_or(0);  // the same text: walk the first chunk again
}

// Entries [from, end) of `v`, moved out; `v` keeps [0, keep).
template <class T>
std::vector<T> cut(std::vector<T>& v, size_t keep, size_t from) {
  from = std::min(from, v.size());
  std::vector<T> tail(std::make_move_iterator(v.begin() + static_cast<std::ptrdiff_t>(from)),
                      std::make_move_iterator(v.end()));
  v.resize(std::min(keep, v.size()));
  return tail;
}

// The index of an edited file from `previous` (consumed): chunk `c` is walked again; the
// chunks after it are taken over (shifted) when chunk `c` left what they see unchanged, else
// walked again too.
void buildIncrementally(const SourceFile& file, SourceIndex&& previous, size_t c, const WalkKnowledge& seed,
                        SourceIndex& index, size_t& walked) {
  std::vector<ChunkMark> marks = std::move(previous.chunk_marks);
  const ChunkMark at = marks[c];
  const bool last = c + 1 == marks.size();
  // Where the chunks after `c` began in `previous` (the ends of its vectors when none follow).
  ChunkMark next;
  if (!last)
    next = marks[c + 1];
  else
    recordSizes(previous, next);
  // What chunk `c` gave later chunks before the edit.
  std::vector<std::pair<std::string, std::string>> old_imports;
  for (size_t k = at.imports; k < next.imports; ++k)
    old_imports.emplace_back(previous.imports[k].local_name, previous.imports[k].qualified_name);
  std::vector<std::pair<std::string, bool>> old_classes;
  for (size_t k = at.classes; k < next.classes; ++k)
    old_classes.emplace_back(previous.classes[k].name, previous.classes[k].is_module);

  // Before the chunk: kept as it was. After it: set aside for the splice.
  std::vector<ImportBinding> imports = std::move(previous.imports);
  auto imports_after = cut(imports, at.imports, next.imports);
  for (auto& b : imports) index.addImport(std::move(b));
  index.classes = std::move(previous.classes);
  auto classes_after = cut(index.classes, at.classes, next.classes);
  index.class_attribute_values = std::move(previous.class_attribute_values);
  auto attributes_after = cut(index.class_attribute_values, at.classes, next.classes);
  index.functions = std::move(previous.functions);
  auto functions_after = cut(index.functions, at.functions, next.functions);
  auto module_scope = std::move(previous.scope_values[0]);
  index.scope_values = std::move(previous.scope_values);
  auto scopes_after = cut(index.scope_values, at.functions + 1, next.functions + 1);
  index.scope_values[0] = c > 0 ? marks[c - 1].module_scope_after : std::map<std::string, ValueKind>{};
  index.loops = std::move(previous.loops);
  auto loops_after = cut(index.loops, at.loops, next.loops);
  index.calls = std::move(previous.calls);
  auto calls_after = cut(index.calls, at.calls, next.calls);
  index.assignments = std::move(previous.assignments);
  auto assignments_after = cut(index.assignments, at.assignments, next.assignments);
  index.withs = std::move(previous.withs);
  auto withs_after = cut(index.withs, at.withs, next.withs);
  index.statements = std::move(previous.statements);
  auto statements_after = cut(index.statements, at.statements, next.statements);
  index.blocks = std::move(previous.blocks);
  auto module_after = cut(index.blocks[0].statements, at.module_statements, next.module_statements);
  auto blocks_after = cut(index.blocks, at.blocks, next.blocks);
  index.value_uses = std::move(previous.value_uses);
  auto uses_after = cut(index.value_uses, at.value_uses, next.value_uses);
  index.comments = std::move(previous.comments);
  auto comments_after = cut(index.comments, at.comments, next.comments);
  index.multiline_strings = std::move(previous.multiline_strings);
  auto strings_after = cut(index.multiline_strings, at.multiline_strings, next.multiline_strings);
  auto marks_after = cut(marks, c, c + 1);
  index.chunk_marks = std::move(marks);
  for (auto& f : index.functions) f.trains = f.reached_from_training_loop = false;

  // The chunk; then, if it changed nothing later chunks see, the rest as it was.
  bool splice = false;
  walkChunks(file, index, seed, c, [&](size_t i) {
    ++walked;
    if (i != c || last) return true;
    bool same = index.scope_values[0] == at.module_scope_after &&
                index.imports.size() - at.imports == old_imports.size() &&
                index.classes.size() - at.classes == old_classes.size();
    for (size_t k = 0; same && k < old_imports.size(); ++k)
      same = index.imports[at.imports + k].local_name == old_imports[k].first &&
             index.imports[at.imports + k].qualified_name == old_imports[k].second;
    for (size_t k = 0; same && k < old_classes.size(); ++k)
      same = index.classes[at.classes + k].name == old_classes[k].first &&
             index.classes[at.classes + k].is_module == old_classes[k].second;
    splice = same;
    return !same;
  });
  if (!splice) return;

  Shift s;
  s.bytes = static_cast<int64_t>(file.chunkRange(c).end) - at.end_byte;
  s.lines = static_cast<int64_t>(index.chunk_marks[c].end_line) - at.end_line;
  auto delta = [](size_t now, size_t then) { return static_cast<int64_t>(now) - static_cast<int64_t>(then); };
  s.classes = delta(index.classes.size(), next.classes);
  s.functions = delta(index.functions.size(), next.functions);
  s.loops = delta(index.loops.size(), next.loops);
  s.calls = delta(index.calls.size(), next.calls);
  s.statements = delta(index.statements.size(), next.statements);
  s.blocks = delta(index.blocks.size(), next.blocks);
  const int64_t d_assignments = delta(index.assignments.size(), next.assignments);
  const int64_t d_withs = delta(index.withs.size(), next.withs);
  const int64_t d_uses = delta(index.value_uses.size(), next.value_uses);
  const int64_t d_comments = delta(index.comments.size(), next.comments);
  const int64_t d_strings = delta(index.multiline_strings.size(), next.multiline_strings);
  const int64_t d_module = delta(index.blocks[0].statements.size(), next.module_statements);

  for (auto& b : imports_after) {
    s(b);
    index.addImport(std::move(b));
  }
  s.append(index.classes, classes_after);
  s.append(index.class_attribute_values, attributes_after);
  s.append(index.functions, functions_after);
  s.append(index.scope_values, scopes_after);
  s.append(index.loops, loops_after);
  s.append(index.calls, calls_after);
  s.append(index.assignments, assignments_after);
  s.append(index.withs, withs_after);
  s.append(index.statements, statements_after);
  s.append(index.blocks, blocks_after);
  for (int st : module_after) index.blocks[0].statements.push_back(static_cast<int>(st + s.statements));
  s.append(index.value_uses, uses_after);
  s.append(index.comments, comments_after);
  s.append(index.multiline_strings, strings_after);
  index.scope_values[0] = std::move(module_scope);
  for (auto& m : marks_after) {
    m.end_byte = static_cast<uint32_t>(m.end_byte + s.bytes);
    m.end_line = static_cast<uint32_t>(m.end_line + s.lines);
    auto by = [](size_t& n, int64_t d) { n = static_cast<size_t>(static_cast<int64_t>(n) + d); };
    by(m.classes, s.classes);
    by(m.functions, s.functions);
    by(m.loops, s.loops);
    by(m.calls, s.calls);
    by(m.assignments, d_assignments);
    by(m.withs, d_withs);
    by(m.statements, s.statements);
    by(m.blocks, s.blocks);
    by(m.value_uses, d_uses);
    by(m.comments, d_comments);
    by(m.multiline_strings, d_strings);
    by(m.module_statements, d_module);
    index.chunk_marks.push_back(std::move(m));
  }
}

// What the walk knew and did, on the finished index, and what follows from the whole file.
void finish(const SourceFile& file, SourceIndex& index, std::shared_ptr<const WalkKnowledge> seed, size_t walked) {
  index.seed = std::move(seed);
  index.chunks_walked = walked;
  index.knowledge = learnedOf(index);
  index.has_syntax_errors = file.hasSyntaxErrors();
  analyzeTraining(index);
}

// All chunks walked: seeded with `seed` when given (an edit's previous knowledge), else twice
// (pass 1 learns which functions return tensors; pass 2 uses that at their call sites).
SourceIndex buildWhole(const SourceFile& file, std::shared_ptr<const WalkKnowledge> seed) {
  size_t walked = 0;
  auto walkAll = [&](SourceIndex& into, const WalkKnowledge& known) {
    walkChunks(file, into, known, 0, [&](size_t) { return ++walked, true; });
  };
  if (!seed) {
    SourceIndex first;
    walkAll(first, WalkKnowledge{});
    seed = learnedOf(first);
  }
  SourceIndex index;
  walkAll(index, *seed);
  finish(file, index, std::move(seed), walked);
  return index;
}

}  // namespace

SourceIndex buildSourceIndex(const SourceFile& file, SourceIndex&& previous) {
  auto seed = previous.knowledge;
  auto c = seed ? changedChunk(file, previous) : std::nullopt;
  if (!c) return buildWhole(file, seed);
  SourceIndex index;
  size_t walked = 0;
  buildIncrementally(file, std::move(previous), *c, *seed, index, walked);
  finish(file, index, std::move(seed), walked);
  return index;
}

SourceIndex buildSourceIndex(const SourceFile& file, const SourceIndex* previous) {
  if (previous && previous->knowledge && changedChunk(file, *previous)) {
    SourceIndex copy = *previous;
    return buildSourceIndex(file, std::move(copy));
  }
  return buildWhole(file, previous ? previous->knowledge : nullptr);
}

}  // namespace sightline::source
