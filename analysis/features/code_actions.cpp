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

namespace {

// The function the window action puts before the loop: `lines` at their depth (0 = the loop's
// own indentation), `{T}` the name torch is imported as, `{W}`, `{F}`, `{L1}` the window's steps.
struct IndentedLine {
  int depth;
  const char* text;
};

// Sightline's measuring window as code (docs/capture.md): what `sightline capture` does from
// outside, written into the loop. It marks the top of each iteration i (= i steps done); the
// step of an interval is the one that ends it, 1-based, as in the steps files capture writes.
constexpr IndentedLine kWindowFunction[] = {
    {0, "def profile_window(step, marks):"},
    {1, "import json, os, pathlib, socket, sys, time"},
    {1, "if not {W} <= step <= {L1}:"},
    {2, "return"},
    {1, "def mark():"},
    {2, "start = time.perf_counter_ns()"},
    {2, "event = {T}.cuda.Event(enable_timing=True)"},
    {2, "event.record()"},
    {2, "marks.append((step, start, event, time.perf_counter_ns() - start))"},
    {1, "mark()"},
    {1, "if step == {F}:  # the timed steps end here, the profiled ones start once the range is open"},
    {2, "{T}.cuda.profiler.start()"},
    {2, "mark()"},
    {1, "if step == {L1}:"},
    {2, "{T}.cuda.synchronize()"},
    {2, "{T}.cuda.profiler.stop()"},
    {2, "steps = {\"timed\": [], \"profiled\": []}"},
    {2, "for (s0, h0, e0, _), (s1, h1, e1, _) in zip(marks, marks[1:]):"},
    {3, "if s1 > s0:"},
    {4, "steps[\"timed\" if s1 <= {F} else \"profiled\"].append("},
    {5, "{\"step\": s1, \"gpu_ns\": round(e0.elapsed_time(e1) * 1e6), \"host_ns\": h1 - h0})"},
    {2, "timed_costs = [cost for _, _, _, cost in marks[1:{K1}]]  # the marks that end timed steps"},
    {2, "if int(os.environ.get(\"RANK\", \"0\")) == 0:"},
    {3, "name = os.path.splitext(os.path.basename(sys.argv[0]))[0] + \"-profile\""},
    {3, "rank = {\"rank\": 0, \"local_rank\": int(os.environ.get(\"LOCAL_RANK\", \"0\")),"},
    {3, "        \"world_size\": int(os.environ.get(\"WORLD_SIZE\", \"1\")), \"host\": socket.gethostname(),"},
    {3, "        \"pid\": os.getpid(), \"device\": {T}.cuda.current_device(), **steps,"},
    {3, "        \"hook_ns\": sum(timed_costs) // max(1, len(timed_costs))}"},
    {3, "doc = {\"sightline_steps\": 1, \"profiler\": \"nsys\","},
    {3, "       \"command\": [os.path.basename(sys.executable)] + sys.argv,"},
    {3, "       \"warmup\": {W}, \"timed\": {K}, \"profiled\": {M},"},
    {3, "       \"profiles\": [name + \".sqlite\"], \"ranks\": [rank]}"},
    {3, "pathlib.Path(name + \".steps.json\").write_text(json.dumps(doc) + \"\\n\")"},
};

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

std::optional<CodeAction> limitProfilingWindow(const SourceFile& file, const SourceIndex& index, uint32_t offset,
                                               uint32_t first_step, uint32_t last_step, uint32_t timed_steps) {
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
  // At least one warm-up iteration (the first pays for start-up); as many timed ones as asked
  // for that fit before the profiled ones.
  uint32_t timed = first_step == 0 ? 0 : std::min(timed_steps, first_step - 1);
  uint32_t warmup = first_step - timed;
  std::string title = timed > 0 ? "Time steps " + std::to_string(warmup) + ".." + std::to_string(first_step - 1) +
                                      ", then profile steps "
                                : std::string("Profile steps ");
  CodeAction action{title + std::to_string(first_step) + ".." + std::to_string(last_step) +
                        " (CUDA events; nsys --capture-range=cudaProfilerApi)",
                    "refactor.rewrite",
                    {},
                    -1,
                    false};
  auto fill = [&](const std::string& line) {
    std::string out = replaceAll(line, "{T}", torch.name);
    out = replaceAll(out, "{W}", std::to_string(warmup));
    out = replaceAll(out, "{F1}", std::to_string(first_step == 0 ? 0 : first_step - 1));
    out = replaceAll(out, "{F}", std::to_string(first_step));
    out = replaceAll(out, "{L1}", std::to_string(last_step + 1));
    out = replaceAll(out, "{L}", std::to_string(last_step));
    out = replaceAll(out, "{K1}", std::to_string(timed + 1));
    out = replaceAll(out, "{K}", std::to_string(timed));
    return replaceAll(out, "{M}", std::to_string(last_step - first_step + 1));
  };
  std::string function =
      timed > 0 ? outer + fill("# Sightline's window (docs/capture.md): iterations before {W} warm up, {W}..{F1} are") +
                      "\n" + outer + "# timed with CUDA events and no profiler, " +
                      fill("{F}..{L} run in nsys's capture range (cudaProfilerApi)") + "\n" + outer +
                      "# and are timed the same way. Rank 0 writes <script>-profile.steps.json beside the report.\n"
                : outer + fill("# Sightline's window (docs/capture.md): iterations {F}..{L} run in nsys's capture") +
                      "\n" + outer +
                      "# range (cudaProfilerApi), timed with CUDA events. Rank 0 writes <script>-profile.steps.json.\n";
  for (const auto& line : kWindowFunction) {
    std::string indent = outer;
    for (int d = 0; d < line.depth; ++d) indent += unit;
    function += indent + fill(line.text) + "\n";
  }
  std::string counter = "profile_step";
  uint32_t before_loop = file.lines().lineStart(loop->header);
  action.edits.push_back({{before_loop, before_loop},
                          function + outer + counter + ", profile_marks = 0, []  # iterations seen, their marks\n"});
  uint32_t body_start = file.lines().lineStart(loop->first);
  action.edits.push_back({{body_start, body_start},
                          inner + "profile_window(" + counter + ", profile_marks)\n" + inner + counter + " += 1\n"});
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
  if (auto a = limitProfilingWindow(file, index, selection.begin, options.profile_first_step, options.profile_last_step,
                                    options.profile_timed_steps))
    actions.push_back(std::move(*a));
  if (auto a = recordMemoryHistory(file, index, selection.begin, options.profile_first_step, options.profile_last_step))
    actions.push_back(std::move(*a));
  return actions;
}

}  // namespace sightline::features
