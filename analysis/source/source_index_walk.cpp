// The one walk over a tree-sitter tree that fills a SourceIndex. TSNode stays in this file.
// Name knowledge (tensor / module / loader ...) is flow-insensitive per scope: the walk runs
// twice so that calls to functions defined further down see what those functions return.
#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "analysis/source/source_index.h"
#include "analysis/source/source_index_rules.h"

namespace sightline::source {
namespace {

// Node types the walk distinguishes, compared by symbol through a table built once from the
// grammar (no string comparison per node). Aliased nodes report their alias symbol, whose name
// is the alias, so the table sees the same names as ts_node_type.
// clang-format off
#define SIGHTLINE_NODE_TYPES(X) \
  X(aliased_import) \
  X(argument_list) \
  X(as_pattern) \
  X(assignment) \
  X(attribute) \
  X(augmented_assignment) \
  X(binary_operator) \
  X(block) \
  X(call) \
  X(class_definition) \
  X(comment) \
  X(conditional_expression) \
  X(default_parameter) \
  X(dictionary_splat) \
  X(dotted_name) \
  X(elif_clause) \
  X(else_clause) \
  X(expression_list) \
  X(for_statement) \
  X(function_definition) \
  X(identifier) \
  X(if_statement) \
  X(import_from_statement) \
  X(import_statement) \
  X(interpolation) \
  X(keyword_argument) \
  X(list) \
  X(list_pattern) \
  X(list_splat) \
  X(not_operator) \
  X(parenthesized_expression) \
  X(pattern_list) \
  X(return_statement) \
  X(string) \
  X(subscript) \
  X(tuple) \
  X(tuple_pattern) \
  X(typed_default_parameter) \
  X(typed_parameter) \
  X(unary_operator) \
  X(while_statement) \
  X(with_clause) \
  X(with_item) \
  X(with_statement)
// clang-format on

enum class NodeType : uint8_t {
  other,
#define SIGHTLINE_ENUM(name) name,
  SIGHTLINE_NODE_TYPES(SIGHTLINE_ENUM)
#undef SIGHTLINE_ENUM
};

// clang-format off
#define SIGHTLINE_FIELDS(X) \
  X(alias) \
  X(alternative) \
  X(argument) \
  X(arguments) \
  X(attribute) \
  X(body) \
  X(condition) \
  X(expression) \
  X(function) \
  X(left) \
  X(module_name) \
  X(name) \
  X(object) \
  X(operator) \
  X(parameters) \
  X(right) \
  X(superclasses) \
  X(type) \
  X(value)
// clang-format on

struct Grammar {
  std::vector<NodeType> type_by_symbol;
  std::vector<bool> statement_by_symbol;
  struct Fields {
#define SIGHTLINE_FIELD_MEMBER(name) TSFieldId f_##name = 0;
    SIGHTLINE_FIELDS(SIGHTLINE_FIELD_MEMBER)
#undef SIGHTLINE_FIELD_MEMBER
  } fields;

