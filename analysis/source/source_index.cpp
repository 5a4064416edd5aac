// SourceIndex queries, PyTorch name knowledge, and the training-loop analysis that runs after
// the walk (it needs the whole file: a loop is a training loop if a function it calls trains).
#include "analysis/source/source_index.h"

#include <algorithm>
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
      if (loop.body.encloses(call.range) || loop.range.encloses(call.range)) loop.is_training = true;
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
  for (const auto& [callee, positions] : learned.tensor_arguments) {
    for (const auto& fn : functions) {
      bool method_call = callee == "self." + fn.name && fn.class_index >= 0;
      if (!(callee == fn.name && fn.class_index < 0) && !method_call) continue;
      size_t offset = method_call ? 1 : 0;
      for (size_t position : positions)
        if (position + offset < fn.parameters.size())
          learned.tensor_parameters[fn.qualified_name].insert(fn.parameters[position + offset]);
    }
  }
}

}  // namespace

SourceIndex buildSourceIndex(const SourceFile& file, const SourceIndex* previous) {
  auto learned = std::make_shared<WalkKnowledge>();
  WalkKnowledge known;
  if (previous && previous->knowledge) {
    // After an edit, what the previous version learned seeds the one walk.
    known = *previous->knowledge;
  } else {
    // Pass 1 learns which functions return tensors; pass 2 uses that at their call sites.
    SourceIndex first;
    walkTree(file, first, WalkKnowledge{}, known);
    deriveTensorParameters(known, first.functions);
  }
  SourceIndex index;
  walkTree(file, index, known, *learned);
  deriveTensorParameters(*learned, index.functions);
  index.knowledge = std::move(learned);
  index.has_syntax_errors = file.hasSyntaxErrors();
  analyzeTraining(index);
  return index;
}

}  // namespace sightline::source
