// Each rule on annotated snippets: what fires, where, and what must not fire.
#include "analysis/features/diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/annotated_source.h"

namespace sightline::features {
namespace {

using testing::Expectation;

// Runs every rule on the snippet and compares (line, columns, code) with its annotations.
void checkDiagnostics(const std::string& annotated, const RuleConfig& config = {}) {
  auto src = testing::parseAnnotatedSource(annotated);
  source::SourceFile file(src.text);
  auto index = source::buildSourceIndex(file);
  std::vector<Expectation> actual;
  for (const auto& f : computeDiagnostics(file, index, config)) {
    auto b = file.lines().pointAt(f.range.begin);
    auto e = file.lines().pointAt(f.range.end);
    actual.push_back({b.line, b.column, b.line == e.line ? e.column : b.column + 1, f.code});
    EXPECT_FALSE(f.message.empty());
  }
  auto expected = src.expected;
  std::sort(actual.begin(), actual.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(actual, expected) << "expected:\n"
                              << testing::describe(expected) << "actual:\n"
                              << testing::describe(actual) << "source:\n"
                              << src.text;
}

TEST(MissingNonBlocking, BatchCopiesInALoop) {
  checkDiagnostics(R"py(
import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds, batch_size=8, num_workers=4, pin_memory=True)
device = torch.device("cuda")
for x, y in loader:
    x = x.to(device)
#       ^^^^^^^^^^^^ missing-non-blocking
    y = y.cuda()
#       ^^^^^^^^ missing-non-blocking
    z = x.to(device, non_blocking=True)
    w = x.to(torch.float16)
    loss = model(x).sum()
    loss.backward()
)py");
}

TEST(MissingNonBlocking, NotForModelsOrOutsideLoops) {
  checkDiagnostics(R"py(
import torch
model = Net().to("cuda")
batch = torch.randn(4, 3)
batch = batch.to("cuda")
for step in range(10):
    model.to("cuda")
    net = model.cuda()
)py");
}

TEST(MissingNonBlocking, InAFunctionTheTrainingLoopCalls) {
  checkDiagnostics(R"py(
import torch
def step(model, opt, batch, device):
    x = batch.to(device)
#       ^^^^^^^^^^^^^^^^ missing-non-blocking
    model(x).sum().backward()
    opt.step()
def main(loader, model, opt):
    for batch in loader:
        step(model, opt, batch, "cuda")
)py");
}

// nanoGPT's get_batch: the `else:` of a CUDA test runs only on CPU, where nothing stalls a GPU.
TEST(MissingNonBlocking, NotInBranchesThatRunOnlyWithoutCuda) {
  checkDiagnostics(R"py(
import torch
def get_batch(split, device, device_type):
    x = torch.randint(10, (4, 8))
    y = torch.randint(10, (4, 8))
    if device_type == 'cuda':
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    if not torch.cuda.is_available():
        x = x.to(device)
    elif device.type == "cuda":
        y = y.to(device)
#           ^^^^^^^^^^^^ missing-non-blocking
    if torch.cuda.is_available():
        y = y.to(device)
#           ^^^^^^^^^^^^ missing-non-blocking
    elif use_mps:
        y = y.to(device)
    return x, y
def main(model, opt):
    for it in range(100):
        x, y = get_batch('train', 'cuda', 'cuda')
        model(x, y).backward()
        opt.step()
)py");
}

// The sync-in-loop findings' messages for a script, in order.
std::vector<std::string> syncInLoopMessages(const std::string& text) {
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  std::vector<std::string> messages;
  for (const auto& f : computeDiagnostics(file, index, {}))
    if (f.code == "sync-in-loop") messages.push_back(f.message);
  return messages;
}

// Messages name the loop: nanoGPT's estimate_loss runs an evaluation loop under no_grad.
TEST(SyncInLoop, MessagesNameTheEvaluationLoop) {
  std::string text = R"py(
import torch
@torch.no_grad()
def estimate_loss(model):
    model.eval()
    losses = torch.zeros(10)
    for k in range(10):
        logits, loss = model(x, y)
        losses[k] = loss.item()
    model.train()
    return losses.mean()
def main(model, opt):
    for it in range(100):
        if it % 10 == 0:
            print(estimate_loss(model))
        loss = model(x, y)
        loss.backward()
        opt.step()
        print(loss.item())
)py";
  auto messages = syncInLoopMessages(text);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_NE(messages[0].find("evaluation loop"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("training loop"), std::string::npos) << messages[1];
}

// The ImageNet example's validation: a loop over a DataLoader (which makes a loop count as
// training) that runs no backward or step, under no_grad in a nested function. Its `.item()`
// was called "the training loop"; the training loop's own is still called that.
TEST(SyncInLoop, AValidationLoaderLoopUnderNoGradIsAnEvaluationLoop) {
  std::string text = R"py(
import torch
def train(loader, model, criterion, optimizer):
    for images, target in loader:
        loss = criterion(model(images.cuda()), target.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(loss.item())
def validate(val_loader, model, criterion):
    def run_validate(loader):
        with torch.no_grad():
            for i, (images, target) in enumerate(loader):
                loss = criterion(model(images.cuda()), target.cuda())
                losses.append(loss.item())
    losses = []
    model.eval()
    run_validate(val_loader)
def train_and_evaluate(loader, model, criterion):
    for images, target in loader:
        print(criterion(model(images.cuda()), target.cuda()).item())
def main(model, criterion, optimizer, train_loader, val_loader):
    for epoch in range(90):
        train(train_loader, model, criterion, optimizer)
        validate(val_loader, model, criterion)
)py";
  auto messages = syncInLoopMessages(text);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_NE(messages[0].find("training loop"), std::string::npos) << messages[0];
  EXPECT_NE(messages[1].find("evaluation loop"), std::string::npos) << messages[1];
  // A loader loop with no training call, outside no_grad: its function's name is not enough.
  EXPECT_NE(messages[2].find("training loop"), std::string::npos) << messages[2];
}

TEST(SyncInLoop, HostReadsInATrainingLoop) {
  checkDiagnostics(R"py(
import torch
for x, y in train_loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    opt.step()
    total += loss.item()
#            ^^^^^^^^^^^ sync-in-loop
    preds = out.argmax(1).cpu()
#           ^^^^^^^^^^^^^^^^^^^ sync-in-loop
    arr = out.detach().cpu().numpy()
#         ^^^^^^^^^^^^^^^^^^ sync-in-loop
    v = float(loss)
#       ^^^^^^^^^^^ sync-in-loop
    print(loss)
#         ^^^^ sync-in-loop
    print(f"loss {loss:.3f}")
#                 ^^^^ sync-in-loop
    if loss:
#      ^^^^ sync-in-loop
        pass
    n = len(y)
    print(f"step {n}")
)py");
}

TEST(SyncInLoop, NotOutsideTrainingLoops) {
  checkDiagnostics(R"py(
import torch
for x, y in train_loader:
    loss = model(x).sum()
    loss.backward()
    opt.step()
final = loss.item()
print(loss)
for name, p in model.named_parameters():
    print(p.norm().item())
)py");
}

TEST(SyncInLoop, ThroughAFunctionCalledFromTheLoopAndSuppression) {
  checkDiagnostics(R"py(
def log(loss):
    return loss.item()
#          ^^^^^^^^^^^ sync-in-loop
def train(model, opt, loader):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        log(loss)
        a = loss.item()  # sightline: ignore[sync-in-loop]
        b = loss.cpu()  # sightline: ignore
        c = loss.item()  # sightline: ignore[missing-non-blocking]
#           ^^^^^^^^^^^ sync-in-loop
)py");
}

TEST(CudaSynchronizeInLoop, OnlyInTrainingLoops) {
  checkDiagnostics(R"py(
import torch
for step in range(100):
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
#   ^^^^^^^^^^^^^^^^^^^^^^^^ cuda-synchronize-in-loop
torch.cuda.synchronize()
for i in range(3):
    torch.cuda.synchronize()
)py");
}

TEST(DataLoaderRules, PinMemoryAndWorkers) {
  checkDiagnostics(R"py(
import torch
from torch.utils.data import DataLoader as DL
a = DL(ds, batch_size=32)
#   ^^^^^^^^^^^^^^^^^^^^^ dataloader-num-workers
#   ^^^^^^^^^^^^^^^^^^^^^ dataloader-pin-memory
b = DL(ds, num_workers=0, pin_memory=False)
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ dataloader-num-workers
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ dataloader-pin-memory
c = DL(ds, num_workers=4, pin_memory=True)
d = DL(ds, **loader_kwargs)
for x in a:
    x = x.cuda(non_blocking=True)
)py");
}

TEST(DataLoaderRules, NoPinMemoryWarningWhenNothingGoesToTheGpu) {
  checkDiagnostics(R"py(
from torch.utils.data import DataLoader
loader = DataLoader(ds, num_workers=2)
for x in loader:
    print(len(x))
)py");
}

TEST(ZeroGradSetToNone, OnlyTheExplicitFalse) {
  checkDiagnostics(R"py(
if True:
    opt.zero_grad(set_to_none=False)
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ zero-grad-set-to-none
    opt.zero_grad(set_to_none=True)
    opt.zero_grad()
    model.zero_grad(set_to_none=False)
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ zero-grad-set-to-none
)py");
}

TEST(CpuTensorThenCopy, FactoryThenCopy) {
  checkDiagnostics(R"py(
import torch
a = torch.zeros(3, 4).cuda()
#   ^^^^^^^^^^^^^^^^^^^^^^^^ cpu-tensor-then-copy
b = torch.tensor([1, 2]).to(device)
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ cpu-tensor-then-copy
c = torch.zeros(3, device="cuda")
d = torch.ones(2).to(torch.float16)
e = numpy.zeros(3).cuda()
)py");
}

TEST(Config, DisabledRulesAndSeverities) {
  RuleConfig config;
  config.rules["sync-in-loop"].enabled = false;
  checkDiagnostics(R"py(
for x in loader:
    loss = model(x).sum()
    loss.backward()
    total += loss.item()
)py",
                   config);
  config.rules["sync-in-loop"] = {true, Severity::Error};
  source::SourceFile file("for x in loader:\n    loss.backward()\n    v = loss.item()\n");
  auto index = source::buildSourceIndex(file);
  auto findings = computeDiagnostics(file, index, config);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, Severity::Error);
}

