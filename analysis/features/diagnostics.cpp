// The rules behind computeDiagnostics. Each rule is a function that appends findings; the
// PyTorch knowledge it needs (what is a tensor, a training loop) comes from the source index.
#include "analysis/features/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_set>

namespace sightline::features {

namespace {

using source::CallInfo;
using source::SourceFile;
using source::SourceIndex;
using source::ValueKind;

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

const source::Argument* firstPositional(const CallInfo& call) {
  for (const auto& a : call.args)
    if (a.keyword.empty() && !a.is_splat) return &a;
  return nullptr;
}

// Whether an argument of `.to(...)` names a device (rather than a dtype or another tensor).
bool isDeviceExpression(const SourceIndex& index, const CallInfo& call, const std::string& text) {
  if (text.empty()) return false;
  if (text[0] == '"' || text[0] == '\'') return text.size() > 5 && text.compare(1, 4, "cuda") == 0;
  if (std::isdigit(static_cast<unsigned char>(text[0]))) return true;
  std::string resolved = index.resolve(text);
  if (startsWith(resolved, "torch.device")) return true;
  if (startsWith(resolved, "torch.")) return false;  // torch.float16 and friends
  if (index.kindOf(text, call.function) == ValueKind::Device) return true;
  std::string l = lower(text);
  return l.find("device") != std::string::npos || l.find("cuda") != std::string::npos ||
         l.find("rank") != std::string::npos || l.find("gpu") != std::string::npos || l == "dev" ||
         (l.size() > 4 && l.compare(l.size() - 4, 4, ".dev") == 0);
}

// `.cuda(...)`, or `.to(...)` whose target is a device: a host-to-device copy of the receiver.
bool isDeviceCopy(const SourceIndex& index, const CallInfo& call) {
  if (call.receiver_text.empty() && call.receiver_call < 0) return false;
  if (call.method == "cuda") return true;
  if (call.method != "to") return false;
  if (const auto* d = keywordArg(call, "device")) return isDeviceExpression(index, call, d->value_text);
  const auto* first = firstPositional(call);
  return first && isDeviceExpression(index, call, first->value_text);
}

bool isTrueLiteral(const source::Argument* a) { return a && a->value_text == "True"; }

std::string codeSpan(const SourceFile& file, ByteRange r) {
  std::string s = file.text().substr(r.begin, r.end - r.begin);
  if (s.size() > 60 || s.find('\n') != std::string::npos) {
    auto paren = s.find('(');
    s = (paren == std::string::npos ? s.substr(0, 40) : s.substr(0, paren)) + "(...)";
  }
  return "`" + s + "`";
}

class RuleRunner {
 public:
  RuleRunner(const SourceFile& file, const SourceIndex& index, const RuleConfig& config)
      : file_(file), index_(index), config_(config) {}

  DiagnosticsRun run(const RuleBudget& budget) {
    moves_to_gpu_ = std::any_of(index_.calls.begin(), index_.calls.end(),
                                [&](const CallInfo& c) { return isDeviceCopy(index_, c); });
    // The values of `x += value` statements, once: rules ask for each call (linear in the file).
    for (const auto& a : index_.assignments)
      if (a.op == "+=") accumulated_.insert((static_cast<uint64_t>(a.value.begin) << 32) | a.value.end);
    using Check = void (RuleRunner::*)(size_t);
    struct Rule {
      std::string_view codes;
      Check check;
      size_t count;
      int64_t used_ns = 0;
      bool stopped = false;
    };
    std::vector<Rule> rules = {
        {"dataloader-pin-memory, dataloader-num-workers", &RuleRunner::checkDataLoaderAt, index_.calls.size()},
        {"missing-non-blocking", &RuleRunner::checkNonBlockingAt, index_.calls.size()},
        {"sync-in-loop", &RuleRunner::checkSyncCallAt, index_.calls.size()},
        {"cuda-synchronize-in-loop", &RuleRunner::checkSynchronizeAt, index_.calls.size()},
        {"zero-grad-set-to-none", &RuleRunner::checkZeroGradAt, index_.calls.size()},
        {"cpu-tensor-then-copy", &RuleRunner::checkCpuTensorThenCopyAt, index_.calls.size()},
        {"sync-in-loop", &RuleRunner::checkValueUseAt, index_.value_uses.size()},
    };
    // In batches, each rule timed over a batch: the clock is read a few times per thousand calls.
    constexpr size_t kBatch = 512;
    size_t longest = 0;
    for (const auto& r : rules) longest = std::max(longest, r.count);
    for (size_t begin = 0; begin < longest; begin += kBatch) {
      for (auto& rule : rules) {
        if (rule.stopped || begin >= rule.count) continue;
        size_t end = std::min(rule.count, begin + kBatch);
        int64_t t0 = budget.now ? budget.now() : 0;
        for (size_t i = begin; i < end; ++i) (this->*rule.check)(i);
        if (!budget.now || budget.per_rule_ns <= 0) continue;
        rule.used_ns += budget.now() - t0;
        if (rule.used_ns < budget.per_rule_ns || end == rule.count) continue;
        rule.stopped = true;
        uint32_t at = rule.check == &RuleRunner::checkValueUseAt ? index_.value_uses[end].range.begin
                                                                 : index_.calls[end].range.begin;
        stopped_.push_back({std::string(rule.codes), rule.used_ns, at});
      }
    }
    std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
      if (a.range.begin != b.range.begin) return a.range.begin < b.range.begin;
      if (a.code != b.code) return a.code < b.code;
      return a.range.end < b.range.end;
    });
    return {std::move(findings_), std::move(stopped_)};
  }

