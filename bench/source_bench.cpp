// Source-model benchmarks on a scaled-real training script: our profiled train_small.py
// repeated (definitions renamed per copy) to at least 10,000 lines.
//   full parse + index; incremental reparse after a one-line edit; the edit -> diagnostics
//   path the server runs on didChange (reparse, re-index, all rules); diagnostics alone.
// Targets on the 2-core machine: parse+index <= 60 ms, edit -> diagnostics <= 20 ms.
#include <benchmark/benchmark.h>

#include "analysis/features/diagnostics.h"
#include "bench/scaled_script.h"
#include "server/platform/worker_pool.h"

namespace {

using namespace sightline;

const std::string& script() {
  static const std::string text = bench::scaledTrainScript(10000);
  return text;
}

void BM_ParseOnly(benchmark::State& state) {
  for (auto _ : state) {
    source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
    benchmark::DoNotOptimize(file.text().size());
  }
}
BENCHMARK(BM_ParseOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same text as one tree, on one core (what the chunked parse is measured against).
void BM_ParseWholeOneTree(benchmark::State& state) {
  for (auto _ : state) {
    source::SourceFile file(script(), /*chunked=*/false);
    benchmark::DoNotOptimize(file.text().size());
  }
}
BENCHMARK(BM_ParseWholeOneTree)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_IndexOnly(benchmark::State& state) {
  source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
  for (auto _ : state) benchmark::DoNotOptimize(source::buildSourceIndex(file).calls.size());
}
BENCHMARK(BM_IndexOnly)->Unit(benchmark::kMillisecond);

void BM_ParseAndIndex(benchmark::State& state) {
  for (auto _ : state) {
    source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
    auto index = source::buildSourceIndex(file);
    benchmark::DoNotOptimize(index.calls.size());
  }
  state.counters["lines"] = static_cast<double>(std::count(script().begin(), script().end(), '\n'));
}
BENCHMARK(BM_ParseAndIndex)->Unit(benchmark::kMillisecond)->UseRealTime();

// Types one character into a line in the middle of the file, then deletes it again.
struct MidFileEdit {
  explicit MidFileEdit(const std::string& text) {
    offset = static_cast<uint32_t>(text.find("loss = train_step", text.size() / 2));
  }
  uint32_t offset;
  bool inserted = false;
  void apply(source::SourceFile& file) {
    if (inserted)
      file.applyEdit(offset, offset + 1, "");
    else
      file.applyEdit(offset, offset, "l");
    inserted = !inserted;
  }
};

void BM_IncrementalReparse(benchmark::State& state) {
  source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
  MidFileEdit edit(script());
  for (auto _ : state) edit.apply(file);
}
BENCHMARK(BM_IncrementalReparse)->Unit(benchmark::kMillisecond);

void BM_EditToDiagnostics(benchmark::State& state) {
  source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
  MidFileEdit edit(script());
  features::RuleConfig config;
  size_t findings = 0;
  auto previous = source::buildSourceIndex(file);
  for (auto _ : state) {
    edit.apply(file);
    auto index = source::buildSourceIndex(file, std::move(previous));  // as the server does
    findings = features::computeDiagnostics(file, index, config).size();
    benchmark::DoNotOptimize(findings);
    previous = std::move(index);
  }
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_EditToDiagnostics)->Unit(benchmark::kMillisecond);

void BM_DiagnosticsOnly(benchmark::State& state) {
  source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
  auto index = source::buildSourceIndex(file);
  features::RuleConfig config;
  for (auto _ : state) benchmark::DoNotOptimize(features::computeDiagnostics(file, index, config).size());
}
BENCHMARK(BM_DiagnosticsOnly)->Unit(benchmark::kMillisecond);

}  // namespace

// What copying a 10k-line index costs (the incremental build copies most entries).
void BM_IndexCopy(benchmark::State& state) {
  source::SourceFile file(script(), /*chunked=*/true, &server::WorkerPool::shared());
  auto index = source::buildSourceIndex(file);
  for (auto _ : state) {
    source::SourceIndex copy = index;
    benchmark::DoNotOptimize(copy.calls.size());
  }
}
BENCHMARK(BM_IndexCopy)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
