// Code actions. Refactors find their statements through the index's blocks (never the tree),
// re-indent whole lines, and leave lines that start inside a multi-line string alone.
#include "analysis/features/code_actions.h"

#include <algorithm>

namespace sightline::features {
namespace {

using source::SourceFile;
using source::SourceIndex;
using source::StatementInfo;

const StatementInfo& stmt(const SourceIndex& index, int s) { return index.statements[static_cast<size_t>(s)]; }

bool lineStartsInString(const SourceFile& file, const SourceIndex& index, uint32_t line) {
  uint32_t start = file.lines().lineStart(line);
  for (const auto& r : index.multiline_strings)
    if (r.begin < start && start < r.end) return true;
  return false;
}

// The lines [first, last] prefixed with `unit` (blank lines and string continuations untouched).
std::string indentLines(const SourceFile& file, const SourceIndex& index, uint32_t first, uint32_t last,
                        const std::string& unit) {
  std::string out;
  for (uint32_t line = first; line <= last; ++line) {
    ByteRange r = file.lines().lineRange(line);
    std::string_view content = std::string_view(file.text()).substr(r.begin, r.end - r.begin);
    bool blank = content.find_first_not_of(" \t") == std::string_view::npos;
    if (!blank && !lineStartsInString(file, index, line)) out += unit;
    out += content;
    if (line < last) out += "\n";
  }
  return out;
}

// Whether a call is `torch.cuda.nvtx.range(...)` under any import spelling.
bool isNvtxRange(const SourceIndex& index, int call) {
  if (call < 0) return false;
  const auto& resolved = index.calls[static_cast<size_t>(call)].resolved;
  return resolved == "torch.cuda.nvtx.range" || resolved == "nvtx.range" ||
         resolved == "torch.autograd.profiler.record_function" || resolved == "torch.profiler.record_function";
}

// The `with` statement that owns `block`, when it is an NVTX range.
bool blockIsNvtxRange(const SourceIndex& index, int block) {
  int owner = index.blocks[static_cast<size_t>(block)].owner_statement;
  if (owner < 0 || stmt(index, owner).kind != "with_statement") return false;
  for (const auto& w : index.withs)
    if (w.statement == owner)
      return std::any_of(w.item_calls.begin(), w.item_calls.end(), [&](int c) { return isNvtxRange(index, c); });
  return false;
}

int parentBlock(const SourceIndex& index, int block) {
  int owner = index.blocks[static_cast<size_t>(block)].owner_statement;
  return owner < 0 ? -1 : stmt(index, owner).block;
}

// The edit that wraps the consecutive statements [first, last] of one block in a range.
std::vector<TextEdit> wrapStatements(const SourceFile& file, const SourceIndex& index, int first, int last,
                                     const std::string& torch_name, const std::string& name) {
  const auto& a = stmt(index, first);
  const auto& b = stmt(index, last);
  std::string indent = lineIndentation(file, a.first_line);
  std::string text = indent + "with " + torch_name + ".cuda.nvtx.range(\"" + name + "\"):\n" +
                     indentLines(file, index, a.first_line, b.last_line, indentUnit(file, index));
  ByteRange range{file.lines().lineStart(a.first_line), file.lines().lineRange(b.last_line).end};
  return {{range, text}};
}

bool isWrappable(const StatementInfo& s) {
  return s.kind != "function_definition" && s.kind != "class_definition" && s.kind != "decorated_definition" &&
         s.kind != "import_statement" && s.kind != "import_from_statement" && s.kind != "future_import_statement";
}

// The first statement of a loop/def body must sit on its own line for line-based edits.
bool bodyOnOwnLines(const SourceIndex& index, int block) {
  const auto& b = index.blocks[static_cast<size_t>(block)];
  if (b.statements.empty() || b.owner_statement < 0) return !b.statements.empty();
  return stmt(index, b.statements.front()).first_line > stmt(index, b.owner_statement).first_line;
}

// The import goes first: an insertion at the offset where another edit begins applies first.
void addTorchImport(std::vector<TextEdit>& edits, const ImportEdit& torch) {
  if (torch.edit) edits.insert(edits.begin(), *torch.edit);
}

// Calls in [range) of one function, in source order.
std::vector<int> callsIn(const SourceIndex& index, ByteRange range) {
  std::vector<int> out;
  for (size_t c = 0; c < index.calls.size(); ++c)
    if (range.encloses(index.calls[c].range)) out.push_back(static_cast<int>(c));
  return out;
}

enum class StepPart { None, Forward, Loss, Backward, OptimizerStep };

StepPart classifyStatement(const SourceIndex& index, int s) {
  const auto& st = stmt(index, s);
  if (st.kind != "expression_statement") return StepPart::None;
  for (const auto& a : index.assignments) {
    if (a.statement != s || a.value_call < 0) continue;
    const auto& call = index.calls[static_cast<size_t>(a.value_call)];
    std::string callee = call.resolved;
    std::transform(callee.begin(), callee.end(), callee.begin(), [](unsigned char c) { return std::tolower(c); });
    if (callee.find("loss") != std::string::npos || callee.find("cross_entropy") != std::string::npos ||
        callee.find("criterion") != std::string::npos || callee.find("nll") != std::string::npos ||
        callee.find("mse") != std::string::npos)
      return StepPart::Loss;
    if (call.receiver_call < 0 && index.kindOf(call.callee_text, call.function) == source::ValueKind::Module)
      return StepPart::Forward;
  }
  for (int c : callsIn(index, st.range)) {
    const auto& call = index.calls[static_cast<size_t>(c)];
    if (call.statement != s || call.receiver_text.empty()) continue;
    if (call.method == "backward") return StepPart::Backward;
    if (call.method == "step" && (index.kindOf(call.receiver_text, call.function) == source::ValueKind::Optimizer ||
                                  call.receiver_text.find("scaler") != std::string::npos))
      return StepPart::OptimizerStep;
  }
  return StepPart::None;
}

const char* partName(StepPart p) {
  switch (p) {
    case StepPart::Forward:
      return "forward";
    case StepPart::Loss:
      return "loss";
    case StepPart::Backward:
      return "backward";
    case StepPart::OptimizerStep:
      return "optimizer_step";
    case StepPart::None:
      break;
  }
  return "";
}

// Statements of `block` and of `with` blocks nested in it (not loops/defs), in order.
void stepStatements(const SourceIndex& index, int block, std::vector<int>& out) {
  for (int s : index.blocks[static_cast<size_t>(block)].statements) {
    out.push_back(s);
    if (stmt(index, s).kind != "with_statement") continue;
    for (size_t b = 0; b < index.blocks.size(); ++b)
      if (index.blocks[b].owner_statement == s) stepStatements(index, static_cast<int>(b), out);
  }
}

int blockOwnedBy(const SourceIndex& index, ByteRange body) {
  for (size_t b = 0; b < index.blocks.size(); ++b)
    if (index.blocks[b].range == body) return static_cast<int>(b);
  return -1;
}

bool previousStatementPushesRange(const SourceFile& file, const SourceIndex& index, int s) {
  const auto& statements = index.blocks[static_cast<size_t>(stmt(index, s).block)].statements;
  auto it = std::find(statements.begin(), statements.end(), s);
  if (it == statements.begin()) return false;
  const auto& prev = stmt(index, *(it - 1));
  return file.text().substr(prev.range.begin, prev.range.end - prev.range.begin).find("range_push") !=
         std::string::npos;
}

}  // namespace

std::optional<CodeAction> wrapInNvtxRange(const SourceFile& file, const SourceIndex& index, ByteRange selection,
                                          const std::string& given_name) {
  uint32_t end = std::max(selection.begin, selection.end > selection.begin ? selection.end - 1 : selection.end);
  int block = index.blockAt(selection.begin);
  while (block >= 0 && !(index.blocks[static_cast<size_t>(block)].range.begin <= end &&
                         end <= index.blocks[static_cast<size_t>(block)].range.end))
    block = parentBlock(index, block);
  if (block < 0) return std::nullopt;
  uint32_t first_line = file.lines().pointAt(selection.begin).line;
  uint32_t last_line = file.lines().pointAt(end).line;
  std::vector<int> chosen;
  for (int s : index.blocks[static_cast<size_t>(block)].statements) {
    const auto& st = stmt(index, s);
    if (st.last_line >= first_line && st.first_line <= last_line) chosen.push_back(s);
  }
  if (chosen.empty()) return std::nullopt;
  for (int s : chosen)
    if (!isWrappable(stmt(index, s))) return std::nullopt;
  // The statement of a one-line compound (`for x in y: f(x)`) cannot be re-indented by lines.
  const auto& owner_block = index.blocks[static_cast<size_t>(block)];
  if (owner_block.owner_statement >= 0 && !bodyOnOwnLines(index, block)) return std::nullopt;
  // Already the whole body of an NVTX range: applying again would only nest ranges.
  if (blockIsNvtxRange(index, block) && chosen.size() == owner_block.statements.size()) return std::nullopt;

  const auto& a = stmt(index, chosen.front());
  const auto& b = stmt(index, chosen.back());
  std::string name = given_name;
  for (int c : callsIn(index, {a.range.begin, b.range.end})) {
    if (!name.empty()) break;
    name = index.calls[static_cast<size_t>(c)].callee_text;
    break;
  }
  if (int f = index.functionAt(a.range.begin); name.empty() && f >= 0)
    name = index.functions[static_cast<size_t>(f)].name;
  if (name.empty()) name = "region";
  name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return c == '"' || c == '\\' || c == '\n'; }),
             name.end());

  ImportEdit torch = ensureImport(file, index, "torch");
  CodeAction action{"Wrap in NVTX range \"" + name + "\"", "refactor.rewrite", {}, -1, false};
  action.edits = wrapStatements(file, index, chosen.front(), chosen.back(), torch.name, name);
  addTorchImport(action.edits, torch);
  return action;
}