 private:
  // The rules, by index: calls on the CPU-only path are skipped (nothing to stall).
  void checkDataLoaderAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkDataLoader(index_.calls[i]);
  }
  void checkNonBlockingAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkNonBlocking(index_.calls[i]);
  }
  void checkSyncCallAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkSyncCall(index_.calls[i]);
  }
  void checkSynchronizeAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkSynchronize(index_.calls[i]);
  }
  void checkZeroGradAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkZeroGrad(index_.calls[i]);
  }
  void checkCpuTensorThenCopyAt(size_t i) {
    if (!index_.calls[i].cpu_only) checkCpuTensorThenCopy(index_.calls[i]);
  }

  void add(std::string_view code, ByteRange range, std::string message, std::vector<Fix> fixes = {}) {
    if (!config_.enabled(code) || isSuppressed(file_, index_, range, code)) return;
    findings_.push_back({std::string(code), config_.severityOf(code), range, std::move(message), std::move(fixes)});
  }

  // What the loop around the code is, for messages: "training loop" or "evaluation loop".
  std::string loopKind(int loop, int function, ByteRange range) const {
    return index_.inEvaluation(loop, function, range) ? "evaluation loop" : "training loop";
  }

  bool inLoop(const CallInfo& call) const { return call.loop >= 0 || index_.inTrainingContext(-1, call.function); }

  void checkDataLoader(const CallInfo& call) {
    if (!isDataLoaderCall(call) || hasSplat(call)) return;
    const auto* pin = keywordArg(call, "pin_memory");
    if (moves_to_gpu_ && (!pin || pin->value_text == "False")) {
      add("dataloader-pin-memory", call.range,
          "DataLoader without pin_memory=True: each batch is copied from pageable memory through "
          "a staging buffer and the copy cannot overlap compute; add pin_memory=True",
          {{"Add pin_memory=True", {setKeywordArgument(file_, call, "pin_memory", "True")}, true}});
    }
    const auto* workers = keywordArg(call, "num_workers");
    if (!workers || workers->value_text == "0") {
      ImportEdit os = ensureImport(file_, index_, "os");
      std::vector<TextEdit> edits = {
          setKeywordArgument(file_, call, "num_workers", "min(8, " + os.name + ".cpu_count() or 1)")};
      if (os.edit) edits.insert(edits.begin(), *os.edit);
      add("dataloader-num-workers", call.range,
          std::string(workers ? "DataLoader with num_workers=0" : "DataLoader without num_workers") +
              ": batches are loaded in the training process while the GPU waits; set num_workers",
          {{"Set num_workers=min(8, os.cpu_count() or 1)", std::move(edits), true}});
    }
  }

  void checkNonBlocking(const CallInfo& call) {
    if (!isDeviceCopy(index_, call) || call.receiver_call >= 0 || !inLoop(call)) return;
    if (index_.kindOf(call.receiver_text, call.function) != ValueKind::Tensor) return;
    if (isTrueLiteral(keywordArg(call, "non_blocking"))) return;
    add("missing-non-blocking", call.range,
        codeSpan(file_, call.range) +
            " copies the batch synchronously: the host waits for the copy "
            "every iteration; add non_blocking=True (with a pin_memory DataLoader) to overlap it",
        {{"Add non_blocking=True", {setKeywordArgument(file_, call, "non_blocking", "True")}, true}});
  }

  void checkSyncCall(const CallInfo& call) {
    static const std::set<std::string> kSyncMethods = {"item", "cpu", "numpy", "tolist"};
    bool method_sync = !call.receiver_text.empty() && kSyncMethods.count(call.method) && call.args.empty();
    bool conversion = call.receiver_text.empty() &&
                      (call.callee_text == "float" || call.callee_text == "int" || call.callee_text == "bool") &&
                      call.args.size() == 1 && call.args[0].keyword.empty();
    if (!method_sync && !conversion) return;
    if (!index_.inTrainingContext(call.loop, call.function)) return;
    if (method_sync) {
      ValueKind receiver = index_.kindOf(call.receiver_text, call.function);
      if (call.receiver_call >= 0) {
        // `.cpu().numpy()`: the `.cpu()` is the sync and is reported itself.
        if (index_.calls[static_cast<size_t>(call.receiver_call)].method == "cpu") return;
        receiver = ValueKind::Tensor;
      }
      bool maybe_tensor = receiver == ValueKind::Tensor ||
                          (receiver == ValueKind::Unknown && (call.method == "item" || call.method == "cpu"));
      if (!maybe_tensor) return;
      std::vector<Fix> fixes;
      bool accumulated = call.method == "item" && call.receiver_call < 0 &&
                         accumulated_.count((static_cast<uint64_t>(call.range.begin) << 32) | call.range.end) > 0;
      if (accumulated) {
        fixes.push_back({"Accumulate on the GPU (" + call.receiver_text + ".detach())",
                         {{call.range, call.receiver_text + ".detach()"}},
                         false});
      }
      add("sync-in-loop", call.range,
          "`." + call.method + "()` waits for the GPU and copies to the host on every iteration of the " +
              loopKind(call.loop, call.function, call.range) +
              "; keep the value on the GPU and read it once after the loop",
          std::move(fixes));
      return;
    }
    const std::string& arg = call.args[0].value_text;
    if (index_.kindOf(arg, call.function) != ValueKind::Tensor) return;
    add("sync-in-loop", call.range,
        "`" + call.callee_text + "(" + arg +
            ")` copies a tensor to the host and waits for the GPU on every iteration of the " +
            loopKind(call.loop, call.function, call.range) + "; keep it on the GPU until after the loop");
  }

  void checkValueUseAt(size_t i) {
    const source::ValueUse& use = index_.value_uses[i];
    if (!index_.inTrainingContext(use.loop, use.function)) return;
    if (index_.kindOf(use.expression, use.function) != ValueKind::Tensor) return;
    std::string what;
    switch (use.kind) {
      case source::ValueUse::Kind::Condition:
        what = "`if " + use.expression + ":` turns a tensor into a Python bool";
        break;
      case source::ValueUse::Kind::FormatField:
        what = "formatting tensor `" + use.expression + "` in an f-string copies it to the host";
        break;
      case source::ValueUse::Kind::PrintArgument:
        what = "`print(" + use.expression + ")` copies a tensor to the host";
        break;
    }
    add("sync-in-loop", use.range,
        what + ", waiting for the GPU on every iteration of the " + loopKind(use.loop, use.function, use.range));
  }

  void checkSynchronize(const CallInfo& call) {
    if (call.resolved != "torch.cuda.synchronize") return;
    if (!index_.inTrainingContext(call.loop, call.function)) return;
    add("cuda-synchronize-in-loop", call.range,
        "torch.cuda.synchronize() in the " + loopKind(call.loop, call.function, call.range) +
            " stalls the host until all queued GPU work finishes, every iteration; remove it (keep it only "
            "around code you time)");
  }

  void checkZeroGrad(const CallInfo& call) {
    if (call.method != "zero_grad" || call.receiver_text.empty()) return;
    for (size_t i = 0; i < call.args.size(); ++i) {
      if (call.args[i].keyword != "set_to_none" || call.args[i].value_text != "False") continue;
      add("zero-grad-set-to-none", call.range,
          "zero_grad(set_to_none=False) launches a memset for every gradient each step; the "
          "default (set_to_none=True) skips it",
          {{"Remove set_to_none=False", {removeArgument(file_, call, i)}, true}});
    }
  }

  void checkCpuTensorThenCopy(const CallInfo& call) {
    static const std::set<std::string> kFactories = {
        "torch.tensor",   "torch.zeros",  "torch.ones",       "torch.randn",    "torch.rand", "torch.arange",
        "torch.empty",    "torch.full",   "torch.randint",    "torch.linspace", "torch.eye",  "torch.as_tensor",
        "torch.randperm", "torch.normal", "torch.zeros_like", "torch.ones_like"};
    if (call.receiver_call < 0 || !isDeviceCopy(index_, call)) return;
    const CallInfo& factory = index_.calls[static_cast<size_t>(call.receiver_call)];
    if (!kFactories.count(factory.resolved) || keywordArg(factory, "device") || hasSplat(factory)) return;
    std::string device;
    bool simple = true;
    if (call.method == "cuda") {
      const auto* idx = firstPositional(call);
      device = idx ? idx->value_text : "\"cuda\"";
      for (const auto& a : call.args) simple = simple && (a.keyword.empty() || a.keyword == "non_blocking");
    } else {
      const auto* d = keywordArg(call, "device");
      if (!d) d = firstPositional(call);
      device = d->value_text;
      for (const auto& a : call.args) simple = simple && (&a == d || a.keyword == "non_blocking");
    }
    std::vector<Fix> fixes;
    if (simple) {
      std::string factory_text = file_.text().substr(factory.range.begin, factory.range.end - factory.range.begin);
      TextEdit add_device = setKeywordArgument(file_, factory, "device", device);
      add_device.range.begin -= factory.range.begin;
      add_device.range.end -= factory.range.begin;
      if (auto rewritten = applyEdits(factory_text, {add_device}))
        fixes.push_back({"Create it on the device (device=" + device + ")", {{call.range, *rewritten}}, true});
    }
    add("cpu-tensor-then-copy", call.range,
        "`" + factory.callee_text + "(...)` builds the tensor on the CPU, then `." + call.method +
            "()` copies it to the GPU; create it there with device=" + device,
        std::move(fixes));
  }

  const SourceFile& file_;
  const SourceIndex& index_;
  const RuleConfig& config_;
  bool moves_to_gpu_ = false;
  std::vector<Finding> findings_;
  std::vector<StoppedRule> stopped_;
  std::unordered_set<uint64_t> accumulated_;  // (begin << 32 | end) of `+=` values
};

