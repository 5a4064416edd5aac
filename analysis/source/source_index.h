// The index of one Python file: functions, classes, loops, calls, assignments, `with` blocks,
// imports, statements, and what is knowable about names (tensors, nn.Modules, DataLoaders).
// Built by one walk over the tree (source_index_walk.cpp). All ranges are byte offsets into the
// SourceFile's text; indices into the vectors below are stable for one index, -1 means "none".
// It does not decide what is a performance problem: that is analysis/features.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/source/line_index.h"
#include "analysis/source/source_file.h"

namespace sightline::source {

struct WalkKnowledge;  // source_index_rules.h

struct ImportBinding {
  std::string local_name;      // the name bound in the file: "F", "DL", "torch"
  std::string qualified_name;  // what it stands for: "torch.nn.functional", "torch.utils.data.DataLoader"
  ByteRange range;             // the import statement
};

struct ClassInfo {
  std::string name;
  std::string qualified_name;      // "Outer.Inner"
  std::vector<std::string> bases;  // base expressions as written, resolved through imports
  ByteRange range;
  bool is_module = false;  // derives (within this file) from torch.nn.Module
};

struct FunctionInfo {
  std::string name;
  std::string qualified_name;  // "Trainer._run_batch", "main.<locals>.step" is written "main.step"
  ByteRange range;             // the whole definition, decorators excluded
  ByteRange body;
  uint32_t def_line = 0;  // 0-based line of the `def` keyword
  uint32_t end_line = 0;  // 0-based last line
  int class_index = -1;   // the class it is a method of
  int parent_function = -1;
  std::vector<std::string> parameters;
  std::vector<std::string> decorators;      // as written: "@torch.no_grad()"
  bool returns_tensor = false;              // some `return` gives a tensor (or a tuple holding one)
  bool trains = false;                      // calls backward()/optimizer.step(), directly or via this file
  bool reached_from_training_loop = false;  // called (transitively) from a training loop's body
};

enum class LoopKind { For, While };

struct LoopInfo {
  LoopKind kind = LoopKind::For;
  ByteRange range;   // the whole statement
  ByteRange header;  // from `for`/`while` to the colon
  ByteRange body;
  int parent_loop = -1;  // enclosing loop in the same function
  int function = -1;
  int depth = 0;                     // 0 for an outermost loop of its function
  std::vector<std::string> targets;  // names bound by a `for` target, in order
  std::string iterable;              // the iterable's text
  bool iterates_dataloader = false;
  bool is_training = false;    // see SourceIndex::training loop rules in the .cpp
  bool trains_itself = false;  // a training call (backward, step, ...) in its body or beneath
};

struct Argument {
  std::string keyword;  // empty for a positional argument
  std::string value_text;
  ByteRange range;  // the whole argument (`pin_memory=True`)
  ByteRange value;
  bool is_splat = false;  // *args / **kwargs
};

struct CallInfo {
  ByteRange range;            // the whole call expression
  ByteRange callee;           // the function expression
  ByteRange arguments;        // the argument list, parentheses included
  std::string callee_text;    // as written: "x.to", "torch.cuda.synchronize", "DL"
  std::string resolved;       // imports applied: "torch.utils.data.DataLoader"
  std::string method;         // last name of the callee: "to", "synchronize", "DataLoader"
  std::string receiver_text;  // for `a.b.c(...)`: "a.b"; empty for plain names
  int receiver_call = -1;     // the receiver is itself this call: `torch.zeros(3).cuda()`
  std::vector<Argument> args;
  int function = -1;
  int loop = -1;            // innermost enclosing loop
  int statement = -1;       // innermost enclosing statement
  bool in_fstring = false;  // inside an f-string interpolation
  bool cpu_only = false;    // in a branch that runs only without CUDA (`if device_type == "cuda": ... else:`)
};

struct AssignmentInfo {
  std::vector<std::string> targets;  // names and attribute paths (`self.model`) it binds
  ByteRange range;
  ByteRange value;
  std::string value_text;
  std::string op;       // "=" or the augmented operator ("+=")
  int value_call = -1;  // the value is this call
  int function = -1;
  int loop = -1;
  int statement = -1;
};

struct WithInfo {
  ByteRange range;
  ByteRange body;
  std::vector<int> item_calls;  // calls that are the context managers
  int function = -1;
  int statement = -1;
};

// A statement as the unit that code actions move and wrap.
struct StatementInfo {
  std::string kind;  // tree-sitter type: "expression_statement", "for_statement", ...
  ByteRange range;   // from its first byte to its last (comments after it excluded)
  uint32_t first_line = 0;
  uint32_t last_line = 0;
  uint32_t indent = 0;  // column (bytes) of its first byte
  int block = -1;       // the block holding it
};

// A suite of statements: the module, or the body of a def/class/loop/if/with/try.
struct BlockInfo {
  ByteRange range;
  int owner_statement = -1;  // -1 for the module
  std::vector<int> statements;
};

// A place where Python turns a value into a host bool/str: `if t:`, `f"{t}"`, `print(t)`.
struct ValueUse {
  enum class Kind { Condition, FormatField, PrintArgument } kind = Kind::Condition;
  std::string expression;  // the used expression's text
  ByteRange range;
  int function = -1;
  int loop = -1;
};

// What a name (or `self.attr` path) is known to hold.
enum class ValueKind { Unknown, Tensor, Module, DataLoader, Optimizer, Device };

// Where one parsed chunk of the file (SourceFile chunks) begins in the index's vectors, and
// what the walk knew after it: lets the index of an edited file re-walk only the edited chunk.
struct ChunkMark {
  uint64_t chunk_id = 0;
  uint32_t end_byte = 0;  // the chunk's end in the text the index was built from
  uint32_t end_line = 0;  // its line
  // Sizes of the vectors when the chunk's walk began.
  size_t imports = 0, classes = 0, functions = 0, loops = 0, calls = 0, assignments = 0, withs = 0, statements = 0,
         blocks = 0, value_uses = 0, comments = 0, multiline_strings = 0, module_statements = 0;
  std::map<std::string, ValueKind> module_scope_after;  // module-level names after the chunk
  std::shared_ptr<const WalkKnowledge> learned;         // what the walk learned in the chunk
};

class SourceIndex {
 public:
  std::vector<ImportBinding> imports;
  std::vector<ClassInfo> classes;
  std::vector<FunctionInfo> functions;
  std::vector<LoopInfo> loops;
  std::vector<CallInfo> calls;
  std::vector<AssignmentInfo> assignments;
  std::vector<WithInfo> withs;
  std::vector<StatementInfo> statements;
  std::vector<BlockInfo> blocks;  // blocks[0] is the module
  std::vector<ValueUse> value_uses;
  std::vector<ByteRange> comments;
  std::vector<ByteRange> multiline_strings;  // string literals spanning lines (not re-indented)
  bool has_syntax_errors = false;
  bool nesting_capped = false;  // syntax nested too deep to walk was left out (a partial index)