std::optional<CodeAction> annotateTrainingStep(const SourceFile& file, const SourceIndex& index, uint32_t offset) {
  // The step body: the innermost training loop around the cursor, or the training function.
  int body_block = -1;
  for (size_t l = 0; l < index.loops.size(); ++l) {
    const auto& loop = index.loops[l];
    if (loop.is_training && loop.range.begin <= offset && offset <= loop.range.end)
      body_block = blockOwnedBy(index, loop.body);
  }
  int f = index.functionAt(offset);
  if (body_block < 0 && f >= 0 && index.functions[static_cast<size_t>(f)].trains)
    body_block = blockOwnedBy(index, index.functions[static_cast<size_t>(f)].body);
  if (body_block < 0) return std::nullopt;

  auto collect = [&](int block) {
    std::vector<std::pair<int, StepPart>> parts;
    std::vector<int> statements;
    stepStatements(index, block, statements);
    for (int s : statements) {
      StepPart p = classifyStatement(index, s);
      if (p == StepPart::None) continue;
      if (blockIsNvtxRange(index, stmt(index, s).block) || previousStatementPushesRange(file, index, s)) continue;
      if (!bodyOnOwnLines(index, stmt(index, s).block)) continue;
      parts.emplace_back(s, p);
    }
    return parts;
  };
  auto parts = collect(body_block);
  bool has_training_part = std::any_of(parts.begin(), parts.end(), [](const auto& p) {
    return p.second == StepPart::Backward || p.second == StepPart::OptimizerStep;
  });
  if (!has_training_part) {
    // The loop delegates the step to a function of this file (`loss = train_step(...)`).
    const auto& body = index.blocks[static_cast<size_t>(body_block)].range;
    parts.clear();
    for (int c : callsIn(index, body)) {
      const auto& call = index.calls[static_cast<size_t>(c)];
      for (const auto& fn : index.functions) {
        bool same = call.receiver_text.empty() ? fn.name == call.callee_text && fn.class_index < 0
                                               : call.receiver_text == "self" && fn.name == call.method;
        if (same && fn.trains) {
          int fb = blockOwnedBy(index, fn.body);
          if (fb >= 0) parts = collect(fb);
        }
      }
      if (!parts.empty()) break;
    }
  }
  if (parts.empty()) return std::nullopt;
  ImportEdit torch = ensureImport(file, index, "torch");
  CodeAction action{"Annotate training step with NVTX ranges", "refactor.rewrite", {}, -1, false};
  for (const auto& [s, part] : parts) {
    auto edits = wrapStatements(file, index, s, s, torch.name, partName(part));
    action.edits.insert(action.edits.end(), edits.begin(), edits.end());
  }
  addTorchImport(action.edits, torch);
  return action;
}