// Codes named by a `# sightline: ignore[...]` comment; {"*"} for a bare ignore; {} for none.
std::vector<std::string> ignoredCodes(std::string_view comment) {
  auto at = comment.find("sightline:");
  if (at == std::string_view::npos) return {};
  std::string_view rest = comment.substr(at + 10);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (!startsWith(rest, "ignore")) return {};
  rest.remove_prefix(6);
  if (rest.empty() || rest.front() != '[') return {"*"};
  auto close = rest.find(']');
  std::string_view list = rest.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
  std::vector<std::string> codes;
  std::string current;
  for (char c : list) {
    if (c == ',' || c == ' ') {
      if (!current.empty()) codes.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) codes.push_back(current);
  return codes;
}

}  // namespace

bool isSuppressed(const SourceFile& file, const SourceIndex& index, ByteRange range, std::string_view code) {
  uint32_t first = file.lines().pointAt(range.begin).line;
  uint32_t last = file.lines().pointAt(range.end).line;
  for (const auto& c : index.comments) {
    uint32_t line = file.lines().pointAt(c.begin).line;
    if (line < first || line > last) continue;
    for (const auto& ignored : ignoredCodes(std::string_view(file.text()).substr(c.begin, c.end - c.begin)))
      if (ignored == "*" || ignored == code) return true;
  }
  return false;
}

