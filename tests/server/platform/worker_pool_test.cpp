// The server's worker pool: every task runs exactly once, from several callers at once, and
// with no workers at all (the caller does everything).
#include "server/platform/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace sightline::server {
namespace {

void expectEachOnce(WorkerPool& pool, size_t count) {
  std::vector<std::atomic<int>> runs(count);
  pool.runAll(count, [&](size_t i) { runs[i]++; });
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(runs[i].load(), 1) << i << " of " << count;
}

TEST(WorkerPool, RunsEveryTaskOnce) {
  WorkerPool pool(3);
  for (size_t count : {0u, 1u, 2u, 7u, 1000u}) expectEachOnce(pool, count);
}

TEST(WorkerPool, WithoutWorkersTheCallerRunsAll) {
  WorkerPool pool(0);
  EXPECT_EQ(pool.workerCount(), 0u);
  expectEachOnce(pool, 50);
}

TEST(WorkerPool, SeveralCallersAtOnce) {
  WorkerPool pool(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) expectEachOnce(pool, 17);
    });
  for (auto& t : callers) t.join();
}

TEST(WorkerPool, UsesItsWorkers) {
  WorkerPool pool(2);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  pool.runAll(64, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GT(seen.size(), 1u);
}

}  // namespace
}  // namespace sightline::server