namespace {

// The training loop around `offset`: its header's line and its body's first line (0-based), or
// nullopt where there is none whose body stands on its own lines.
struct LoopLines {
  uint32_t header = 0, first = 0;
};
std::optional<LoopLines> trainingLoopAt(const SourceIndex& index, uint32_t offset) {
  int chosen = -1;
  for (size_t l = 0; l < index.loops.size(); ++l) {
    const auto& loop = index.loops[l];
    if (loop.is_training && loop.range.begin <= offset && offset <= loop.range.end) chosen = static_cast<int>(l);
  }
  if (chosen < 0) return std::nullopt;
  const auto& loop = index.loops[static_cast<size_t>(chosen)];
  int body = blockOwnedBy(index, loop.body);
  if (body < 0 || !bodyOnOwnLines(index, body)) return std::nullopt;
  int loop_statement = index.blocks[static_cast<size_t>(body)].owner_statement;
  // A loop whose body the parser could not give its own block (broken syntax): no action.
  if (loop_statement < 0 || index.blocks[static_cast<size_t>(body)].statements.empty()) return std::nullopt;
  return LoopLines{stmt(index, loop_statement).first_line,
                   stmt(index, index.blocks[static_cast<size_t>(body)].statements.front()).first_line};
}

}  // namespace