std::vector<Finding> computeDiagnostics(const SourceFile& file, const SourceIndex& index, const RuleConfig& config) {
  return RuleRunner(file, index, config).run({}).findings;
}

DiagnosticsRun computeDiagnostics(const SourceFile& file, const SourceIndex& index, const RuleConfig& config,
                                  const RuleBudget& budget) {
  return RuleRunner(file, index, config).run(budget);
}

std::optional<Finding> rulesStoppedFinding(const std::vector<StoppedRule>& stopped, const RuleConfig& config) {
  const std::string code = "rules-stopped";
  if (stopped.empty() || !config.enabled(code)) return std::nullopt;
  std::string names;
  uint32_t at = stopped.front().stopped_at;
  int64_t longest = 0;
  for (const auto& s : stopped) {
    names += (names.empty() ? "" : ", ") + s.codes;
    at = std::min(at, s.stopped_at);
    longest = std::max(longest, s.used_ns);
  }
  std::string message = "Checking stopped here: " + names + (stopped.size() == 1 ? " ran" : " each ran") +
                        " past its time budget (" + std::to_string(longest / 1000000) +
                        " ms) on this file, so findings of " + (stopped.size() == 1 ? "that rule" : "those rules") +
                        " below this line are missing; `sightline check` runs them in full";
  return Finding{code, config.severityOf(code), {at, at}, std::move(message), {}};
}

}  // namespace sightline::features