  explicit Grammar(const TSLanguage* language) {
    static const std::set<std::string> statements = {
        "expression_statement",  "return_statement",        "delete_statement",   "raise_statement",
        "pass_statement",        "break_statement",         "continue_statement", "import_statement",
        "import_from_statement", "future_import_statement", "global_statement",   "nonlocal_statement",
        "assert_statement",      "print_statement",         "exec_statement",     "type_alias_statement",
        "if_statement",          "for_statement",           "while_statement",    "try_statement",
        "with_statement",        "function_definition",     "class_definition",   "decorated_definition",
        "match_statement"};
    static const std::unordered_map<std::string, NodeType> named = {
#define SIGHTLINE_NAMED(name) {#name, NodeType::name},
        SIGHTLINE_NODE_TYPES(SIGHTLINE_NAMED)
#undef SIGHTLINE_NAMED
    };
    uint32_t count = ts_language_symbol_count(language);
    type_by_symbol.assign(count, NodeType::other);
    statement_by_symbol.assign(count, false);
    for (uint32_t symbol = 0; symbol < count; ++symbol) {
      const char* name = ts_language_symbol_name(language, static_cast<TSSymbol>(symbol));
      if (!name) continue;
      if (auto it = named.find(name); it != named.end()) type_by_symbol[symbol] = it->second;
      statement_by_symbol[symbol] = statements.count(name) > 0;
    }
#define SIGHTLINE_FIELD_ID(name) \
  fields.f_##name = ts_language_field_id_for_name(language, #name, static_cast<uint32_t>(std::strlen(#name)));
    SIGHTLINE_FIELDS(SIGHTLINE_FIELD_ID)
#undef SIGHTLINE_FIELD_ID
  }
};

const Grammar& grammarOf(const TSTree* tree) {
  static const Grammar grammar(ts_tree_language(tree));
  return grammar;
}

// Set by walkTree for the walk's thread (one grammar: Python).
thread_local const Grammar* g_grammar = nullptr;

NodeType typeOf(TSNode n) {
  TSSymbol symbol = ts_node_symbol(n);
  return symbol < g_grammar->type_by_symbol.size() ? g_grammar->type_by_symbol[symbol] : NodeType::other;
}
bool isType(TSNode n, NodeType type) { return typeOf(n) == type; }
bool isStatement(TSNode n) {
  TSSymbol symbol = ts_node_symbol(n);
  return symbol < g_grammar->statement_by_symbol.size() && g_grammar->statement_by_symbol[symbol];
}

#define field(n, name) ts_node_child_by_field_id(n, g_grammar->fields.f_##name)

// Cursors are reused (ts_tree_cursor_new allocates); one per nesting level in use.
struct CursorPool {
  std::vector<TSTreeCursor> free;
  ~CursorPool() {
    for (auto& c : free) ts_tree_cursor_delete(&c);
  }
};
thread_local CursorPool g_cursors;

// Calls f(child) for each named child, in order, through a cursor: ts_node_named_child(i) walks
// from the first child each time, which makes long blocks quadratic.
template <class F>
void forEachNamed(TSNode n, F&& f) {
  TSTreeCursor cursor;
  if (g_cursors.free.empty()) {
    cursor = ts_tree_cursor_new(n);
  } else {
    cursor = g_cursors.free.back();
    g_cursors.free.pop_back();
    ts_tree_cursor_reset(&cursor, n);
  }
  if (ts_tree_cursor_goto_first_child(&cursor)) {
    do {
      TSNode child = ts_tree_cursor_current_node(&cursor);
      if (ts_node_is_named(child)) f(child);
    } while (ts_tree_cursor_goto_next_sibling(&cursor));
  }
  g_cursors.free.push_back(cursor);
}

std::vector<TSNode> namedChildren(TSNode n) {
  std::vector<TSNode> out;
  forEachNamed(n, [&](TSNode child) { out.push_back(child); });
  return out;
}

ByteRange rangeOf(TSNode n) { return {ts_node_start_byte(n), ts_node_end_byte(n)}; }

struct Context {
  int function = -1;
  int cls = -1;
  int loop = -1;
  int statement = -1;
  int block = 0;
  int depth = 0;  // loop depth inside the current function
  bool in_fstring = false;
  bool cpu_only = false;  // in a branch taken only without CUDA (`else:` of `if device_type == "cuda":`)
};

// What an `if` condition says about the device: Cuda when the branch runs only on CUDA
// (`device_type == "cuda"`, `torch.cuda.is_available()`, `"cuda" in device`, `x.is_cuda`),
// Cpu when only without it (`== "cpu"`, `!= "cuda"`, `not torch.cuda.is_available()`).
enum class DeviceTest { None, Cuda, Cpu };

DeviceTest deviceTest(const std::string& cond) {
  std::string s;
  for (char ch : cond)
    if (!std::isspace(static_cast<unsigned char>(ch))) s += ch == '"' ? '\'' : ch;
  auto ends = [&](const std::string& tail) {
    return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  auto lower = [](std::string t) {
    for (auto& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t;
  };
  auto names_device = [&](size_t op) {
    std::string lhs = lower(s.substr(0, op));
    bool type_attr = lhs.size() > 5 && lhs.compare(lhs.size() - 5, 5, ".type") == 0;
    return lhs.find("device") != std::string::npos || type_attr;
  };
  if (s == "torch.cuda.is_available()" || ends(".is_cuda")) return DeviceTest::Cuda;
  if (s.rfind("'cuda'notin", 0) == 0) return DeviceTest::Cpu;
  if (s.rfind("'cuda'in", 0) == 0) return DeviceTest::Cuda;
  for (const auto& [op, cuda] :
       {std::pair<std::string, bool>{"=='cuda'", true}, {"!='cuda'", false}, {"=='cpu'", false}, {"!='cpu'", true}}) {
    if (ends(op) && names_device(s.size() - op.size())) return cuda ? DeviceTest::Cuda : DeviceTest::Cpu;
  }
  return DeviceTest::None;
}

class Walker {
 public:
  Walker(const SourceFile& file, SourceIndex& index, const WalkKnowledge& known)
      : text_(file.text()), index_(index), known_(known), tensor_functions_(known.tensor_functions) {}

  // The module: the top-level statements of chunks [first, ...) in text order, after what
  // `index_` holds of the chunks before (the module block and scope exist when first > 0).
  void walkModule(const SourceFile& file, size_t first, const std::function<bool(size_t)>& go_on) {
    if (index_.blocks.empty()) index_.blocks.push_back({{0, static_cast<uint32_t>(text_.size())}, -1, {}});
    index_.blocks[0].range = {0, static_cast<uint32_t>(text_.size())};
    if (index_.scope_values.empty()) index_.scope_values.emplace_back();
    for (size_t c = 0; c < index_.classes.size(); ++c) class_by_name_[index_.classes[c].name] = static_cast<int>(c);
    for (size_t i = first; i < file.treeCount(); ++i) {
      ChunkMark mark;
      mark.chunk_id = file.chunkId(i);
      mark.end_byte = file.chunkRange(i).end;
      mark.end_line = file.lines().pointAt(mark.end_byte).line;
      recordSizes(index_, mark);
      learned_ = {};
      Context ctx;
      visitBlockChildren(ts_tree_root_node(file.tree(i)), ctx, 0);
      mark.module_scope_after = index_.scope_values[0];
      mark.learned = std::make_shared<const WalkKnowledge>(std::move(learned_));
      index_.chunk_marks.push_back(std::move(mark));
      if (!go_on(i)) break;
    }
  }

 private:
  std::string textOf(TSNode n) const {
    return text_.substr(ts_node_start_byte(n), ts_node_end_byte(n) - ts_node_start_byte(n));
  }

  std::map<std::string, ValueKind>& scopeFor(const Context& ctx) {
    return index_.scope_values[static_cast<size_t>(ctx.function + 1)];
  }

  void bind(const std::string& target, ValueKind kind, const Context& ctx) {
    if (target.rfind("self.", 0) == 0 && ctx.function >= 0) {
      int cls = index_.functions[static_cast<size_t>(ctx.function)].class_index;
      if (cls >= 0) {
        auto& attrs = index_.class_attribute_values[static_cast<size_t>(cls)];
        // A later Unknown assignment does not erase what an earlier one established.
        if (kind != ValueKind::Unknown || !attrs.count(target)) attrs[target] = kind;
        return;
      }
    }
    auto& scope = scopeFor(ctx);
    if (kind != ValueKind::Unknown || !scope.count(target)) scope[target] = kind;
  }

  // Statements of a block (or the module), each recorded before it is visited.
  void visitBlockChildren(TSNode block, Context ctx, int block_index) {
    forEachNamed(block, [&](TSNode child) {
      if (isType(child, NodeType::comment)) {
        index_.comments.push_back(rangeOf(child));
        return;
      }
      if (!isStatement(child)) {
        visit(child, ctx);
        return;
      }
      StatementInfo st;
      st.kind = ts_node_type(child);
      st.range = rangeOf(child);
      st.first_line = ts_node_start_point(child).row;
      st.last_line = ts_node_end_point(child).row;
      // An end at column 0 belongs to the line before (a compound statement's trailing newline).
      if (ts_node_end_point(child).column == 0 && st.last_line > st.first_line) --st.last_line;
      st.indent = ts_node_start_point(child).column;
      st.block = block_index;
      int st_index = static_cast<int>(index_.statements.size());
      index_.statements.push_back(st);
      index_.blocks[static_cast<size_t>(block_index)].statements.push_back(st_index);
      Context inner = ctx;
      inner.statement = st_index;
      visit(child, inner);
    });
  }

  int newBlock(TSNode block, const Context& ctx) {
    int b = static_cast<int>(index_.blocks.size());
    index_.blocks.push_back({rangeOf(block), ctx.statement, {}});
    return b;
  }

  void visitBlock(TSNode block, Context ctx) {
    if (ts_node_is_null(block)) return;
    if (!isType(block, NodeType::block)) {
      visit(block, ctx);
      return;
    }
    ctx.block = newBlock(block, ctx);
    visitBlockChildren(block, ctx, ctx.block);
  }

  void visitChildren(TSNode n, const Context& ctx) {
    forEachNamed(n, [&](TSNode child) { visit(child, ctx); });
  }

  void visit(TSNode n, Context ctx) {
    Nesting nest(*this);
    if (nest.tooDeep()) return;
    switch (typeOf(n)) {
      case NodeType::comment:
        index_.comments.push_back(rangeOf(n));
        break;
      case NodeType::function_definition:
        visitFunction(n, ctx);
        break;
      case NodeType::class_definition:
        visitClass(n, ctx);
        break;
      case NodeType::for_statement:
        visitFor(n, ctx);
        break;
      case NodeType::while_statement:
        visitWhile(n, ctx);
        break;
      case NodeType::with_statement:
        visitWith(n, ctx);
        break;
      case NodeType::if_statement:
      case NodeType::elif_clause:
        visitIf(n, ctx);
        break;
      case NodeType::block:
        visitBlock(n, ctx);
        break;
      case NodeType::import_statement:
      case NodeType::import_from_statement:
        visitImport(n);
        break;
      case NodeType::assignment:
      case NodeType::augmented_assignment:
        visitAssignment(n, ctx);
        break;
      case NodeType::call:
        visitCall(n, ctx);
        break;
      case NodeType::interpolation:
        visitInterpolation(n, ctx);
        break;
      case NodeType::return_statement:
        visitReturn(n, ctx);
        break;
      case NodeType::string:
        if (ts_node_start_point(n).row != ts_node_end_point(n).row) index_.multiline_strings.push_back(rangeOf(n));
        visitChildren(n, ctx);
        break;
      // Leaves: nothing below them to index.
      case NodeType::identifier:
      case NodeType::dotted_name:
        break;
      default:
        visitChildren(n, ctx);
        break;
    }
  }

  std::vector<std::string> parameterNames(TSNode params, int function_index) {
    std::vector<std::string> names;
    if (ts_node_is_null(params)) return names;
    for (TSNode p : namedChildren(params)) {
      TSNode name_node = p;
      TSNode type_node = field(p, type);
      if (isType(p, NodeType::default_parameter) || isType(p, NodeType::typed_default_parameter)) {
        name_node = field(p, name);
      } else if (isType(p, NodeType::typed_parameter)) {
        name_node = ts_node_named_child(p, 0);
      }
      if (ts_node_is_null(name_node) || !isType(name_node, NodeType::identifier)) continue;
      std::string name = textOf(name_node);
      names.push_back(name);
      if (!ts_node_is_null(type_node)) {
        ValueKind kind = kindOfTypeAnnotation(index_.resolve(textOf(type_node)));
        if (kind != ValueKind::Unknown) index_.scope_values[static_cast<size_t>(function_index + 1)][name] = kind;
      }
    }
    return names;
  }

  void visitFunction(TSNode n, Context ctx) {
    FunctionInfo f;
    f.name = textOf(field(n, name));
    std::string prefix;
    if (ctx.function >= 0)
      prefix = index_.functions[static_cast<size_t>(ctx.function)].qualified_name + ".";
    else if (ctx.cls >= 0)
      prefix = index_.classes[static_cast<size_t>(ctx.cls)].qualified_name + ".";
    f.qualified_name = prefix + f.name;
    f.range = rangeOf(n);
    TSNode body = field(n, body);
    if (!ts_node_is_null(body)) f.body = rangeOf(body);
    f.def_line = ts_node_start_point(n).row;
    f.end_line = ts_node_end_point(n).row;
    f.class_index = ctx.function >= 0 ? -1 : ctx.cls;
    f.parent_function = ctx.function;
    f.returns_tensor = tensor_functions_.count(f.qualified_name) > 0;
    TSNode parent = ts_node_parent(n);
    if (!ts_node_is_null(parent) && std::strcmp(ts_node_type(parent), "decorated_definition") == 0)
      forEachNamed(parent, [&](TSNode d) {
        if (std::strcmp(ts_node_type(d), "decorator") == 0) f.decorators.push_back(textOf(d));
      });
    int index = static_cast<int>(index_.functions.size());
    index_.functions.push_back(f);
    index_.scope_values.emplace_back();
    index_.functions[static_cast<size_t>(index)].parameters = parameterNames(field(n, parameters), index);
    if (auto it = known_.tensor_parameters.find(f.qualified_name); it != known_.tensor_parameters.end()) {
      auto& scope = index_.scope_values[static_cast<size_t>(index + 1)];
      for (const auto& p : it->second)
        if (!scope.count(p)) scope[p] = ValueKind::Tensor;
    }
    Context inner = ctx;
    inner.function = index;
    inner.loop = -1;
    inner.depth = 0;
    visitBlock(body, inner);
  }

  void visitClass(TSNode n, Context ctx) {
    ClassInfo c;
    c.name = textOf(field(n, name));
    c.qualified_name =
        ctx.cls >= 0 ? index_.classes[static_cast<size_t>(ctx.cls)].qualified_name + "." + c.name : c.name;
    c.range = rangeOf(n);
    TSNode bases = field(n, superclasses);
    if (!ts_node_is_null(bases)) {
      for (TSNode b : namedChildren(bases)) {
        if (isType(b, NodeType::keyword_argument) || isType(b, NodeType::comment)) continue;
        std::string base = textOf(b);
        c.bases.push_back(index_.resolve(base));
        if (auto it = class_by_name_.find(base);
            it != class_by_name_.end() && index_.classes[static_cast<size_t>(it->second)].is_module)
          c.is_module = true;
      }
    }
    for (const auto& base : c.bases)
      if (isTorchModuleClass(base)) c.is_module = true;
    int index = static_cast<int>(index_.classes.size());
    class_by_name_[c.name] = index;
    index_.classes.push_back(c);
    index_.class_attribute_values.emplace_back();
    Context inner = ctx;
    inner.cls = index;
    visitBlock(field(n, body), inner);
  }

  void collectTargets(TSNode n, std::vector<std::string>& out) {
    Nesting nest(*this);
    if (ts_node_is_null(n) || nest.tooDeep()) return;
    if (isType(n, NodeType::identifier) || isType(n, NodeType::attribute)) {
      out.push_back(textOf(n));
      return;
    }
    if (isType(n, NodeType::pattern_list) || isType(n, NodeType::tuple_pattern) || isType(n, NodeType::list_pattern) ||
        isType(n, NodeType::expression_list) || isType(n, NodeType::tuple) || isType(n, NodeType::list) ||
        isType(n, NodeType::parenthesized_expression)) {
      forEachNamed(n, [&](TSNode child) { collectTargets(child, out); });
    }
  }

  // The expression of a `for` iterable without a wrapping enumerate()/tqdm()/iter().
  TSNode unwrapIterable(TSNode n, bool& enumerated) {
    while (isType(n, NodeType::call)) {
      std::string callee = textOf(field(n, function));
      TSNode args = field(n, arguments);
      if (ts_node_is_null(args) || ts_node_named_child_count(args) == 0) break;
      if (callee == "enumerate") enumerated = true;
      if (callee != "enumerate" && callee != "iter" && callee.find("tqdm") == std::string::npos) break;
      n = ts_node_named_child(args, 0);
    }
    return n;
  }

  void visitFor(TSNode n, Context ctx) {
    LoopInfo loop;
    loop.kind = LoopKind::For;
    loop.range = rangeOf(n);
    TSNode body = field(n, body);
    loop.header = {ts_node_start_byte(n), ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body)};
    if (!ts_node_is_null(body)) loop.body = rangeOf(body);
    loop.parent_loop = ctx.loop;
    loop.function = ctx.function;
    loop.depth = ctx.depth;
    TSNode left = field(n, left);
    TSNode right = field(n, right);
    collectTargets(left, loop.targets);
    bool enumerated = false;
    if (!ts_node_is_null(right)) {
      loop.iterable = textOf(right);
      visit(right, ctx);  // evaluated once, in the enclosing loop
      TSNode inner = unwrapIterable(right, enumerated);
      loop.iterates_dataloader = kindOfExpression(inner, ctx) == ValueKind::DataLoader;
    }
    int index = static_cast<int>(index_.loops.size());
    index_.loops.push_back(loop);
    if (loop.iterates_dataloader) {
      for (size_t i = enumerated ? 1 : 0; i < loop.targets.size(); ++i) bind(loop.targets[i], ValueKind::Tensor, ctx);
    }
    Context inner = ctx;
    inner.loop = index;
    inner.depth = ctx.depth + 1;
    visitBlock(body, inner);
    TSNode alt = field(n, alternative);
    if (!ts_node_is_null(alt)) visit(alt, ctx);
  }

  void visitWhile(TSNode n, Context ctx) {
    LoopInfo loop;
    loop.kind = LoopKind::While;
    loop.range = rangeOf(n);
    TSNode body = field(n, body);
    loop.header = {ts_node_start_byte(n), ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body)};
    if (!ts_node_is_null(body)) loop.body = rangeOf(body);
    loop.parent_loop = ctx.loop;
    loop.function = ctx.function;
    loop.depth = ctx.depth;
    int index = static_cast<int>(index_.loops.size());
    index_.loops.push_back(loop);
    Context inner = ctx;
    inner.loop = index;
    inner.depth = ctx.depth + 1;
    TSNode cond = field(n, condition);
    if (!ts_node_is_null(cond)) {
      recordCondition(cond, inner);
      visit(cond, inner);
    }
    visitBlock(body, inner);
    TSNode alt = field(n, alternative);
    if (!ts_node_is_null(alt)) visit(alt, ctx);
  }

  void recordCondition(TSNode cond, const Context& ctx) {
    if (isType(cond, NodeType::not_operator)) cond = field(cond, argument);
    if (ts_node_is_null(cond)) return;
    if (isType(cond, NodeType::identifier) || isType(cond, NodeType::attribute))
      index_.value_uses.push_back({ValueUse::Kind::Condition, textOf(cond), rangeOf(cond), ctx.function, ctx.loop});
  }

  DeviceTest deviceTestOf(TSNode cond) {
    if (isType(cond, NodeType::parenthesized_expression) && ts_node_named_child_count(cond) == 1)
      return deviceTestOf(ts_node_named_child(cond, 0));
    if (isType(cond, NodeType::not_operator)) {
      TSNode arg = field(cond, argument);
      if (ts_node_is_null(arg)) return DeviceTest::None;
      DeviceTest t = deviceTestOf(arg);
      return t == DeviceTest::None ? t : t == DeviceTest::Cuda ? DeviceTest::Cpu : DeviceTest::Cuda;
    }
    return deviceTest(textOf(cond));
  }

  void visitIf(TSNode n, Context ctx) {
    TSNode cond = field(n, condition);
    DeviceTest test = DeviceTest::None;
    if (!ts_node_is_null(cond)) {
      recordCondition(cond, ctx);
      visit(cond, ctx);
      if (isType(n, NodeType::if_statement)) test = deviceTestOf(cond);
    }
    // The branch that runs only without CUDA: the body of a CPU test, the rest of a CUDA test.
    Context body = ctx, rest = ctx;
    body.cpu_only = ctx.cpu_only || test == DeviceTest::Cpu;
    rest.cpu_only = ctx.cpu_only || test == DeviceTest::Cuda;
    for (TSNode child : namedChildren(n)) {
      if (ts_node_eq(child, cond)) continue;
      if (isType(child, NodeType::else_clause))
        visitBlock(field(child, body), rest);
      else if (isType(child, NodeType::elif_clause))
        visit(child, rest);
      else
        visit(child, body);
    }
  }

  void visitWith(TSNode n, Context ctx) {
    WithInfo w;
    w.range = rangeOf(n);
    w.function = ctx.function;
    w.statement = ctx.statement;
    TSNode body = field(n, body);
    if (!ts_node_is_null(body)) w.body = rangeOf(body);
    int index = static_cast<int>(index_.withs.size());
    index_.withs.push_back(w);
    for (TSNode clause : namedChildren(n)) {
      if (!isType(clause, NodeType::with_clause)) continue;
      for (TSNode item : namedChildren(clause)) {
        TSNode value = isType(item, NodeType::with_item) ? field(item, value) : item;
        if (ts_node_is_null(value)) continue;
        if (isType(value, NodeType::as_pattern)) value = ts_node_named_child(value, 0);
        if (isType(value, NodeType::call)) {
          int call = visitCall(value, ctx);
          index_.withs[static_cast<size_t>(index)].item_calls.push_back(call);
        } else {
          visit(value, ctx);
        }
      }
    }
    visitBlock(body, ctx);
  }

  void visitImport(TSNode n) {
    ByteRange range = rangeOf(n);
    if (isType(n, NodeType::import_statement)) {
      for (TSNode item : namedChildren(n)) {
        if (isType(item, NodeType::aliased_import)) {
          index_.addImport({textOf(field(item, alias)), textOf(field(item, name)), range});
        } else if (isType(item, NodeType::dotted_name)) {
          // `import torch.nn` binds `torch`.
          std::string dotted = textOf(item);
          std::string head = dotted.substr(0, dotted.find('.'));
          index_.addImport({head, head, range});
        }
      }
      return;
    }
    std::string module = textOf(field(n, module_name));
    for (TSNode item : namedChildren(n)) {
      if (ts_node_eq(item, field(n, module_name))) continue;
      if (isType(item, NodeType::aliased_import)) {
        index_.addImport({textOf(field(item, alias)), module + "." + textOf(field(item, name)), range});
      } else if (isType(item, NodeType::dotted_name)) {
        std::string name = textOf(item);
        index_.addImport({name, module + "." + name, range});
      }
    }
  }

  void visitAssignment(TSNode n, Context ctx) {
    Nesting nest(*this);
    if (nest.tooDeep()) return;
    AssignmentInfo a;
    a.range = rangeOf(n);
    a.function = ctx.function;
    a.loop = ctx.loop;
    a.statement = ctx.statement;
    TSNode left = field(n, left);
    TSNode right = field(n, right);
    a.op = "=";
    if (isType(n, NodeType::augmented_assignment)) a.op = textOf(field(n, operator));
    collectTargets(left, a.targets);
    // Chained `a = b = value`: the inner assignment is visited (and binds) first.
    while (!ts_node_is_null(right) && isType(right, NodeType::assignment)) {
      visitAssignment(right, ctx);
      right = field(right, right);
    }
    int index = static_cast<int>(index_.assignments.size());
    index_.assignments.push_back(a);
    if (ts_node_is_null(right)) return;
    index_.assignments[static_cast<size_t>(index)].value = rangeOf(right);
    index_.assignments[static_cast<size_t>(index)].value_text = textOf(right);
    if (isType(right, NodeType::call)) {
      int call = visitCall(right, ctx);
      index_.assignments[static_cast<size_t>(index)].value_call = call;
    } else {
      visit(right, ctx);
    }
    visitSubscriptTargets(left, ctx);
    auto targets = index_.assignments[static_cast<size_t>(index)].targets;
    if (a.op != "=") {
      // `total += loss` keeps or makes `total` a tensor.
      if (kindOfExpression(right, ctx) == ValueKind::Tensor)
        for (const auto& t : targets) bind(t, ValueKind::Tensor, ctx);
      return;
    }
    bool pairwise = (isType(right, NodeType::expression_list) || isType(right, NodeType::tuple)) &&
                    ts_node_named_child_count(right) == targets.size() &&
                    (isType(left, NodeType::pattern_list) || isType(left, NodeType::tuple_pattern));
    if (pairwise) {
      for (uint32_t i = 0; i < targets.size(); ++i)
        bind(targets[i], kindOfExpression(ts_node_named_child(right, i), ctx), ctx);
      return;
    }
    ValueKind kind = kindOfExpression(right, ctx);
    if (targets.size() > 1 && kind != ValueKind::Tensor) kind = ValueKind::Unknown;
    for (const auto& t : targets) bind(t, kind, ctx);
  }

  // Calls inside subscript/attribute targets (`x[f(i)] = ...`) still count.
  void visitSubscriptTargets(TSNode left, const Context& ctx) {
    if (ts_node_is_null(left)) return;
    if (isType(left, NodeType::subscript)) visitChildren(left, ctx);
  }

  int visitCall(TSNode n, Context ctx) {
    Nesting nest(*this);
    if (nest.tooDeep()) return -1;
    CallInfo c;
    c.range = rangeOf(n);
    TSNode fn = field(n, function);
    TSNode args = field(n, arguments);
    c.callee = rangeOf(fn);
    c.callee_text = textOf(fn);
    c.resolved = index_.resolve(c.callee_text);
    if (!ts_node_is_null(args)) c.arguments = rangeOf(args);
    c.function = ctx.function;
    c.loop = ctx.loop;
    c.statement = ctx.statement;
    c.in_fstring = ctx.in_fstring;
    c.cpu_only = ctx.cpu_only;
    if (isType(fn, NodeType::attribute)) {
      TSNode obj = field(fn, object);
      c.method = textOf(field(fn, attribute));
      c.receiver_text = textOf(obj);
    } else {
      c.method = c.callee_text;
    }
    if (!ts_node_is_null(args) && isType(args, NodeType::argument_list)) {
      forEachNamed(args, [&](TSNode a) {
        if (isType(a, NodeType::comment)) return;
        Argument arg;
        arg.range = rangeOf(a);
        if (isType(a, NodeType::keyword_argument)) {
          arg.keyword = textOf(field(a, name));
          TSNode v = field(a, value);
          if (!ts_node_is_null(v)) {
            arg.value = rangeOf(v);
            arg.value_text = textOf(v);
          }
        } else {
          arg.is_splat = isType(a, NodeType::list_splat) || isType(a, NodeType::dictionary_splat);
          arg.value = arg.range;
          arg.value_text = textOf(a);
        }
        c.args.push_back(arg);
      });
    }
    int index = static_cast<int>(index_.calls.size());
    index_.calls.push_back(c);
    if (isType(fn, NodeType::attribute)) {
      TSNode obj = field(fn, object);
      if (isType(obj, NodeType::call))
        index_.calls[static_cast<size_t>(index)].receiver_call = visitCall(obj, ctx);
      else
        visit(obj, ctx);
    } else {
      visit(fn, ctx);
    }
    if (!ts_node_is_null(args)) {
      if (c.resolved == "print" && isType(args, NodeType::argument_list)) {
        for (TSNode a : namedChildren(args)) {
          if (isType(a, NodeType::identifier) || isType(a, NodeType::attribute))
            index_.value_uses.push_back({ValueUse::Kind::PrintArgument, textOf(a), rangeOf(a), ctx.function, ctx.loop});
        }
      }
      visit(args, ctx);
    }
    noteCallEvidence(index_.calls[static_cast<size_t>(index)], fn, ctx);
    return index;
  }

  // What a call tells about names: `x.backward()` means x is a tensor; tensors passed to a
  // function of this file make its parameters tensors (used by the next walk).
  void noteCallEvidence(const CallInfo& call, TSNode fn, const Context& ctx) {
    if (call.method == "backward" && isType(fn, NodeType::attribute)) {
      TSNode obj = field(fn, object);
      if ((isType(obj, NodeType::identifier) || isType(obj, NodeType::attribute)) &&
          index_.kindOf(call.receiver_text, ctx.function) == ValueKind::Unknown)
        bind(call.receiver_text, ValueKind::Tensor, ctx);
    }
    bool local_callee = call.receiver_text.empty() || call.receiver_text == "self";
    if (!local_callee) return;
    size_t position = 0;
    for (const auto& arg : call.args) {
      if (!arg.keyword.empty() || arg.is_splat) break;
      if (index_.kindOf(arg.value_text, ctx.function) == ValueKind::Tensor)
        learned_.tensor_arguments[call.callee_text].insert(position);
      ++position;
    }
  }

  void visitInterpolation(TSNode n, Context ctx) {
    TSNode expr = field(n, expression);
    if (ts_node_is_null(expr)) expr = ts_node_named_child(n, 0);
    if (ts_node_is_null(expr)) return;
    if (isType(expr, NodeType::identifier) || isType(expr, NodeType::attribute))
      index_.value_uses.push_back({ValueUse::Kind::FormatField, textOf(expr), rangeOf(expr), ctx.function, ctx.loop});
    ctx.in_fstring = true;
    visit(expr, ctx);
  }

  void visitReturn(TSNode n, Context ctx) {
    visitChildren(n, ctx);
    if (ctx.function < 0 || ts_node_named_child_count(n) == 0) return;
    TSNode value = ts_node_named_child(n, 0);
    bool tensor = kindOfExpression(value, ctx) == ValueKind::Tensor;
    if (isType(value, NodeType::expression_list) || isType(value, NodeType::tuple)) {
      uint32_t count = ts_node_named_child_count(value);
      for (uint32_t i = 0; i < count; ++i)
        tensor = tensor || kindOfExpression(ts_node_named_child(value, i), ctx) == ValueKind::Tensor;
    }
    if (tensor) {
      auto& f = index_.functions[static_cast<size_t>(ctx.function)];
      f.returns_tensor = true;
      learned_.tensor_functions.insert(f.qualified_name);
    }
  }

  // What an expression evaluates to, from what the walk knows so far.
  ValueKind kindOfExpression(TSNode n, const Context& ctx) {
    Nesting nest(*this);
    if (ts_node_is_null(n) || nest.tooDeep()) return ValueKind::Unknown;
    switch (typeOf(n)) {
      case NodeType::identifier:
      case NodeType::attribute:
        return index_.kindOf(textOf(n), ctx.function);
      case NodeType::parenthesized_expression:
      case NodeType::unary_operator:
        return kindOfExpression(ts_node_named_child(n, 0), ctx);
      case NodeType::subscript:
        return kindOfExpression(field(n, value), ctx) == ValueKind::Tensor ? ValueKind::Tensor : ValueKind::Unknown;
      case NodeType::binary_operator: {
        bool t = kindOfExpression(field(n, left), ctx) == ValueKind::Tensor ||
                 kindOfExpression(field(n, right), ctx) == ValueKind::Tensor;
        return t ? ValueKind::Tensor : ValueKind::Unknown;
      }
      case NodeType::conditional_expression: {
        ValueKind k = kindOfExpression(ts_node_named_child(n, 0), ctx);
        return k != ValueKind::Unknown ? k : kindOfExpression(ts_node_named_child(n, 2), ctx);
      }
      case NodeType::call:
        return kindOfCall(n, ctx);
      case NodeType::string: {
        uint32_t start = ts_node_start_byte(n), end = ts_node_end_byte(n);
        if (end - start > 5 && text_.compare(start + 1, 4, "cuda") == 0) return ValueKind::Device;
        return ValueKind::Unknown;
      }
      default:
        return ValueKind::Unknown;
    }
  }

  ValueKind kindOfCall(TSNode n, const Context& ctx) {
    TSNode fn = field(n, function);
    std::string callee = textOf(fn);
    std::string resolved = index_.resolve(callee);
    // A class of this file.
    if (auto it = class_by_name_.find(callee); it != class_by_name_.end())
      return index_.classes[static_cast<size_t>(it->second)].is_module ? ValueKind::Module : ValueKind::Unknown;
    if (tensor_functions_.count(callee)) return ValueKind::Tensor;
    if (isType(fn, NodeType::attribute)) {
      TSNode obj = field(fn, object);
      std::string method = textOf(field(fn, attribute));
      if (textOf(obj) == "self" && ctx.function >= 0) {
        int cls = index_.functions[static_cast<size_t>(ctx.function)].class_index;
        if (cls >= 0 && tensor_functions_.count(index_.classes[static_cast<size_t>(cls)].qualified_name + "." + method))
          return ValueKind::Tensor;
      }
      ValueKind receiver = ValueKind::Unknown;
      if (!isType(obj, NodeType::identifier) || index_.resolve(textOf(obj)) == textOf(obj))
        receiver = kindOfExpression(obj, ctx);
      if (receiver == ValueKind::Module) {
        return returnsModule(method) ? ValueKind::Module : ValueKind::Unknown;
      }
      if (receiver == ValueKind::Tensor)
        return tensorMethodReturnsTensor(method) ? ValueKind::Tensor : ValueKind::Unknown;
      // `Net().to(device)`: an instance of a class we cannot see is most likely a module.
      if (receiver == ValueKind::Unknown && isType(obj, NodeType::call)) {
        std::string cls = textOf(field(obj, function));
        std::string last = cls.substr(cls.rfind('.') == std::string::npos ? 0 : cls.rfind('.') + 1);
        if (!last.empty() && std::isupper(static_cast<unsigned char>(last[0])) && returnsModule(method))
          return ValueKind::Module;
      }
      // `.to()`/`.cuda()` of something not known to be a module gives a tensor.
      if (receiver == ValueKind::Unknown && (method == "to" || method == "cuda")) return ValueKind::Tensor;
    }
    ValueKind kind = kindOfResolvedCallee(resolved);
    if (kind != ValueKind::Unknown) return kind;
    // Calling an nn.Module instance runs its forward: a tensor.
    if (index_.kindOf(callee, ctx.function) == ValueKind::Module) return ValueKind::Tensor;
    return ValueKind::Unknown;
  }

 public:
  WalkKnowledge learned_;

 private:
  // The walk recurses through nested syntax (visit, kindOfExpression, collectTargets). Deeper
  // than this (CPython itself refuses about 200 nested parentheses), the rest of that subtree
  // is left out of the index and SourceIndex::nesting_capped says so: a partial index, never a
  // stack overflow on generated or hostile code.
  static constexpr int kMaxNesting = 400;
  int nesting_ = 0;
  class Nesting {
   public:
    explicit Nesting(Walker& walker) : walker_(walker) { ++walker_.nesting_; }
    ~Nesting() { --walker_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    bool tooDeep() const {
      if (walker_.nesting_ <= kMaxNesting) return false;
      walker_.index_.nesting_capped = true;
      return true;
    }

   private:
    Walker& walker_;
  };

  const std::string& text_;
  SourceIndex& index_;
  const WalkKnowledge& known_;
  const std::set<std::string>& tensor_functions_;
  std::unordered_map<std::string, int> class_by_name_;
};

}  // namespace

void walkChunks(const SourceFile& file, SourceIndex& index, const WalkKnowledge& known, size_t first,
                const std::function<bool(size_t chunk)>& go_on) {
  g_grammar = &grammarOf(file.tree(0));
  Walker walker(file, index, known);
  walker.walkModule(file, first, go_on);
}

}  // namespace sightline::source