std::optional<CodeAction> limitProfilingWindow(const SourceFile& file, const SourceIndex& index, uint32_t offset,
                                               uint32_t first_step, uint32_t last_step) {
  if (last_step < first_step) return std::nullopt;
  for (const auto& call : index.calls) {
    if (call.resolved == "torch.cuda.profiler.start" || call.resolved == "torch.cuda.cudart" ||
        call.method == "cudaProfilerStart")
      return std::nullopt;  // the file already opens a capture range
  }
  auto loop = trainingLoopAt(index, offset);
  if (!loop) return std::nullopt;
  ImportEdit torch = ensureImport(file, index, "torch");
  std::string outer = lineIndentation(file, loop->header);
  std::string inner = lineIndentation(file, loop->first);
  std::string unit = indentUnit(file, index);
  std::string counter = "profile_step";
  CodeAction action{"Limit profiling to steps " + std::to_string(first_step) + ".." + std::to_string(last_step) +
                        " (nsys --capture-range=cudaProfilerApi)",
                    "refactor.rewrite",
                    {},
                    -1,
                    false};
  uint32_t before_loop = file.lines().lineStart(loop->header);
  action.edits.push_back(
      {{before_loop, before_loop}, outer + counter + " = 0  # iterations seen, for the profiling window\n"});
  uint32_t body_start = file.lines().lineStart(loop->first);
  action.edits.push_back({{body_start, body_start},
                          inner + "if " + counter + " == " + std::to_string(first_step) + ":\n" + inner + unit +
                              torch.name + ".cuda.profiler.start()\n" + inner + "elif " + counter +
                              " == " + std::to_string(last_step + 1) + ":\n" + inner + unit + torch.name +
                              ".cuda.profiler.stop()\n" + inner + counter + " += 1\n"});
  addTorchImport(action.edits, torch);
  return action;
}