TEST(Diagnostics, SyntaxErrorsDoNotCrashAndStillReportWhatParses) {
  checkDiagnostics(R"py(
import torch
for x in loader:
    loss = model(x).sum()
    loss.backward()
    total += loss.item()
#            ^^^^^^^^^^^ sync-in-loop
def broken(:
    x = = 3
)py");
}

// A file of many `.item()` calls in a loop, `count` of them.
std::string manySyncs(int count) {
  std::string text = "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n";
  for (int i = 0; i < count; ++i) text += "    a" + std::to_string(i) + " = loss.item()\n";
  return text;
}

TEST(RuleBudget, ARuleThatRunsPastItsBudgetStopsWhereItIs) {
  // A clock that moves 1 ms per read: each batch of calls a rule checks costs it 1 ms.
  std::string text = manySyncs(5000);
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  int64_t ticks = 0;
  RuleBudget budget{3'000'000, [&] { return ++ticks * 1'000'000; }};
  auto run = computeDiagnostics(file, index, {}, budget);
  auto full = computeDiagnostics(file, index, {});
  ASSERT_EQ(full.size(), 5000u);
  // Every rule stopped after 3 batches of 512 calls: the first 1,536 calls were checked, three
  // of them (`model(x)`, `.sum()`, `.backward()`) not syncs.
  ASSERT_EQ(run.findings.size(), 3u * 512 - 3);
  EXPECT_TRUE(std::equal(run.findings.begin(), run.findings.end(), full.begin(),
                         [](const Finding& a, const Finding& b) { return a.range.begin == b.range.begin; }));
  auto stopped_sync = std::find_if(run.stopped.begin(), run.stopped.end(),
                                   [](const StoppedRule& s) { return s.codes == "sync-in-loop"; });
  ASSERT_NE(stopped_sync, run.stopped.end());
  EXPECT_EQ(stopped_sync->used_ns, 3'000'000);
  EXPECT_EQ(stopped_sync->stopped_at, full[3 * 512 - 3].range.begin);  // the first call not checked
  auto finding = rulesStoppedFinding(run.stopped, {});
  ASSERT_TRUE(finding);
  EXPECT_EQ(finding->code, "rules-stopped");
  EXPECT_EQ(finding->severity, Severity::Information);
  EXPECT_EQ(finding->range.begin, stopped_sync->stopped_at);
  EXPECT_NE(finding->message.find("sync-in-loop"), std::string::npos) << finding->message;
  EXPECT_NE(finding->message.find("3 ms"), std::string::npos) << finding->message;
  RuleConfig off;
  off.rules["rules-stopped"] = {false, std::nullopt};
  EXPECT_FALSE(rulesStoppedFinding(run.stopped, off));
}

TEST(RuleBudget, WithinItsBudgetOrWithoutOneEveryFindingIsThere) {
  std::string text = manySyncs(3000);
  source::SourceFile file(text);
  auto index = source::buildSourceIndex(file);
  int64_t ticks = 0;
  auto run = computeDiagnostics(file, index, {}, {1'000'000'000, [&] { return ++ticks; }});
  EXPECT_TRUE(run.stopped.empty());
  EXPECT_EQ(run.findings.size(), 3000u);
  EXPECT_FALSE(rulesStoppedFinding(run.stopped, {}));
  auto unlimited = computeDiagnostics(file, index, {}, {});
  EXPECT_EQ(unlimited.findings.size(), 3000u);
  EXPECT_TRUE(unlimited.stopped.empty());
}

}  // namespace
}  // namespace sightline::features