  // Expands the first name of a dotted expression through the file's imports:
  // "F.relu" -> "torch.nn.functional.relu", "nvtx.range_push" -> "torch.cuda.nvtx.range_push".
  std::string resolve(const std::string& dotted) const;
  // Records an import binding (the last binding of a name wins, as at run time).
  void addImport(ImportBinding binding);
  // The local name bound to `qualified` by an import, or "" ("torch" for `import torch`).
  std::string localNameFor(const std::string& qualified) const;

  // What `expression` (a name or `self.attr`) holds in function `function` (-1: module scope).
  ValueKind kindOf(const std::string& expression, int function) const;

  // True when the loop, or any loop enclosing it, is a training loop.
  bool inTrainingLoop(int loop) const;
  // A training context: inside a training loop, or in a function a training loop calls.
  bool inTrainingContext(int loop, int function) const;
  // Evaluation code: outside any training loop and under torch.no_grad()/inference_mode() (a
  // `with` around `range`, or a decorator), or in a function named for evaluation
  // (evaluate, validate, estimate_loss, test) or one that calls `.eval()`.
  bool inEvaluation(int loop, int function, ByteRange range) const;
  // The innermost block holding `offset` (the module block when none deeper does).
  int blockAt(uint32_t offset) const;
  int functionAt(uint32_t offset) const;

  // Scope tables: scope 0 is the module, scope f+1 is functions[f]; class attributes
  // (`self.x` assigned in any method) live per class.
  std::vector<std::map<std::string, ValueKind>> scope_values;
  std::vector<std::map<std::string, ValueKind>> class_attribute_values;
  // What the walk learned about the file's functions, for the next build after an edit, and
  // what it started from.
  std::shared_ptr<const WalkKnowledge> knowledge;
  std::shared_ptr<const WalkKnowledge> seed;
  std::vector<ChunkMark> chunk_marks;  // one per SourceFile chunk, in order
  size_t chunks_walked = 0;            // by the build of this index (both walks counted)

 private:
  std::unordered_map<std::string, size_t> import_by_name_;  // local name -> imports index
};

// Builds the index; never fails (a tree with errors gives a partial index). Two walks, unless
// `previous` (the index of the same document before an edit) seeds the one walk with what
// it learned about functions of the file; that knowledge is then at most one edit old. When
// the edit changed one chunk of the file and `previous` learned nothing new in its walk, only
// that chunk is walked: the other chunks' entries are taken from `previous` (shifted), unless
// the chunk changed what later chunks see (imports, classes, module-level names), in which case
// the walk goes on through the rest of the file.
SourceIndex buildSourceIndex(const SourceFile& file, const SourceIndex* previous = nullptr);
// The same, taking `previous` apart instead of copying from it (what an editor does after an
// edit: the previous index is not needed afterwards).
SourceIndex buildSourceIndex(const SourceFile& file, SourceIndex&& previous);

}  // namespace sightline::source