std::optional<CodeAction> recordMemoryHistory(const SourceFile& file, const SourceIndex& index, uint32_t offset,
                                              uint32_t first_step, uint32_t last_step) {
  if (last_step < first_step) return std::nullopt;
  for (const auto& call : index.calls)
    if (call.method == "_record_memory_history" || call.method == "_dump_snapshot")
      return std::nullopt;  // the file records memory already
  auto loop = trainingLoopAt(index, offset);
  if (!loop) return std::nullopt;
  ImportEdit torch = ensureImport(file, index, "torch");
  const std::string& t = torch.name;
  std::string outer = lineIndentation(file, loop->header);
  std::string inner = lineIndentation(file, loop->first);
  std::string unit = indentUnit(file, index);
  std::string counter = "memory_step";
  CodeAction action{"Record GPU memory for steps " + std::to_string(first_step) + ".." + std::to_string(last_step) +
                        " (a snapshot at the end, and on out-of-memory)",
                    "refactor.rewrite",
                    {},
                    -1,
                    false};
  uint32_t before_loop = file.lines().lineStart(loop->header);
  // PyTorch's out-of-memory observer: the snapshot people write by hand in an except clause.
  action.edits.push_back({{before_loop, before_loop},
                          outer + "def dump_memory_on_oom(device, alloc, device_alloc, device_free):\n" + outer + unit +
                              t + ".cuda.memory._dump_snapshot(\"oom_snapshot.pickle\")\n" + outer + t +
                              "._C._cuda_attach_out_of_memory_observer(dump_memory_on_oom)\n" + outer + counter +
                              " = 0  # iterations seen, for the memory history window\n"});
  uint32_t body_start = file.lines().lineStart(loop->first);
  action.edits.push_back({{body_start, body_start},
                          inner + "if " + counter + " == " + std::to_string(first_step) + ":\n" + inner + unit + t +
                              ".cuda.memory._record_memory_history(max_entries=100000, stacks=\"python\")\n" + inner +
                              "elif " + counter + " == " + std::to_string(last_step + 1) + ":\n" + inner + unit + t +
                              ".cuda.memory._dump_snapshot(\"memory_snapshot.pickle\")\n" + inner + unit + t +
                              ".cuda.memory._record_memory_history(enabled=None)\n" + inner + counter + " += 1\n"});
  addTorchImport(action.edits, torch);
  return action;
}

std::vector<CodeAction> computeCodeActions(const SourceFile& file, const SourceIndex& index, ByteRange selection,
                                           const std::vector<Finding>& findings, const ActionOptions& options) {
  std::vector<CodeAction> actions;
  ByteRange probe{selection.begin, std::max(selection.end, selection.begin + 1)};
  for (size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    ByteRange r{f.range.begin, std::max(f.range.end, f.range.begin + 1)};
    if (!r.overlaps(probe) && !(selection.begin == f.range.end)) continue;
    for (const auto& fix : f.fixes)
      actions.push_back({fix.title, "quickfix", fix.edits, static_cast<int>(i), fix.preferred});
  }
  if (auto a = wrapInNvtxRange(file, index, selection)) actions.push_back(std::move(*a));
  if (auto a = annotateTrainingStep(file, index, selection.begin)) actions.push_back(std::move(*a));
  if (auto a =
          limitProfilingWindow(file, index, selection.begin, options.profile_first_step, options.profile_last_step))
    actions.push_back(std::move(*a));
  if (auto a = recordMemoryHistory(file, index, selection.begin, options.profile_first_step, options.profile_last_step))
    actions.push_back(std::move(*a));
  return actions;
}

}  // namespace sightline::features
